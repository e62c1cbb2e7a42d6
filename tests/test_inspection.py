"""Weight tables and plots of a fitted CRFClassifier."""

import copy
import sys

import matplotlib
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skcrf import CRFClassifier
from skcrf.inspection import (
    StateFeature,
    Transition,
    format_table,
    state_features,
    transition_features,
)
from skcrf.plotting import plot_loss_curve, plot_top_features, plot_transition_weights

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

X = [
    [{"w": "the"}, {"w": "cat"}, {"w": "sat"}],
    [{"w": "a"}, {"w": "dog"}, {"w": "ran"}],
    [{"w": "john"}, {"w": "ran"}],
    [{"w": "the"}, {"w": "dog"}, {"w": "sat"}],
    [{"w": "mary"}, {"w": "sat"}],
]
Y = [["DET", "N", "V"], ["DET", "N", "V"], ["N", "V"], ["DET", "N", "V"], ["N", "V"]]


@pytest.fixture(scope="module")
def crf():
    return CRFClassifier(alpha=0.1).fit(X, Y)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _coef(crf, row):
    """coef_ entry a StateFeature row refers to."""
    k = crf.classes_.tolist().index(row.label)
    j = crf.feature_names_.tolist().index(row.feature)
    return crf.coef_[k, j]


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def test_state_features_are_the_largest_weights_of_each_class(crf):
    rows = state_features(crf, top=3)
    assert all(isinstance(row, StateFeature) for row in rows)
    # Grouped by class in classes_ order. The model only weighs features seen
    # with a label (the rest are exactly 0 and not listed): DET has two.
    assert [row.label for row in rows] == ["DET"] * 2 + ["N"] * 3 + ["V"] * 2
    for k, label in enumerate(crf.classes_):
        mine = [row for row in rows if row.label == label]
        for row in mine:
            assert row.weight == _coef(crf, row)
        # The largest |weights| of the row, in decreasing order.
        expected = np.sort(np.abs(crf.coef_[k]))[::-1][:len(mine)]
        np.testing.assert_allclose([abs(row.weight) for row in mine], expected)


def test_state_features_readable_on_a_known_model(crf):
    # Each word has one label in the data, so its weight for that label is
    # positive, and the verbs' words are V's two strongest features.
    weights = {(row.feature, row.label): row.weight for row in state_features(crf, top=None)}
    for word, label in [("the", "DET"), ("a", "DET"), ("cat", "N"), ("mary", "N"),
                        ("sat", "V"), ("ran", "V")]:
        assert weights[f"w={word}", label] > 0
    top_verbs = state_features(crf, top=2, classes=["V"])
    assert {row.feature for row in top_verbs} == {"w=sat", "w=ran"}


def test_state_features_classes_select_and_order(crf):
    rows = state_features(crf, top=2, classes=["V", "DET"])
    assert [row.label for row in rows] == ["V", "V", "DET", "DET"]


def test_state_features_skip_zero_weights(crf):
    n_nonzero = np.count_nonzero(crf.coef_)
    assert n_nonzero < crf.coef_.size  # features never seen with a label weigh 0
    rows = state_features(crf, top=None)
    assert len(rows) == n_nonzero
    assert all(row.weight != 0.0 for row in rows)


def test_state_features_bad_arguments(crf):
    with pytest.raises(ValueError, match=r"Unknown label\(s\) \['ADJ'\]"):
        state_features(crf, classes=["ADJ"])
    with pytest.raises(TypeError, match="Wrap a single label in a list"):
        state_features(crf, classes="N")
    with pytest.raises(ValueError, match="top must be a positive integer"):
        state_features(crf, top=0)


def test_tables_need_a_fitted_model():
    with pytest.raises(NotFittedError):
        state_features(CRFClassifier())
    with pytest.raises(NotFittedError):
        transition_features(CRFClassifier())


def test_transition_features_cover_the_matrix_by_strength(crf):
    rows = transition_features(crf)
    assert all(isinstance(row, Transition) for row in rows)
    labels = crf.classes_.tolist()
    assert len(rows) == len(labels) ** 2
    assert {(row.from_label, row.to_label) for row in rows} == {
        (a, b) for a in labels for b in labels}
    for row in rows:
        assert row.weight == crf.transition_coef_[labels.index(row.from_label),
                                                  labels.index(row.to_label)]
    strengths = [abs(row.weight) for row in rows]
    assert strengths == sorted(strengths, reverse=True)
    # Every sentence here goes DET -> N -> V: those transitions are the strongest
    # positive ones.
    positive = [(row.from_label, row.to_label) for row in rows if row.weight > 0]
    assert set(positive[:2]) == {("DET", "N"), ("N", "V")}
    assert transition_features(crf, top=2) == rows[:2]


