"""Plots of a fitted CRFClassifier (matplotlib, an optional dependency).

Every function draws on the ``ax`` it is given, or on a new figure's axes when
``ax`` is None, and returns the axes, so plots compose into subplots::

    fig, (left, right) = plt.subplots(1, 2)
    plot_transition_weights(crf, ax=left)
    plot_loss_curve(crf, ax=right)

matplotlib is imported only when a function is called; install it with
``pip install skcrf[plot]``.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._utils.docstrings import fill_sections
from .inspection import state_features

__all__ = ["plot_loss_curve", "plot_reliability", "plot_top_features", "plot_transition_weights"]


# What the plots' docstrings share (their ``<<name>>`` lines)
_shared_docs = fill_sections({
    "fitted_model": """\
    crf : CRFClassifier
        A fitted model.
""",
    "axes": """\
    ax : matplotlib Axes, default=None
        Axes to draw on; None creates a new figure.
""",
    "returns_axes": """\
    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on.
""",
})


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "skcrf's plots need matplotlib, which is not installed. Install it with "
            "`pip install skcrf[plot]` (or `pip install matplotlib`).") from exc
    return plt


def _axes(ax):
    """The given axes, or new ones; importing pyplot either way checks matplotlib."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(layout="constrained")  # room for the axis labels
    return ax


@_shared_docs
def plot_transition_weights(crf, ax=None, *, cmap="RdBu_r", annotate=None):
    """Heatmap of the transition weights, from-label rows by to-label columns.

    The colour scale is symmetric around 0, so colour saturation reads as
    strength and hue as sign. Forbidden transitions (``-inf``) are grey.

    Parameters
    ----------
    <<fitted_model>>
    <<axes>>
    cmap : str or Colormap, default="RdBu_r"
        Diverging colormap: blue negative, red positive.
    annotate : bool, default=None
        Write each weight in its cell. None does so for at most 10 labels.

    <<returns_axes>>
    """
    check_is_fitted(crf, ["transition_coef_", "classes_"])
    ax = _axes(ax)
    import matplotlib

    weights = np.asarray(crf.transition_coef_, dtype=float)
    labels = [str(label) for label in crf.classes_.tolist()]
    finite = np.isfinite(weights)
    # Symmetric limits; 1.0 keeps an all-zero (or all-forbidden) matrix drawable.
    limit = float(np.max(np.abs(weights[finite]), initial=0.0)) or 1.0
    colormap = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
    image = ax.imshow(np.ma.masked_invalid(weights), cmap=colormap.with_extremes(bad="0.75"),
                      vmin=-limit, vmax=limit)
    ax.figure.colorbar(image, ax=ax, label="weight")
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("to label")
    ax.set_ylabel("from label")
    ax.set_title("Transition weights")
    if annotate is None:
        annotate = len(labels) <= 10
    if annotate:
        for (i, j), value in np.ndenumerate(weights):
            text = f"{value:.2f}" if np.isfinite(value) else "-inf"
            # White text on saturated cells, black on pale ones.
            strong = np.isfinite(value) and abs(value) > 0.6 * limit
            ax.text(j, i, text, ha="center", va="center", fontsize="small",
                    color="white" if strong else "black")
    return ax


@_shared_docs
def plot_top_features(crf, label, top=10, ax=None):
    """Horizontal bars of the features with the largest weights for one label.

    Parameters
    ----------
    <<fitted_model>>
    label : str or int
        One of ``crf.classes_``.
    top : int, default=10
        Number of features shown, by decreasing absolute weight, the strongest
        at the top. Zero weights are never shown.
    <<axes>>

    <<returns_axes>>
    """
    rows = state_features(crf, top=top, classes=[label])
    ax = _axes(ax)
    weights = np.array([row.weight for row in rows])
    positions = np.arange(len(rows))[::-1]  # strongest on top
    ax.barh(positions, weights, color=np.where(weights >= 0, "tab:red", "tab:blue"))
    ax.set_yticks(positions, [row.feature for row in rows])
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel("weight")
    ax.set_title(f"Top features for {label!s}")
    return ax


@_shared_docs
def plot_loss_curve(crf, ax=None):
    """The training objective after each solver iteration (``loss_curve_``).

    Parameters
    ----------
    <<fitted_model>>
    <<axes>>

    <<returns_axes>>
    """
    check_is_fitted(crf, ["loss_curve_"])
    ax = _axes(ax)
    loss = np.asarray(crf.loss_curve_, dtype=float)
    from matplotlib.ticker import MaxNLocator

    ax.plot(np.arange(1, loss.shape[0] + 1), loss, marker="." if loss.shape[0] <= 50 else None)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective")
    ax.set_title("Training objective")
    return ax


def plot_reliability(correct, confidence, ax=None, *, n_bins=10, label=None):
    """Reliability diagram: accuracy against confidence, with the diagonal of calibration.

    Parameters
    ----------
    correct : array-like of bool of shape (n_predictions,)
    confidence : array-like of float of shape (n_predictions,)
        As :func:`skcrf.metrics.token_confidences` or
        :func:`skcrf.metrics.span_confidences` return them.
    ax : matplotlib Axes, default=None
        Axes to draw on (new ones if None); draw twice on one to compare
        models (say, before and after :class:`skcrf.CalibratedCRF`).
    n_bins : int, default=10
        Equal-width confidence bins (see :func:`skcrf.metrics.reliability_curve`).
    label : str, default=None
        Legend label of the curve; its expected calibration error is added.

    Returns
    -------
    ax : matplotlib Axes
    """
    from .metrics import expected_calibration_error, reliability_curve

    curve = reliability_curve(correct, confidence, n_bins=n_bins)
    ece = expected_calibration_error(correct, confidence, n_bins=n_bins)
    ax = _axes(ax)
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
    text = f"ECE {ece:.3f}" if label is None else f"{label} (ECE {ece:.3f})"
    ax.plot(curve.confidence, curve.accuracy, marker="o", label=text)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("fraction right")
    ax.legend(loc="upper left")
    return ax
