"""Checks of an online solver's ``solver_state_``, from a model file or before partial_fit.

The kernels index the state's arrays by the stored pairs without bounds
checks; these checks tie every array to the solver that made it, to the
model's features and labels, and to the parameters that sized it.
"""

import numpy as np

from ..learning._online_kernels import AVERAGE_WEIGHT, L1_TOTAL, N_COUNTERS, SCALE, STEPS
from ..learning.online import SOLVERS, OnlineState
from ..structures.patterns.label_patterns import LabelPatterns

#: Solvers that average their weights when ``average="auto"`` (as CRFsuite's ap and pa).
AVERAGED_BY_DEFAULT = ("perceptron", "passive_aggressive")


def checked_solver_state(estimator, attribute, parameters=True):
    """Raise a ValueError naming the entry if ``solver_state_`` (maybe from a file) is unusable.

    The kernels index the weights by the stored pairs without bounds
    checks: every shape, index range and order they rely on is checked here,
    each array against the solver and (with ``parameters``) against the
    estimator's parameters (:func:`state_parameter_mismatch`).
    """
    def bad(what):
        return ValueError(f"solver_state_ is damaged or from another model: {what}. Fit the "
                          f"model anew (or load an undamaged file).")

    if not isinstance(attribute, dict) or attribute.get("solver") not in SOLVERS:
        raise bad("it is not a dict naming an online solver")
    arrays = {}
    for name in OnlineState.ARRAYS:
        value = np.asarray(attribute.get(name))
        if value.ndim != 1 or value.dtype.kind != "f" or not np.isfinite(value).all():
            raise bad(f"{name!r} is not a finite 1-D float array")
        arrays[name] = value
    n = arrays["w"].shape[0]
    solver = attribute["solver"]
    counters = arrays["counters"]
    if counters.shape[0] != N_COUNTERS or not counters[SCALE] > 0:
        raise bad(f"'counters' must hold {N_COUNTERS} values, the first (the scale) > 0")
    if (counters[[STEPS, L1_TOTAL, AVERAGE_WEIGHT]] < 0).any():
        raise bad("'counters' must hold a step count, an L1 total and an averages' weight "
                  ">= 0")
    # each array the kernels index by weight has one value per weight exactly when the
    # solver uses it: an empty one would be read out of bounds
    sizes = {"l1_applied": (0, n) if solver == "sgd" else (0,),
             "covariance": (n,) if solver == "arow" else (0,), "average_sum": (0, n)}
    average = attribute.get("average")  # absent from files of skcrf 0.1
    if average is not None:
        if not isinstance(average, (int, np.integer)) or average < 0:
            raise bad("'average' must be the first averaged step (an int >= 0)")
        sizes["average_sum"] = (n,) if average else (0,)
    for name, allowed in sizes.items():
        if arrays[name].shape[0] not in allowed:
            raise bad(f"{name!r} has {arrays[name].shape[0]} values for {n} weights of "
                      f"solver {solver!r}")
    if not (arrays["covariance"] > 0).all():
        raise bad("'covariance' must be positive")
    if "eta0" not in attribute:
        raise bad("it lacks 'eta0'")
    eta0 = attribute.get("eta0")
    if eta0 is not None and not (isinstance(eta0, (int, float)) and np.isfinite(eta0)
                                 and eta0 > 0):
        raise bad("'eta0' must be None or a finite number > 0")
    rows = attribute.get("label_patterns")
    if rows is not None:
        _check_pattern_rows(rows, estimator, bad)
    mismatch = state_parameter_mismatch(estimator, attribute) if parameters else None
    if mismatch:
        raise bad(f"its arrays do not follow the parameters ({mismatch})")
    n_dense = attribute.get("n_dense", 0)  # a dense block's columns, not in the pairs
    n_features = estimator.feature_names_.shape[0]
    if not isinstance(n_dense, (int, np.integer)) or not 0 <= n_dense <= n_features:
        raise bad(f"'n_dense' must be the dense block's width (an int in 0..{n_features})")
    n_features -= n_dense
    pairs = attribute.get("pairs")
    if not isinstance(pairs, dict) or not pairs:
        raise bad("'pairs' must map block names to their (feature, label) pairs")
    for name, block in pairs.items():
        try:
            ptr = np.asarray(block["feature_ptr"])
            labels = np.asarray(block["labels"])
            n_labels = int(block["n_labels"])
        except (TypeError, KeyError, ValueError):
            raise bad(f"pairs[{name!r}] lacks feature_ptr, labels or n_labels") from None
        if (ptr.ndim != 1 or labels.ndim != 1 or ptr.dtype.kind not in "iu"
                or labels.dtype.kind not in "iu" or n_labels < 1
                or ptr.shape[0] != n_features + 1 or ptr[0] != 0
                or ptr[-1] != labels.shape[0] or (np.diff(ptr) < 0).any()):
            raise bad(f"pairs[{name!r}] is not a pattern over the model's "
                      f"{n_features} features" + (" beside its dense block" if n_dense else ""))
        if labels.shape[0] and (labels.min() < 0 or labels.max() >= n_labels):
            raise bad(f"pairs[{name!r}] has labels outside 0..{n_labels - 1}")
        # labels increase within each feature: codes sorted, full rows in label order
        rising = np.diff(labels.astype(np.int64)) > 0
        starts = ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < labels.shape[0])]
        rising[starts - 1] = True
        if not rising.all():
            raise bad(f"pairs[{name!r}] has labels out of order within a feature")