def test_forbidden_transition_is_listed_first(crf):
    constrained = copy.deepcopy(crf)
    constrained.transition_coef_[2, 0] = -np.inf  # V -> DET never
    first = transition_features(constrained)[0]
    assert (first.from_label, first.to_label, first.weight) == ("V", "DET", -np.inf)


def test_format_table_aligns_columns():
    rows = [StateFeature("w=cat", "N", 1.25), StateFeature("suffix=s", "N", -0.5)]
    assert format_table(rows, digits=2) == (
        "feature   label  weight\n"
        "w=cat     N       +1.25\n"
        "suffix=s  N       -0.50")
    assert format_table([]) == ""


def test_format_table_of_a_model(crf):
    text = format_table(transition_features(crf))
    lines = text.splitlines()
    assert lines[0].split() == ["from_label", "to_label", "weight"]
    assert len(lines) == 1 + len(crf.classes_) ** 2


# --------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------


def _saved(ax, path):
    ax.figure.savefig(path)
    return path.exists() and path.stat().st_size > 0


def test_plot_transition_weights(crf, tmp_path):
    fig, ax = plt.subplots()
    assert plot_transition_weights(crf, ax=ax) is ax
    np.testing.assert_array_equal(ax.images[0].get_array(), crf.transition_coef_)
    labels = crf.classes_.tolist()
    assert [t.get_text() for t in ax.get_xticklabels()] == labels
    assert [t.get_text() for t in ax.get_yticklabels()] == labels
    # Small matrices are annotated, one text per cell.
    assert len(ax.texts) == len(labels) ** 2
    assert _saved(ax, tmp_path / "transitions.png")


def test_plot_transition_weights_with_forbidden_transition(crf, tmp_path):
    constrained = copy.deepcopy(crf)
    constrained.transition_coef_[2, 0] = -np.inf
    ax = plot_transition_weights(constrained, annotate=True)
    assert bool(ax.images[0].get_array().mask[2, 0])  # drawn as "bad" (grey)
    assert "-inf" in [t.get_text() for t in ax.texts]
    assert _saved(ax, tmp_path / "forbidden.png")


def test_plot_top_features(crf, tmp_path):
    ax = plot_top_features(crf, "N", top=3)
    rows = state_features(crf, top=3, classes=["N"])
    bars = ax.patches
    assert len(bars) == 3
    # Strongest on top: bar widths from top to bottom follow the table.
    by_height = sorted(bars, key=lambda bar: -bar.get_y())
    np.testing.assert_allclose([bar.get_width() for bar in by_height],
                               [row.weight for row in rows])
    ticks = {t.get_position()[1]: t.get_text() for t in ax.get_yticklabels()}
    assert [ticks[y] for y in sorted(ticks, reverse=True)] == [row.feature for row in rows]
    assert _saved(ax, tmp_path / "features.png")


def test_plot_top_features_unknown_label(crf):
    with pytest.raises(ValueError, match="Unknown label"):
        plot_top_features(crf, "ADJ")


def test_plot_loss_curve(crf, tmp_path):
    fig, ax = plt.subplots()
    assert plot_loss_curve(crf, ax=ax) is ax
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), crf.loss_curve_)
    np.testing.assert_array_equal(line.get_xdata(), np.arange(1, len(crf.loss_curve_) + 1))
    assert _saved(ax, tmp_path / "loss.png")


def test_plots_compose_into_subplots(crf, tmp_path):
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    plot_transition_weights(crf, ax=axes[0])
    plot_top_features(crf, "V", ax=axes[1])
    plot_loss_curve(crf, ax=axes[2])
    path = tmp_path / "all.pdf"
    fig.savefig(path)
    assert path.stat().st_size > 0


def test_plots_need_a_fitted_model():
    with pytest.raises(NotFittedError):
        plot_loss_curve(CRFClassifier())
    with pytest.raises(NotFittedError):
        plot_transition_weights(CRFClassifier())


def test_missing_matplotlib_names_the_extra(crf, monkeypatch):
    # None in sys.modules makes the import fail as if matplotlib were absent.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"skcrf\[plot\]"):
        plot_loss_curve(crf)


