"""TreeCRF's inference queries against enumeration of every labelling of small trees."""

import itertools

import numpy as np
import pytest

from skcrf import TreeCRF


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(30):
        n = int(rng.integers(1, 5))
        parents = [-1] + [int(rng.integers(0, v)) for v in range(1, n)]
        X.append([{"w": f"w{rng.integers(0, 4)}", "__parent__": p} for p in parents])
        y.append([["a", "b", "c"][rng.integers(0, 3)] for _ in range(n)])
    return TreeCRF(alpha=0.5, max_iter=50, n_jobs=1).fit(X, y), X


def _all_log_probas(crf, sequence):
    labellings = [list(labels) for labels in
                  itertools.product(crf.classes_, repeat=len(sequence))]
    return labellings, crf.sequence_log_proba([sequence] * len(labellings), labellings)


def test_sequence_log_proba_sums_to_one_and_ranks_like_predict(fitted):
    crf, X = fitted
    for sequence in X[:8]:
        labellings, log_proba = _all_log_probas(crf, sequence)
        np.testing.assert_allclose(np.exp(log_proba).sum(), 1.0, rtol=1e-10)
        best, proba = crf.predict([sequence], return_proba=True)
        assert best[0].tolist() == labellings[int(np.argmax(log_proba))]
        np.testing.assert_allclose(proba[0], np.exp(log_proba.max()), rtol=1e-10)


def test_forced_decoding_is_the_best_completion_and_conditional_marginals(fitted):
    crf, X = fitted
    sequence = next(s for s in X if len(s) >= 3)
    fixed = [None] * len(sequence)
    fixed[1] = crf.classes_[2]
    labellings, log_proba = _all_log_probas(crf, sequence)
    allowed = np.array([labels[1] == fixed[1] for labels in labellings])
    proba = np.where(allowed, np.exp(log_proba), 0.0)
    proba /= proba.sum()
    best = crf.predict([sequence], fixed=[fixed])[0]
    assert best.tolist() == labellings[int(np.argmax(proba))]
    marginals = crf.predict_marginals([sequence], fixed=[fixed])[0]
    expected = np.zeros_like(marginals)
    for labels, p in zip(labellings, proba):
        for t, label in enumerate(labels):
            expected[t, list(crf.classes_).index(label)] += p
    np.testing.assert_allclose(marginals, expected, atol=1e-12)


def test_nbest_names_what_a_tree_offers(fitted):
    crf, X = fitted
    with pytest.raises(NotImplementedError, match="return_proba=True"):
        crf.predict_nbest(X[:2], n=2)
