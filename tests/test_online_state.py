"""partial_fit's state against its parameters and data (issue 43, items 3, 8-11, 16, 23, 30).

Each test here failed on the skcrf before the fix: an out-of-bounds read, a
silent replacement or an unclear error.
"""

import io

import numpy as np
import pytest

from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceMatrix, SequenceVectorizer, TreeCRF,
                   load_model, save_model)
from skcrf._estimators import online as estimator_online
from skcrf.learning.online import MAX_VISITS, visits_of_weights
from tests._toys import chain_corpus, span_corpus, tree_corpus


def _classes(y):
    return sorted({label for labels in y for label in labels})


def _round_trip(model):
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    return load_model(buffer)


@pytest.mark.parametrize("solver, name", [("arow", "covariance"), ("sgd", "l1_applied"),
                                          ("perceptron", "average_sum")])
def test_an_emptied_state_array_is_refused_at_load(solver, name):
    X, y = chain_corpus()
    model = CRFClassifier(solver=solver, l1_ratio=0.5 if solver == "sgd" else 0.0)
    model.partial_fit(X[:10], y[:10], classes=_classes(y))
    model.solver_state_ = {**model.solver_state_, name: np.zeros(0)}
    with pytest.raises(ValueError, match=rf"solver_state_ is damaged.*'{name}' has 0 values"
                                         rf"|solver_state_ is damaged.*cannot (add|change)"):
        _round_trip(model)
    with pytest.raises(ValueError, match=rf"'{name}' has 0 values|cannot (add|change)"):
        model.partial_fit(X[10:], y[10:])


@pytest.mark.parametrize("damage, match", [
    ({"eta0": 0.0}, "'eta0'"),
    ("no eta0", "lacks 'eta0'"),
    ("steps", "step count"),
    ("average", "'average' must be"),
    ("patterns", "'label_patterns'"),
])
def test_the_state_scalars_and_patterns_are_checked_at_load(damage, match):
    X, y = chain_corpus()
    model = CRFClassifier(solver="sgd", order=2, eta0=0.05)
    model.partial_fit(X[:10], y[:10], classes=_classes(y))
    state = dict(model.solver_state_)
    if damage == "steps":
        state["counters"] = state["counters"].copy()
        state["counters"][1] = -5.0
    elif damage == "no eta0":
        del state["eta0"]
    elif damage == "average":
        state["average"] = -1
    elif damage == "patterns":
        state["label_patterns"] = state["label_patterns"][::-1] + 7
    else:
        state.update(damage)
    model.solver_state_ = state
    with pytest.raises(ValueError, match=match):
        _round_trip(model)


def test_turning_l1_on_or_off_between_calls_is_refused():
    X, y = chain_corpus()
    model = CRFClassifier(solver="sgd", eta0=0.05, l1_ratio=0.0)
    model.partial_fit(X[:10], y[:10], classes=_classes(y))
    model.set_params(l1_ratio=0.5)
    with pytest.raises(ValueError, match="cannot add the L1 penalty"):
        model.partial_fit(X[10:], y[10:])
    model.set_params(l1_ratio=0.0)
    model.partial_fit(X[10:], y[10:])  # back as at the first call: continues
    l1 = CRFClassifier(solver="sgd", eta0=0.05, l1_ratio=0.5)
    l1.partial_fit(X[:10], y[:10], classes=_classes(y)).set_params(l1_ratio=0.0)
    with pytest.raises(ValueError, match="cannot drop the L1 penalty"):
        l1.partial_fit(X[10:], y[10:])


def test_changing_average_between_calls_is_refused_not_ignored():
    # item 10: the averages are sums since their first step; another setting cannot be
    # honoured for the steps already taken
    X, y = chain_corpus()
    model = CRFClassifier(solver="perceptron").partial_fit(X[:10], y[:10],
                                                           classes=_classes(y))
    before = model.solver_state_
    model.set_params(average=False)
    with pytest.raises(ValueError, match="cannot change average.*averaging from step 1"):
        model.partial_fit(X[10:], y[10:])
    assert model.solver_state_ is before  # the model is left as it was
    model.set_params(average=5)
    with pytest.raises(ValueError, match="averaging from step 5 now asked"):
        model.partial_fit(X[10:], y[10:])


def test_partial_fit_after_a_batch_fit_refuses_to_discard_it():
    # item 9
    X, y = chain_corpus()
    model = CRFClassifier(max_iter=5).fit(X, y)
    coef = model.coef_.copy()
    model.set_params(solver="sgd")
    with pytest.raises(ValueError, match="no solver_state_.*discard the fitted model"):
        model.partial_fit(X[:5], y[:5], classes=_classes(y))
    np.testing.assert_array_equal(model.coef_, coef)