def test_trigram_features_list_the_strongest_trigrams():
    from skcrf.inspection import Trigram, trigram_features

    # every trigram gets a weight: the toy corpus has too few to list three
    second = CRFClassifier(alpha=0.1, order=2, all_possible_transitions=True).fit(X, Y)
    rows = trigram_features(second, top=3)
    assert len(rows) == 3 and all(isinstance(row, Trigram) for row in rows)
    weights = [abs(row.weight) for row in rows]
    assert weights == sorted(weights, reverse=True)
    classes = second.classes_.tolist()
    a, b, c = (classes.index(label) for label in rows[0][:3])
    row = np.flatnonzero((second.label_patterns_ == [a, b, c]).all(axis=1))
    assert second.pattern_coef_[row] == rows[0].weight
    assert abs(rows[0].weight) == np.abs(second.pattern_coef_).max()
    with pytest.raises(ValueError, match="order=2"):
        trigram_features(CRFClassifier(alpha=0.1).fit(X, Y))


def test_edge_features_list_the_strongest_transition_features():
    from skcrf.inspection import EdgeFeature, edge_features

    edged = CRFClassifier(alpha=0.1, transition_features=["w="]).fit(X, Y)
    rows = edge_features(edged, top=None)
    assert all(isinstance(row, EdgeFeature) for row in rows)
    assert len(rows) == np.count_nonzero(edged.transition_feature_coef_.data)
    weights = [abs(row.weight) for row in rows]
    assert weights == sorted(weights, reverse=True)
    classes = edged.classes_.tolist()
    V = edged.transition_feature_coef_.toarray()
    for row in rows:
        f = list(edged.feature_names_).index(row.feature)
        column = classes.index(row.from_label) * len(classes) + classes.index(row.to_label)
        assert V[f, column] == row.weight
    # a noun after a determiner, as seen in training
    assert {(row.from_label, row.to_label) for row in rows if row.feature == "w=dog"} == {
        ("DET", "N")}
    assert "w=dog" in format_table(rows[:50])
    with pytest.raises(ValueError, match="transition_features"):
        edge_features(CRFClassifier(alpha=0.1).fit(X, Y))


SEGMENT_X = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "wrote"}],
             [{"w": "Alan"}, {"w": "Turing"}, {"w": "ran"}],
             [{"w": "in"}, {"w": "Paris"}, {"w": "today"}]]
SEGMENT_Y = [["B-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"], ["O", "B-LOC", "O"]]


@pytest.fixture(scope="module")
def semi():
    from skcrf import SemiMarkovCRF

    return SemiMarkovCRF(alpha=0.1).fit(SEGMENT_X, SEGMENT_Y)


def test_semimarkov_tables_name_segment_labels(semi):
    """Rows of coef_ are segment labels (LOC, PER, O), not tags (B-PER, ...)."""
    rows = state_features(semi, top=None)
    assert {row.label for row in rows} == {"LOC", "PER", "O"}
    for row in rows:
        k = semi.segment_classes_.tolist().index(row.label)
        j = semi.feature_names_.tolist().index(row.feature)
        assert row.weight == semi.coef_[k, j]
    pairs = transition_features(semi)
    assert len(pairs) == len(semi.segment_classes_) ** 2
    with pytest.raises(ValueError, match="B-PER"):
        state_features(semi, classes=["B-PER"])


def test_boundary_features_and_length_weights(semi):
    from skcrf.inspection import boundary_features, length_weights

    rows = boundary_features(semi, top=None, classes=["PER"])
    first = {row.feature: row.weight for row in rows if row.position == "first"}
    last = {row.feature: row.weight for row in rows if row.position == "last"}
    names = semi.feature_names_.tolist()
    k = semi.segment_classes_.tolist().index("PER")
    assert set(first) == {"w=Ada", "w=Alan"} and set(last) == {"w=Lovelace", "w=Turing"}
    assert first["w=Ada"] == semi.first_coef_[k, names.index("w=Ada")] > 0
    assert last["w=Turing"] == semi.last_coef_[k, names.index("w=Turing")] > 0
    lengths = length_weights(semi)
    # each label takes up to its longest training segment; "O" segments are single tokens
    assert [(r.label, r.length) for r in lengths] == [("LOC", 1), ("PER", 1), ("PER", 2),
                                                     ("O", 1)]
    per_two = [r.weight for r in lengths if r.label == "PER" and r.length == 2][0]
    assert per_two == semi.length_coef_[k, 1]
    with pytest.raises(NotFittedError):
        length_weights(CRFClassifier())