def _check_pattern_rows(rows, estimator, bad):
    """``solver_state_["label_patterns"]``: patterns of the model's order, in weight order."""
    order = getattr(estimator, "order", 1)
    try:
        rows = np.asarray(rows)
        patterns, index = LabelPatterns.from_rows(rows, estimator.classes_.shape[0], order)
    except (TypeError, ValueError) as error:
        raise bad(f"'label_patterns' are not label patterns of the model ({error})") from None
    if not np.array_equal(index, np.arange(rows.shape[0])):
        raise bad("'label_patterns' are not in the order of the weights")


def _averaged_from(estimator):
    """The first averaged step the parameters ask for (0: none), as :func:`online_options`."""
    average = estimator.average
    if isinstance(average, str):  # "auto"
        average = estimator.solver in AVERAGED_BY_DEFAULT
    return int(average)


def state_parameter_mismatch(estimator, attribute):
    """What of a (checked) ``solver_state_`` the parameters contradict, or None.

    The arrays of ``solver_state_`` were sized and started for the parameters
    of the first call: an L1 penalty's record of what each weight received,
    the averages summed since their first step. Neither can be made up
    afterwards (the past weights are gone), so another setting is refused,
    not silently ignored (nor read out of bounds by the kernels).
    """
    n = np.asarray(attribute["w"]).shape[0]
    l1_now = (attribute["solver"] == "sgd" and estimator.alpha * estimator.l1_ratio > 0)
    l1_then = np.asarray(attribute["l1_applied"]).shape[0] == n and n > 0
    if l1_now != l1_then:
        return (f"partial_fit cannot {'add' if l1_now else 'drop'} the L1 penalty: the "
                f"solver state was made with alpha * l1_ratio {'= 0' if l1_now else '> 0'} "
                f"at the first call, and it records the L1 penalty each weight received "
                f"only if there was one. Set l1_ratio (or alpha) back, or fit anew.")
    now = _averaged_from(estimator)
    then = attribute.get("average")
    if then is None:  # a state of skcrf 0.1: the averages' presence only
        then = now if np.asarray(attribute["average_sum"]).shape[0] else 0
    if int(then) != now:
        def said(step):
            return "no averaging" if not step else f"averaging from step {step}"
        return (f"partial_fit cannot change average: the solver state holds {said(then)} "
                f"since the first call, and the averages of the steps already taken cannot "
                f"be made up ({said(now)} now asked). Set average back, or fit anew.")
    return None
