"""Estimators trained on unknown (None) and ambiguous (set) labels, and what refuses them."""

import numpy as np
import pytest

from skcrf import CRFClassifier, SemiMarkovCRF
from skcrf._persistence import load_model
from skcrf._estimators.partial_labels import (CONSTRAINED, FREE, FULL, encode_partial_labels,
                                              holds_partial_labels)
from skcrf.metrics import sequence_accuracy_score, span_f1_score
from tests._toys import chain_corpus, span_corpus


def test_encoding_masks_sets_and_unknown_tokens():
    y = [["a", None], [{"b", "c"}, "a"], [None, None], [{"a"}, "b"]]
    partial = encode_partial_labels(y, [2, 2, 2, 2])
    assert partial.classes.tolist() == ["a", "b", "c"]  # "c" only inside a set
    assert partial.label_ids.tolist() == [0, -1, -1, 0, -1, -1, 0, 1]  # {"a"} is "a"
    np.testing.assert_array_equal(partial.allowed[1], [True, True, True])
    np.testing.assert_array_equal(partial.allowed[2], [False, True, True])
    assert partial.kinds.tolist() == [CONSTRAINED, CONSTRAINED, FREE, FULL]
    assert holds_partial_labels(y) and not holds_partial_labels([["a", "b"]])


@pytest.mark.parametrize("y, message", [
    ([["a", set()]], "sequence 0, token 1 is an empty set"),
    ([["a", {"b", 1}]], "mixes"),
    ([[None, None]], "no label at all"),
    ([["a"]], "has 2 tokens but 1 labels"),
])
def test_bad_partial_labels_say_what_is_wrong(y, message):
    with pytest.raises((TypeError, ValueError), match=message):
        encode_partial_labels(y, [2])


def test_fit_learns_from_partly_labelled_sequences():
    X, y = chain_corpus(60, seed=1)
    rng = np.random.default_rng(0)
    hidden = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    hidden[0] = [{label, "ADJ"} for label in y[0]]  # sets of two, one right
    crf = CRFClassifier(alpha=0.05).fit(X, hidden)
    assert crf.classes_.tolist() == sorted({label for labels in y for label in labels})
    X_test, y_test = chain_corpus(30, seed=2)
    assert sequence_accuracy_score(y_test, crf.predict(X_test)) > 0.95


@pytest.mark.parametrize("order, prune_threshold", [(2, None), (3, None), (2, 1e-3)])
def test_higher_orders_learn_from_partly_labelled_sequences(order, prune_threshold):
    X, y = chain_corpus(60, seed=1)
    rng = np.random.default_rng(0)
    hidden = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    hidden[0] = [{label, "ADJ"} for label in y[0]]
    crf = CRFClassifier(alpha=1.0, order=order, prune_threshold=prune_threshold).fit(X, hidden)
    assert crf.label_patterns_.shape[1] == order + 1
    X_test, y_test = chain_corpus(30, seed=2)
    assert sequence_accuracy_score(y_test, crf.predict(X_test)) > 0.95


def test_transition_features_and_sample_weight_take_partial_labels():
    X, y = chain_corpus(40, seed=3)
    y[1] = [None] * len(y[1])
    y[2] = [y[2][0], None] + y[2][2:]
    crf = CRFClassifier(alpha=0.1, transition_features="all").fit(
        X, y, sample_weight=np.r_[2.0, np.ones(len(X) - 1)])
    assert crf.transition_feature_coef_.shape[1] == len(crf.classes_) ** 2


def test_fully_labelled_y_fits_as_before():
    # None-free y must not take the partial-label path at all
    X, y = chain_corpus(20, seed=4)
    a = CRFClassifier(alpha=0.1, max_iter=30).fit(X, y)
    b = CRFClassifier(alpha=0.1, max_iter=30).fit(X, [list(labels) for labels in y])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.loss_curve_ == b.loss_curve_


def test_labels_the_constraints_forbid_name_the_sequence():
    X, y = span_corpus(20, seed=0)
    q = next(i for i, tags in enumerate(y) if len(tags) >= 2 and tags[0] == "O")
    y[q] = ["O", "I-PER"] + [None] * (len(y[q]) - 2)  # I-PER after O: no IOB2 labelling
    with pytest.raises(ValueError, match=f"sequence {q} admit no labelling"):
        CRFClassifier(allowed_transitions="bio").fit(X, y)


