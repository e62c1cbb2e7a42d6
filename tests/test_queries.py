"""CRFClassifier's queries against enumeration of every labelling of small sequences.

n-best lists, sequence probabilities, decoding with fixed labels (argmax and
conditional marginals over the labellings that keep them), posterior
decoding, constraints, for orders 1 to 3 and transition features. The
oracle scores labellings from the fitted coefficients alone
(``tests/naive*.py``), never through the estimator's kernels.
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from skcrf import CRFClassifier
from skcrf._estimators.base import CRFEstimator
from tests.naive import path_score
from tests.naive_edges import edge_path_score
from tests.naive_patterns import path_score as pattern_path_score
from tests.naive_patterns import pattern_table

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning",
                                        "ignore::UserWarning")

WORDS = {"a": "B-X", "b": "I-X", "c": "O", "d": "B-Y", "e": "I-Y"}


def assert_no_labelling_fits(fitted, x, fixed):
    """``predict`` and ``predict_marginals`` of ``x`` with the labels ``fixed`` no
    labelling meets say so, naming the sequence."""
    with pytest.raises(ValueError, match="Sequence 0 has no labelling"):
        fitted.predict([x], fixed=[fixed])
    with pytest.raises(ValueError, match="Sequence 0 has no labelling"):
        fitted.predict_marginals([x], fixed=[fixed])


def _corpus(n_sequences=50, seed=0):
    """Tokens whose word suggests its tag, with noise, so that no labelling is certain."""
    rng = np.random.default_rng(seed)
    words = list(WORDS)
    X, y = [], []
    for _ in range(n_sequences):
        tags = []
        while len(tags) < rng.integers(1, 7):
            kind = rng.integers(3)
            tags += ["O"] if kind == 0 else (["B-X", "I-X"] if kind == 1 else ["B-Y"])
        tokens = []
        for tag in tags:
            word = [w for w in words if WORDS[w] == tag][0]
            if rng.random() < 0.25:
                word = rng.choice(words)
            tokens.append({"w": str(word), "noise": float(rng.normal())})
        X.append(tokens)
        y.append(tags)
    return X, y


def _test_sequences(seed=1):
    """Sequences of 0 to 3 tokens (the brute force enumerates 5 ** 3 labellings)."""
    rng = np.random.default_rng(seed)
    return [[{"w": str(rng.choice(list(WORDS))), "noise": float(rng.normal())}
             for _ in range(n)] for n in [0, 1, 2, 3, 3, 2, 1, 3, 3, 2]]


VARIANTS = {
    "order1": dict(),
    "order2": dict(order=2),
    "edges": dict(transition_features="all"),
    "order1-bio": dict(allowed_transitions="bio"),
    "order2-bio": dict(order=2, allowed_transitions="bio"),
    "order3": dict(order=3),
    "order3-bio": dict(order=3, allowed_transitions="bio"),
    "edges-bio": dict(transition_features="all", allowed_transitions="bio"),
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def fitted(request):
    X, y = _corpus()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFClassifier(alpha=0.5, max_iter=40, **VARIANTS[request.param]).fit(X, y)
    return crf


def _enumeration(crf, X):
    """Per sequence: every labelling (tuple of class ids) with its log probability."""
    matrix = crf.vectorizer_.transform(X)
    dense, offsets = matrix.matrix.toarray(), matrix.offsets
    n_classes = len(crf.classes_)
    unary = dense @ crf.coef_.T
    result = []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        x, u = dense[lo:hi], unary[lo:hi]
        if hasattr(crf, "label_patterns_"):
            table = pattern_table(crf.label_patterns_, crf.pattern_coef_)

            def score(p, u=u, table=table):
                return pattern_path_score(u, crf.transition_coef_, table, crf.start_coef_,
                                          crf.end_coef_, p)
        elif hasattr(crf, "transition_feature_coef_"):
            edges = crf.transition_coef_ + (x @ crf.transition_feature_coef_).reshape(
                -1, n_classes, n_classes)

            def score(p, u=u, edges=edges):
                return edge_path_score(u, edges, crf.start_coef_, crf.end_coef_, p)
        else:
            def score(p, u=u):
                return path_score(u, crf.transition_coef_, crf.start_coef_, crf.end_coef_, p)
        paths = list(itertools.product(range(n_classes), repeat=hi - lo))
        scores = np.array([score(p) if hi > lo else 0.0 for p in paths])
        result.append(dict(zip(paths, scores - logsumexp(scores))))
    return result


def _labels(crf, path):
    return crf.classes_[list(path)] if path else crf.classes_[:0]


def test_sequence_log_proba_is_the_enumerated_probability_and_sums_to_one(fitted):
    X = _test_sequences()
    for x, log_p in zip(X, _enumeration(fitted, X)):
        paths = list(log_p)
        got = fitted.sequence_log_proba([x] * len(paths), [_labels(fitted, p) for p in paths])
        np.testing.assert_allclose(got, list(log_p.values()), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.exp(got).sum(), 1.0, rtol=1e-9)


def test_nbest_is_the_ranked_enumeration_and_starts_with_predict(fitted):
    X = _test_sequences()
    predicted, proba = fitted.predict(X, return_proba=True)
    for n in (1, 4, 200):
        nbest = fitted.predict_nbest(X, n=n)
        for q, log_p in enumerate(_enumeration(fitted, X)):
            ranked = sorted((v, p) for p, v in log_p.items() if v > -np.inf)[::-1]
            assert len(nbest[q]) == min(n, len(ranked))
            np.testing.assert_allclose([p for _, p in nbest[q]],
                                       [np.exp(v) for v, _ in ranked[:n]], rtol=1e-9)
            # random weights: no ties, so the labellings are the ranked ones
            assert [labels.tolist() for labels, _ in nbest[q]] == [
                _labels(fitted, p).tolist() for _, p in ranked[:n]]
            np.testing.assert_array_equal(nbest[q][0][0], predicted[q])
            np.testing.assert_allclose(nbest[q][0][1], proba[q], rtol=1e-12)


def test_nbest_costs_what_the_labellings_that_exist_cost(fitted):
    """n = 10**8 on short sequences asks the kernels for at most 5 ** 3 labellings, and
    takes little memory; n = 10**7 peaked at 1.3 GB, n = 10**8 raised MemoryError
    (issue 32, item 8)."""
    import tracemalloc

    X = _test_sequences()
    small = fitted.predict_nbest(X, n=200)
    tracemalloc.start()
    try:
        huge = fitted.predict_nbest(X, n=10**8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    assert [[(labels.tolist(), p) for labels, p in lists] for lists in huge] == \
        [[(labels.tolist(), p) for labels, p in lists] for lists in small]


def test_nbest_past_the_memory_budget_says_which_n_fits(fitted):
    long = [[{"w": "a", "noise": 0.0}] * 40] * 3
    with pytest.raises(ValueError, match=r"predict_nbest\(n=100000000\) would take about "
                                         r"[\d.]+ GiB for these 3 sequences of 120 tokens .* "
                                         r"ask for n <= \d+, or for fewer sequences"):
        fitted.predict_nbest(long, n=10**8)
    message = ""
    try:
        fitted.predict_nbest(long, n=10**8)
    except ValueError as error:
        message = str(error)
    fits = int(message.split("ask for n <= ")[1].split(",")[0])
    assert len(fitted.predict_nbest(long, n=fits)[0]) == fits


def test_return_proba_is_the_probability_of_the_returned_labelling(fitted):
    X = _test_sequences()
    for decoding in ("viterbi", "marginal"):
        predicted, proba = fitted.predict(X, decoding=decoding, return_proba=True)
        np.testing.assert_allclose(np.log(proba), fitted.sequence_log_proba(X, predicted),
                                   rtol=1e-9)
        np.testing.assert_array_equal(np.concatenate(predicted),
                                      np.concatenate(fitted.predict(X, decoding=decoding)))


def test_posterior_decoding_is_the_argmax_of_the_marginals(fitted):
    X = _test_sequences()
    for labels, marginals in zip(fitted.predict(X, decoding="marginal"),
                                 fitted.predict_marginals(X)):
        np.testing.assert_array_equal(labels, fitted.classes_[np.argmax(marginals, axis=1)])


def _random_fixed(rng, crf, X, share=0.4):
    fixed = []
    for x in X:
        labels = [str(rng.choice(crf.classes_)) if rng.random() < share else None for _ in x]
        fixed.append(labels if rng.random() < 0.9 else None)
    return fixed


def _conditional(log_p, labels, classes):
    """The enumerated labellings that keep the fixed labels, with renormalized log probabilities."""
    ids = {c: k for k, c in enumerate(classes.tolist())}
    kept = {p: v for p, v in log_p.items()
            if labels is None or all(f is None or ids[f] == k for f, k in zip(labels, p))}
    finite = [v for v in kept.values() if v > -np.inf]
    total = logsumexp(finite) if finite else -np.inf
    return {p: v - total for p, v in kept.items() if v > -np.inf}


@pytest.mark.parametrize("seed", range(6))
def test_fixed_labels_give_the_conditional_argmax_and_marginals(fitted, seed):
    rng = np.random.default_rng(seed)
    X = _test_sequences(seed)
    fixed = _random_fixed(rng, fitted, X)
    C = len(fitted.classes_)
    for x, labels, log_p in zip(X, fixed, _enumeration(fitted, X)):
        conditional = _conditional(log_p, labels, fitted.classes_)
        if not conditional:
            assert_no_labelling_fits(fitted, x, labels)
            continue
        best = max(conditional, key=conditional.get)
        predicted, proba = fitted.predict([x], fixed=[labels], return_proba=True)
        np.testing.assert_array_equal(predicted[0], _labels(fitted, best))
        np.testing.assert_allclose(proba[0], np.exp(conditional[best]), rtol=1e-9)
        expected = np.zeros((len(x), C))
        for path, v in conditional.items():
            expected[np.arange(len(x)), list(path)] += np.exp(v)
        np.testing.assert_allclose(fitted.predict_marginals([x], fixed=[labels])[0], expected,
                                   atol=1e-9)
        nbest = fitted.predict_nbest([x], n=3, fixed=[labels])[0]
        ranked = sorted(conditional.values())[::-1][:3]
        np.testing.assert_allclose([p for _, p in nbest], np.exp(ranked), rtol=1e-9)


def test_constrained_models_never_return_a_forbidden_labelling():
    X, y = _corpus()
    crf = CRFClassifier(alpha=0.5, max_iter=40, allowed_transitions="bio").fit(X, y)
    X_test = _test_sequences()
    log_p = _enumeration(crf, X_test)
    for q, labellings in enumerate(crf.predict_nbest(X_test, n=200)):
        # every allowed labelling comes, no forbidden one
        assert len(labellings) == sum(v > -np.inf for v in log_p[q].values())
        assert all(p > 0 for _, p in labellings)
    forbidden = [[x[0]] for x in X_test if x]  # I-X first: forbidden
    assert np.all(crf.sequence_log_proba(forbidden, [["I-X"]] * len(forbidden)) == -np.inf)


def test_fixed_input_errors_name_the_sequence_and_token(fitted):
    X = _test_sequences()
    free = [[None] * len(x) for x in X]
    with pytest.raises(ValueError, match="fixed has 2 entries but X has 10 sequences"):
        fitted.predict(X, fixed=free[:2])
    bad = list(free)
    bad[3] = [None, None]
    with pytest.raises(ValueError, match=r"fixed\[3\] has 2 labels but sequence 3 has 3"):
        fitted.predict(X, fixed=bad)
    bad = list(free)
    bad[4] = [None, "B-Z", None]
    with pytest.raises(ValueError, match=r"fixed\[4\]\[1\] \(sequence 4, token 1\) is 'B-Z'"):
        fitted.predict_marginals(X, fixed=bad)
    with pytest.raises(TypeError, match="fixed must be a list"):
        fitted.predict(X, fixed="B-X")
    # None entries and object arrays with None are free
    fixed = [None] + [np.array([None] * len(x), dtype=object) for x in X[1:]]
    for got, expected in zip(fitted.predict(X, fixed=fixed), fitted.predict(X)):
        np.testing.assert_array_equal(got, expected)


def test_query_argument_errors(fitted):
    X = _test_sequences()
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        fitted.predict_nbest(X, n=0)
    with pytest.raises(ValueError, match="decoding must be"):
        fitted.predict(X, decoding="beam")
    y = [["O"] * len(x) for x in X]
    y[2] = ["O", "B-Z"]
    with pytest.raises(ValueError, match=r"y\[2\]\[1\] \(sequence 2, token 1\) is 'B-Z'"):
        fitted.sequence_log_proba(X, y)
    with pytest.raises(ValueError, match="Sequence 1 has 1 tokens but 2 labels"):
        fitted.sequence_log_proba(X, [["O"] * len(x) for x in X[:1]] + [["O", "O"]]
                                  + [["O"] * len(x) for x in X[2:]])


def test_queries_do_not_depend_on_the_thread_count():
    X, y = _corpus(120, seed=4)
    crf = CRFClassifier(alpha=0.5, max_iter=20, allowed_transitions="bio").fit(X, y)
    results = []
    for n_jobs in (1, 2):
        crf.set_params(n_jobs=n_jobs)
        nbest = crf.predict_nbest(X, n=5)
        results.append(([[labels.tolist() for labels, _ in s] for s in nbest],
                        [[p for _, p in s] for s in nbest], crf.sequence_log_proba(X, y)))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]
    np.testing.assert_array_equal(results[0][2], results[1][2])


class _OnlyDecodes(CRFEstimator):
    """A structure with the two plain hooks only, as a new estimator may start."""

    def __init__(self, n_jobs=None):
        self.n_jobs = n_jobs

    def fit(self, X, y):
        self.classes_ = np.array(["A", "B"])
        self.vectorizer_ = None
        self.n_features_in_ = 1
        return self

    def _features(self, X):
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])]).astype(np.int64)
        return None, offsets

    def _decode(self, features, offsets):
        return np.zeros(offsets[-1], dtype=np.int64)

    def _token_marginals(self, features, offsets):
        return np.tile([1.0, 0.0], (offsets[-1], 1))


def test_a_structure_without_the_query_hooks_names_what_it_offers():
    model = _OnlyDecodes().fit(None, None)
    X = [[{}, {}]]
    assert model.predict(X)[0].tolist() == ["A", "A"]
    assert model.predict(X, decoding="marginal")[0].tolist() == ["A", "A"]
    with pytest.raises(NotImplementedError, match="does not offer n-best decoding; predict "
                                                  "gives the best labelling, predict_marginals"):
        model.predict_nbest(X)
    with pytest.raises(NotImplementedError, match="_OnlyDecodes does not offer"):
        model.predict(X, return_proba=True)
    with pytest.raises(NotImplementedError, match="predict_marginals"):
        model.sequence_log_proba(X, [["A", "B"]])
    with pytest.raises(NotImplementedError, match="fixed labels"):
        model.predict_marginals(X, fixed=[["A", None]])


class _NoNbest(CRFClassifier):
    """A structure with every hook but n-best."""

    _nbest = CRFEstimator._nbest


def test_a_structure_without_nbest_names_return_proba():
    X, y = _corpus(10)
    model = _NoNbest(max_iter=3).fit(X, y)
    assert model.predict(X, return_proba=True)[1].shape == (10,)
    with pytest.raises(NotImplementedError, match=r"_NoNbest does not offer n-best decoding; "
                                                  r"predict\(X, return_proba=True\) gives"):
        model.predict_nbest(X)