def test_a_later_batchs_label_patterns_extend_the_first_ones():
    # item 8: order 2, the second batch brings trigrams the first did not
    first = [[{"w": w} for w in "abc"]] * 3
    second = [[{"w": w} for w in "cba"]] * 3
    model = CRFClassifier(solver="sgd", order=2, eta0=0.1, shuffle=False)
    model.partial_fit(first, [["A", "B", "C"]] * 3, classes=["A", "B", "C"])
    rows_first = model.solver_state_["label_patterns"]
    w_first = model.solver_state_["w"]
    model.partial_fit(second, [["C", "B", "A"]] * 3)
    rows = model.solver_state_["label_patterns"].tolist()
    assert sorted(rows) == sorted([[0, 1, 2], [2, 1, 0]])
    # the first batch's pattern keeps its weight's history: only the new pattern starts at 0
    assert [0, 1, 2] in model.label_patterns_.tolist()
    assert rows_first.tolist() == [[0, 1, 2]]
    assert model.solver_state_["w"].shape[0] > w_first.shape[0]
    # a model file holds the patterns, and continues alike
    loaded = _round_trip(model)
    for m in (model, loaded):
        m.partial_fit(first, [["A", "B", "C"]] * 3)
    np.testing.assert_array_equal(model.pattern_coef_, loaded.pattern_coef_)


def test_a_later_sequence_matrix_must_name_the_models_columns():
    # item 11: same width, other names
    X, y = chain_corpus()
    model = CRFClassifier(solver="perceptron").partial_fit(X, y, classes=_classes(y))
    names = model.feature_names_
    renamed = SequenceVectorizer().fit_transform(X)
    order = np.roll(np.arange(len(names)), 1)
    shuffled = SequenceMatrix(renamed.matrix[:, order], renamed.offsets,
                              feature_names=np.asarray(renamed.feature_names)[order])
    with pytest.raises(ValueError, match="column 0 is .* the model's feature 0 is"):
        model.partial_fit(shuffled, y)
    unnamed = SequenceMatrix(renamed.matrix, renamed.offsets)
    with pytest.raises(ValueError, match="without feature names.*fitted on feature dicts"):
        model.partial_fit(unnamed, y)
    model.partial_fit(model.vectorizer_.transform(X), y)  # the model's own columns


@pytest.mark.parametrize("classes, match", [
    ([], "classes is empty"),
    ((label for label in ["A", "B"]), None),
    ([["A"], ["B"]], r"classes\[0\] is \['A'\]"),
    ("AB", "must be a list of labels"),
])
def test_partial_fit_classes_are_checked_with_a_clear_message(classes, match):
    # item 23
    X = [[{"w": "a"}, {"w": "b"}]] * 3
    y = [["A", "B"]] * 3
    model = CRFClassifier(solver="perceptron")
    if match is None:  # a generator is a list of labels too
        assert model.partial_fit(X, y, classes=classes).classes_.tolist() == ["A", "B"]
        return
    with pytest.raises(ValueError, match=match):
        model.partial_fit(X, y, classes=classes)


def test_a_huge_sample_weight_makes_a_bounded_number_of_visits():
    # item 16: weight k was k visits (1e9: a billion steps)
    sequences, factors = visits_of_weights(np.array([1e9, 2.0, 0.5, 0.0]))
    assert sequences.tolist() == [0] * MAX_VISITS + [1, 1, 2]
    np.testing.assert_allclose(factors[:MAX_VISITS].sum(), 1e9)
    np.testing.assert_array_equal(factors[MAX_VISITS:], [1.0, 1.0, 0.5])
    X, y = chain_corpus(10)
    weights = np.ones(len(X))
    weights[0] = 1e12
    model = CRFClassifier(solver="perceptron", max_iter=2, random_state=0)
    model.fit(X, y, sample_weight=weights)  # finishes at once
    assert np.isfinite(model.coef_).all()


@pytest.mark.parametrize("estimator, params, corpus", [
    (TreeCRF, {"transition_features": "all"}, tree_corpus),
    (SemiMarkovCRF, {"max_segment_length": 3}, "segments"),
])
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_online_solvers_refuse_link_and_segment_features_before_any_work(
        monkeypatch, estimator, params, corpus, method):
    # item 30: the refusal came after calibrating and compiling
    def no_kernel(*args, **kwargs):
        raise AssertionError("the online solver ran before the refusal")

    monkeypatch.setattr(estimator_online, "online", no_kernel)
    if corpus == "segments":
        from skcrf import TokenFeaturizer

        X, y = span_corpus()
        words = [[token["w"] for token in seq] for seq in X]
        X = TokenFeaturizer(segment_features=True).fit_transform(words)
        X = SequenceVectorizer().fit_transform(X)
    else:
        X, y = corpus()
    model = estimator(solver="sgd", eta0=0.1, **params)
    with pytest.raises(ValueError, match="online solvers do not take"):
        if method == "fit":
            model.fit(X, y)
        else:
            model.partial_fit(X, y, classes=_classes(y))