@pytest.mark.parametrize("params", [{"order": 2}, {"solver": "sgd", "max_iter": 30}])
def test_semimarkov_orders_and_online_solvers_train_on_partial_labels(params):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = span_corpus(60, seed=0)
    partial = [[None] * len(y[0])] + [list(tags) for tags in y[1:]]
    rng = np.random.default_rng(0)
    partial[1:30] = [[None if rng.random() < 0.3 else tag for tag in tags]
                     for tags in partial[1:30]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = SemiMarkovCRF(alpha=0.01, random_state=0, **params).fit(X, partial)
    X_test, y_test = span_corpus(30, seed=1)
    assert crf.score(X_test, y_test) > 0.9


def test_scoring_refuses_partial_labels():
    X, y = chain_corpus(10, seed=5)
    crf = CRFClassifier(alpha=0.1).fit(X, y)
    bad = [list(labels) for labels in y]
    bad[3][1] = None
    with pytest.raises(ValueError, match="sequence 3, token 1 is None"):
        crf.score(X, bad)
    bad[3][1] = {"N", "V"}
    with pytest.raises(ValueError, match="sequence 3, token 1 is the set \\['N', 'V'\\]"):
        sequence_accuracy_score(bad, y)
    with pytest.raises(ValueError, match="sequence 3, token 1"):
        span_f1_score(bad, y)


def test_cli_reads_unknown_markers_and_label_sets(tmp_path):
    from skcrf._cli._commands import partial_labels
    from tests.test_cli import _run, _sentences, _write

    assert partial_labels([["_", "B-PER|B-ORG", "O"]], "_", "|") == [
        [None, frozenset({"B-PER", "B-ORG"}), "O"]]
    sentences = _sentences(0, 40)
    for q, sentence in enumerate(sentences[::3]):
        word, pos, label = sentence[1]
        sentence[1] = (word, pos, "_" if q % 2 else f"{label}|O")
    model = tmp_path / "partial.skcrf"
    status, out, err = _run("train", _write(tmp_path / "train.txt", sentences), "--model",
                            model, "--max-iter", 30, "--n-jobs", 1, "--unknown-label", "_",
                            "--label-sets", "|")
    assert status == 0, err
    assert load_model(model)[-1].classes_.tolist() == ["B-LOC", "B-PER", "I-PER", "O"]
    status, _, err = _run("train", tmp_path / "train.txt", "--model", tmp_path / "m2.skcrf",
                          "--unknown-label", "_", "--label-sets", "|", "--structure",
                          "semimarkov", "--max-iter", 30, "--n-jobs", 1)
    assert status == 0, err
    assert load_model(tmp_path / "m2.skcrf")[-1].segment_classes_.tolist() == [
        "LOC", "PER", "O"]


def test_cross_validation_trains_on_partial_labels_and_scores_the_labelled_sequences():
    from sklearn.model_selection import KFold

    from skcrf import CRFClassifierCV

    X, y = chain_corpus(40, seed=6)
    hidden = [list(labels) for labels in y]
    for q in range(0, 40, 3):
        hidden[q][0] = None
    hidden[1] = [{label, "ADJ"} for label in y[1]]
    cv = KFold(2)
    search = CRFClassifierCV(alphas=[0.1, 1.0], cv=cv).fit(X, hidden)
    assert np.isfinite(search.scores_).all()
    # fold 0's score of alpha 1.0: a CRFClassifier fitted on its training part (with its
    # unknown and set labels), scored on its held-out sequences of one label per token
    train, test = next(cv.split(X))
    model = CRFClassifier(alpha=1.0).fit([X[i] for i in train], [hidden[i] for i in train])
    labelled = [i for i in test if not holds_partial_labels([hidden[i]])]
    assert len(labelled) < len(test)
    expected = model.score([X[i] for i in labelled], [y[i] for i in labelled])
    assert search.scores_[0, 1] == pytest.approx(expected, abs=0.02)
    with pytest.raises(ValueError, match="CRFClassifierCV scores each fold"):
        CRFClassifierCV(alphas=[0.1, 1.0], cv=2).fit(X, [[None] + list(l[1:]) for l in y])


def test_warm_start_continues_on_partial_labels():
    X, y = chain_corpus(40, seed=1)
    rng = np.random.default_rng(0)
    y = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    cold = CRFClassifier(alpha=0.1, tol=1e-6).fit(X, y)
    warm = CRFClassifier(alpha=0.1, tol=1e-6, warm_start=True).fit(X, y)
    warm.fit(X, y)  # from the optimum: it stays there
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-3)
    assert warm.n_iter_ < cold.n_iter_


def test_labels_from_a_generator_are_read_once():
    X, y = chain_corpus(20, seed=9)
    y[0] = [None] * len(y[0])
    fitted = CRFClassifier(alpha=0.1).fit(X, (labels for labels in y))
    assert fitted.classes_.tolist() == ["ADJ", "DET", "N", "V"]


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("sample_weight", [None, "weights"])
def test_a_dense_block_with_partial_labels_trains_as_its_csr_columns(sample_weight, order):
    import scipy.sparse as sp

    from skcrf import SequenceMatrix
    from tests.test_dense_input import numeric_corpus

    X, y = numeric_corpus(40, seed=3)
    rng = np.random.default_rng(1)
    hidden = [[None if rng.random() < 0.3 else
               ({"A", "B"} if rng.random() < 0.1 else label) for label in labels]
              for labels in y]
    weights = None if sample_weight is None else rng.integers(1, 3, len(X)).astype(float)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    csr = SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets)
    dense = CRFClassifier(alpha=0.1, tol=1e-8, order=order).fit(X, hidden,
                                                                sample_weight=weights)
    columns = CRFClassifier(alpha=0.1, tol=1e-8, order=order).fit(csr, hidden,
                                                                  sample_weight=weights)
    assert dense.n_dense_features_in_ == 4
    np.testing.assert_allclose(dense.coef_, columns.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dense.transition_coef_, columns.transition_coef_, rtol=1e-5,
                               atol=1e-6)
