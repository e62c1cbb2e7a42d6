"""Reliability (issue 6): bad input, extreme numbers, determinism, threads, installs.

skcrf must keep working or say clearly what is wrong: errors name the
sequence, token and feature, never surface as numba tracebacks, and training
never returns a NaN or silently untrained model.
"""

import datetime
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_info

import skcrf
from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer, TokenFeaturizer
from skcrf.features.arrays import as_feature_arrays
from skcrf.structures.chain._fused import (LOSS_HOT_BUDGET, MIN_LOSS_CHUNKS, fused_layout,
                                           nll_terms)
from skcrf.structures._parameters import StatePairs
from tests._chain_loss import chain_loss, unpack
from tests._threads import results_per_thread_count
from tests._toys import toy_fixtures

REPO = Path(__file__).resolve().parents[1]
TWO_THREADS = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")


# --- a read-only install, started first: it compiles every kernel (~15 s) ------


_READ_ONLY_SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("default")
    import skcrf
    from skcrf import CRFClassifier
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}, {"w": "a"}]]
    y = [["A", "B"], ["B", "A", "A"]]
    crf = CRFClassifier(alpha=0.1).fit(X, y)
    print(skcrf.__file__)
    print([labels.tolist() for labels in crf.predict(X)])
    print(crf.predict_marginals(X)[1].sum(axis=1).round(9).tolist())
""")


@pytest.fixture(scope="module", autouse=True)
def read_only_install(tmp_path_factory):
    """Import skcrf from a read-only copy where numba finds nowhere to cache.

    Started before this module's other tests so that its compilation overlaps
    them, and with NUMBA_OPT=0, which halves the compile time (15 s instead of
    28 s) and changes nothing of the caching tested. chmod does not stop root,
    so numba's candidate cache directories are made impossible instead:
    ``skcrf/__pycache__`` is a file, the user cache directory lies under
    /dev/null, and NUMBA_CACHE_DIR is unset.
    """
    root = tmp_path_factory.mktemp("read_only")
    package = root / "skcrf"
    shutil.copytree(REPO / "skcrf", package, ignore=shutil.ignore_patterns("__pycache__"))
    directories = [package, *(path for path in package.rglob("*") if path.is_dir())]
    for directory in directories:
        (directory / "__pycache__").write_text("not a directory")
    for path in [*package.rglob("*"), package]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(PYTHONPATH=str(root), HOME=str(root / "no-home"), NUMBA_OPT="0",
               XDG_CACHE_HOME="/dev/null/cache", PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen([sys.executable, "-c", _READ_ONLY_SCRIPT], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield package, process
    if process.poll() is None:
        process.kill()
        process.communicate()
    for path in [package, *package.rglob("*")]:
        if path.is_dir():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


# --- shared data -----------------------------------------------------------------


def _toy(n_sequences=30, seed=0):
    """Sequences whose label follows from the word: a CRF learns them exactly."""
    rng = np.random.default_rng(seed)
    words = {"the": "DET", "a": "DET", "cat": "N", "dog": "N", "runs": "V"}
    X, y = [], []
    for _ in range(n_sequences):
        seq = list(rng.choice(list(words), size=rng.integers(1, 6)))
        X.append([{"w": w, "len": len(w) / 4, "cap": w == "the"} for w in seq])
        y.append([words[w] for w in seq])
    return X, y


toy, fitted = toy_fixtures(_toy, lambda: CRFClassifier(alpha=0.1))


@pytest.fixture(scope="module")
def fitted_vectorizer(toy):
    return SequenceVectorizer().fit(toy[0])


def _tokens(X):
    """Raw (word,) tokens of feature-dict sequences, for TokenFeaturizer."""
    return [[tok["w"] for tok in seq] for seq in X]


# --- bad input, beyond tests/test_estimator.py ------------------------------------


def _entry_points(toy, fitted, fitted_vectorizer):
    """name -> callable(X) for every place that takes sequences."""
    X, y = toy
    return {
        "CRFClassifier.fit": lambda Z: CRFClassifier(max_iter=5).fit(Z, y),
        "CRFClassifier.predict": fitted.predict,
        "CRFClassifier.predict_marginals": fitted.predict_marginals,
        "CRFClassifier.score": lambda Z: fitted.score(Z, y),
        "SequenceVectorizer.fit": SequenceVectorizer().fit,
        "SequenceVectorizer.transform": fitted_vectorizer.transform,
        "TokenFeaturizer.fit_transform": TokenFeaturizer().fit_transform,
        "TokenFeaturizer.transform_dicts": TokenFeaturizer().transform_dicts,
    }


@pytest.mark.parametrize("bad, match", [
    ({"w": "a"}, r"must be a list of sequences .*got a dict.*wrapped in a list"),
    (np.zeros((3, 4)), r"must be a list of sequences .*got a ndarray of shape \(3, 4\)"),
    (sp.csr_matrix(np.eye(3)), r"must be a list of sequences .*got a csr_matrix of shape"),
    ("the cat", r"must be a list of sequences .*got a str"),
    (42, r"must be a list of sequences .*got a int"),
    ([[{"w": "a"}], (t for t in [{"w": "b"}])], r"Sequence 1 of X is a generator"),
], ids=["dict", "2d-array", "sparse", "str", "int", "generator-sequence"])
@pytest.mark.parametrize("entry", ["CRFClassifier.fit", "CRFClassifier.predict",
                                   "CRFClassifier.predict_marginals", "CRFClassifier.score",
                                   "SequenceVectorizer.fit", "SequenceVectorizer.transform",
                                   "TokenFeaturizer.fit_transform",
                                   "TokenFeaturizer.transform_dicts"])
def test_non_sequences_are_refused_everywhere(toy, fitted, fitted_vectorizer, entry, bad,
                                              match):
    call = _entry_points(toy, fitted, fitted_vectorizer)[entry]
    with pytest.raises(TypeError, match=match):
        call(bad)


def test_featurizer_messages_speak_of_tokens_not_dicts():
    with pytest.raises(TypeError, match=r"list of sequences of str tokens or tuples of str;"):
        TokenFeaturizer().fit_transform(np.zeros((2, 2)))


def test_generators_are_read_once_and_give_the_list_results(toy, fitted, fitted_vectorizer):
    X, y = toy
    from_lists = CRFClassifier(alpha=0.1).fit(X, y)
    from_generators = CRFClassifier(alpha=0.1).fit((s for s in X), (labels for labels in y))
    np.testing.assert_array_equal(from_lists.coef_, from_generators.coef_)
    for a, b in zip(fitted.predict(X), fitted.predict(iter(X))):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(fitted.predict_marginals(X), fitted.predict_marginals(s for s in X)):
        np.testing.assert_array_equal(a, b)
    assert fitted.score(iter(X), iter(y)) == fitted.score(X, y)
    expected = fitted_vectorizer.transform(X).matrix
    assert (fitted_vectorizer.transform(s for s in X).matrix != expected).nnz == 0
    tokens = _tokens(X)
    expected = TokenFeaturizer().fit_transform(tokens)
    got = TokenFeaturizer().fit_transform(s for s in tokens)
    assert list(got.feature_names) == list(expected.feature_names)
    assert (got.matrix != expected.matrix).nnz == 0


@pytest.mark.parametrize("value, why", [
    (b"bytes", "unsupported type"),
    (None, "unsupported type"),
    # a 1-D array is a vector (dense columns); a 2-D one is not (a model fitted
    # without vectors calls any array an unsupported type)
    (np.ones((2, 2)), "(a vector value must be a 1-D numpy array|unsupported type)"),
    (datetime.date(2024, 1, 1), "unsupported type"),
    (object(), "unsupported type"),
    (complex(0, 1), "unsupported type"),
    ({"nested": "x"}, "nested mappings are not supported"),
    (["ok", 3], "a list/tuple/set value may hold only str"),
], ids=["bytes", "None", "ndarray", "date", "object", "complex", "dict", "list-int"])
def test_unsupported_feature_values_are_named_at_fit_and_predict(fitted, toy, value, why):
    X, y = toy
    bad = [X[0], [X[1][0], {"w": "cat", "f": value}] + X[1][2:]]
    labels = [y[0], y[1]]
    pattern = rf"Sequence 1, token 1, feature 'f': {why}"
    with pytest.raises(TypeError, match=pattern):
        CRFClassifier().fit(bad, labels)
    for method in (fitted.predict, fitted.predict_marginals):
        with pytest.raises(TypeError, match=pattern):
            method(bad)


def test_custom_feature_values_are_named_at_transform():
    featurizer = TokenFeaturizer(custom=lambda w: {"f": None} if w == "dog" else {"f": 1.0})
    with pytest.raises(TypeError, match=r"Sequence 1, token 2, feature 'f': unsupported"):
        featurizer.transform([["the", "cat"], ["a", "big", "dog"]])


def _matrix_of(fitted, dtype):
    matrix = fitted.vectorizer_.transform(_toy(5, seed=3)[0])
    return SequenceMatrix(matrix.matrix.astype(dtype), matrix.offsets, matrix.feature_names)


def test_complex_feature_values_are_named_not_a_numba_error(fitted):
    clean = _matrix_of(fitted, np.float64)
    values = clean.matrix.astype(np.complex128)
    values.data[3] += 1j
    bad = SequenceMatrix(values, clean.offsets, clean.feature_names)
    row = np.searchsorted(values.indptr, 3, side="right") - 1
    seq = np.searchsorted(clean.offsets, row, side="right") - 1
    pattern = rf"Sequence {seq}, token {row - clean.offsets[seq]}, feature .*complex"
    with pytest.raises(TypeError, match=pattern):
        fitted.predict(bad)
    with pytest.raises(TypeError, match=pattern):
        CRFClassifier().fit(bad, [["N"] * n for n in clean.lengths])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, bool])
def test_other_real_dtypes_predict_like_float64(fitted, dtype):
    reference = _matrix_of(fitted, np.float64)
    if dtype in (np.int64, np.int8, bool):
        # integer types cannot hold len / 4: keep the integer-valued columns
        integral = reference.matrix.copy()
        integral.data = np.round(integral.data)
        reference = SequenceMatrix(integral, reference.offsets, reference.feature_names)
    other = SequenceMatrix(reference.matrix.astype(dtype), reference.offsets,
                           reference.feature_names)
    for a, b in zip(fitted.predict_marginals(reference), fitted.predict_marginals(other)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("labels, error, match", [
    # None is an unknown label (issue 45): what is left is a single class
    ([["N", None]], ValueError, r"y holds a single class"),
    ([["N", {"V", 1}]], TypeError, r"y mixes number, str \(alone or inside sets\)"),
    ([[1.0, float("nan")]], ValueError, r"Label of sequence 0, token 1 is NaN"),
    ([[True, False]], TypeError, r"y holds bool labels \(see sequence 0, token 0\)"),
    ([[("N",), ("V",)]], TypeError, r"y holds tuple labels"),
    ([["N", b"V"]], TypeError, r"y mixes bytes, str \(see sequence 0, token 1\)"),
    ([[1, 2.5]], TypeError, r"y mixes float, int \(see sequence 0, token 1\)"),
])
def test_bad_labels_are_named(labels, error, match):
    X = [[{"w": "a"}, {"w": "b"}]]
    with pytest.raises(error, match=match):
        CRFClassifier().fit(X, labels)


def test_score_checks_label_types_too(fitted, toy):
    X, y = toy
    with pytest.raises(TypeError, match=r"y mixes int, str \(see sequence 0, token 1\)"):
        fitted.score(X[:1], [[0] + y[0][1:]])


@pytest.mark.parametrize("X", [[], [[]], [[], [], []]], ids=["none", "one-empty", "all-empty"])
def test_empty_sequences_at_predict_give_empty_arrays(fitted, fitted_vectorizer, X):
    n_classes = fitted.classes_.shape[0]
    predicted = fitted.predict(X)
    marginals = fitted.predict_marginals(X)
    assert len(predicted) == len(marginals) == len(X)
    for labels, probs in zip(predicted, marginals):
        assert labels.shape == (0,) and labels.dtype == fitted.classes_.dtype
        assert probs.shape == (0, n_classes)
    transformed = fitted_vectorizer.transform(X)
    assert len(transformed) == len(X) and transformed.n_tokens == 0
    assert len(TokenFeaturizer().fit_transform(X)) == len(X)
    if X:
        with pytest.raises(ValueError, match="at least one token"):
            fitted.score(X, [[] for _ in X])


# --- numerics ----------------------------------------------------------------------


def _extreme_model(fitted, n_tokens, seed):
    """A fitted model with unary scores of +-1e4 and transitions of +-1e3, and its input.

    Each token has one active one-hot feature; the model's state weights are
    +-1e4 per (label, feature), so unary scores reach +-1e4.
    """
    rng = np.random.default_rng(seed)
    n_features, n_classes = 50, fitted.classes_.shape[0]
    model = CRFClassifier().set_params(**fitted.get_params())
    model.classes_ = fitted.classes_
    model.coef_ = rng.choice([-1e4, 1e4], size=(n_classes, n_features)) * rng.random(
        (n_classes, n_features))
    model.transition_coef_ = rng.uniform(-1e3, 1e3, size=(n_classes, n_classes))
    model.start_coef_ = rng.uniform(-1e3, 1e3, size=n_classes)
    model.end_coef_ = rng.uniform(-1e3, 1e3, size=n_classes)
    model.n_features_in_ = n_features
    model.feature_names_ = np.asarray([f"x{i}" for i in range(n_features)], dtype=object)
    model.vectorizer_ = None
    columns = rng.integers(0, n_features, size=n_tokens)
    matrix = sp.csr_matrix((np.ones(n_tokens), (np.arange(n_tokens), columns)),
                           shape=(n_tokens, n_features))
    return model, SequenceMatrix(matrix, [0, n_tokens])


def test_extreme_scores_on_a_100k_token_sequence_through_the_estimator(fitted):
    model, X = _extreme_model(fitted, 100_000, seed=1)
    (marginals,) = model.predict_marginals(X)
    assert marginals.shape == (100_000, model.classes_.shape[0])
    assert np.isfinite(marginals).all()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    (labels,) = model.predict(X)
    assert set(labels.tolist()) <= set(model.classes_.tolist())
    # with scores this far apart the most probable label is the Viterbi one
    agree = np.mean(model.classes_[marginals.argmax(axis=1)] == labels)
    assert agree > 0.99


def _binary_problem(n_tokens, n_features, n_classes, lengths, seed, per_token=4):
    """Random indicator features (a bias plus per_token others) and labels."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    assert offsets[-1] == n_tokens
    rows = np.repeat(np.arange(n_tokens), per_token + 1)
    columns = np.concatenate([np.zeros((n_tokens, 1), dtype=np.int64),
                              rng.integers(1, n_features, size=(n_tokens, per_token))],
                             axis=1).ravel()
    X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, columns)), shape=(n_tokens, n_features))
    X.data[:] = 1.0  # a repeated column sums to 2: keep every value 1
    label_ids = rng.integers(0, n_classes, size=n_tokens)
    return X, offsets, label_ids


def test_loss_kernel_stays_finite_on_extreme_weights_over_100k_tokens():
    n_tokens, n_classes = 100_000, 4
    X, offsets, label_ids = _binary_problem(n_tokens, 60, n_classes, [n_tokens], seed=2)
    pairs = StatePairs.observed(X, label_ids, n_classes)
    loss = chain_loss(X, offsets, label_ids, pairs, l2=0.0)
    rng = np.random.default_rng(3)
    w = np.empty(loss.n_parameters)
    pair_weights, transitions, start, end = unpack(w, loss.structure)
    pair_weights[:] = rng.choice([-2e3, 2e3], size=pairs.n_pairs)  # 5 features: +-1e4
    transitions[:] = rng.uniform(-1e3, 1e3, size=(n_classes, n_classes))
    start[:] = end[:] = 0.0
    value, grad = loss(w)
    assert np.isfinite(value) and np.isfinite(grad).all()
    fused = loss.terms.fused
    workspace = (np.full((fused.n_chunks, pairs.n_pairs), np.nan),
                 np.full((fused.n_chunks, fused.n_slots, n_classes), np.nan))
    log_z, expected, counts, start_counts, end_counts = nll_terms(
        *fused.kernel_args(), pairs.feature_ptr, pairs.labels, pair_weights.copy(),
        transitions.copy(), start.copy(), end.copy(), offsets, fused.hot_features,
        fused.merged_parts, *workspace)
    assert np.isfinite(log_z).all()
    # column 0 is a bias on every token: its expected counts are the marginal
    # sums, n_tokens in all when every marginal row sums to 1
    bias = slice(pairs.feature_ptr[0], pairs.feature_ptr[1])
    np.testing.assert_allclose(expected[bias].sum(), n_tokens, rtol=1e-9)
    np.testing.assert_allclose(counts.sum(), n_tokens - 1, rtol=1e-9)
    assert start_counts.sum() == pytest.approx(1.0) and end_counts.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("n_hot", [0, 7, None], ids=["all-cold", "some-hot", "all-hot"])
def test_loss_kernel_layout_changes_only_rounding(n_hot):
    """Dense rows for frequent features and pair lists for the others agree."""
    lengths = np.random.default_rng(4).integers(0, 9, size=200)
    X, offsets, label_ids = _binary_problem(int(lengths.sum()), 40, 3, lengths, seed=5)
    pairs = StatePairs.observed(X, label_ids, 3)
    loss = chain_loss(X, offsets, label_ids, pairs, l2=0.5)
    w = np.random.default_rng(6).normal(size=loss.n_parameters)
    reference_value, reference_grad = loss(w)
    fused = loss.terms.fused
    if n_hot is not None:
        frequency = np.bincount(X.indices, minlength=X.shape[1])
        fused.use_hot_features(np.argsort(-frequency, kind="stable")[:n_hot])
    for n_chunks in (1, 3, fused.n_chunks):
        fused.n_chunks = n_chunks
        value, grad = loss(w)
        np.testing.assert_allclose(value, reference_value, rtol=1e-12)
        np.testing.assert_allclose(grad, reference_grad, rtol=1e-10, atol=1e-10)


def test_loss_layout_bounds_memory():
    X, offsets, _ = _binary_problem(1000, 30_000, 9, [10] * 100, seed=7, per_token=20)
    n_chunks, hot_features = fused_layout(as_feature_arrays(X), offsets, n_pairs=2_000_000,
                                          n_classes=9)
    assert n_chunks == MIN_LOSS_CHUNKS
    assert hot_features.shape[0] * n_chunks * 9 <= LOSS_HOT_BUDGET
    assert np.unique(hot_features).shape[0] == hot_features.shape[0]


@pytest.mark.parametrize("alpha", [1e-12, 1e-6, 1e-2, 1.0, 1e3, 1e6])
def test_alpha_across_eighteen_orders_of_magnitude(toy, alpha):
    X, y = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # pure L2: the bound below is L2's (an L1 share zeroes every weight at large alpha)
        crf = CRFClassifier(alpha=alpha, l1_ratio=0.0, max_iter=200).fit(X, y)
    for name in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
        assert np.isfinite(getattr(crf, name)).all()
    for probs in crf.predict_marginals(X[:5]):
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    # the words decide the labels: learnt exactly up to alpha = 1; beyond, the
    # weights shrink towards zero but still beat the majority label
    score = crf.score(X, y)
    if alpha <= 1.0:
        assert score == 1.0
    else:
        labels = np.concatenate(y)
        assert score > max(np.mean(labels == label) for label in set(labels)) + 0.1
        # at the optimum alpha * w = -gradient of the NLL, whose entries are
        # differences of feature counts: at most n_tokens (values are <= 1)
        assert np.abs(crf.coef_).max() <= labels.shape[0] / alpha


@pytest.mark.parametrize("big, match", [
    (1e10, "made no progress"),
    (1e300, "made no progress"),
    (1.7e308, "diverged|made no progress"),
])
def test_overflowing_feature_values_stop_fit_with_advice(toy, big, match):
    X, y = toy
    X = [list(seq) for seq in X]
    X[2] = [dict(X[2][0], big=big)] + X[2][1:]
    with pytest.raises(ValueError, match=match) as error:
        CRFClassifier(alpha=1.0).fit(X, y)
    message = str(error.value)
    assert f"largest feature value is {big:.3g}, at sequence 2, token 0, feature 'big'" \
        in message
    assert "Scale real-valued features" in message


def test_objective_overflowing_at_zero_weights_says_training_cannot_start():
    # each value is finite, but their sums in the gradient at zero weights are not
    X = [[{"big": 1e308}, {"big": 1e308}]] * 5
    with pytest.raises(ValueError, match="Training cannot start.*feature 'big'"):
        CRFClassifier(alpha=1.0).fit(X, [["x", "y"]] * 5)


def test_overflowing_gradient_is_reported_as_infinite_loss():
    X, offsets, label_ids = _binary_problem(20, 5, 2, [10, 10], seed=8)
    X = X.astype(np.float64)
    X.data[:] = 1e308  # each value is finite, sums of them are not
    pairs = StatePairs.observed(X, label_ids, 2)
    loss = chain_loss(X, offsets, label_ids, pairs, l2=0.0)
    value, _ = loss(np.zeros(loss.n_parameters))
    assert value == np.inf


# --- determinism -------------------------------------------------------------------


def _sentence_features(sentence):
    return [{"w": w.lower(), "title": w.istitle(), "pos": p, "len": len(w) / 10,
             "prev": sentence[i - 1][0].lower() if i else "<s>"}
            for i, (w, p) in enumerate(sentence)]


@TWO_THREADS
def test_real_corpus_fit_and_marginals_bitwise_equal_for_1_and_2_threads(tagged_small):
    X_train, y_train, X_test, _ = tagged_small
    X_train = [_sentence_features(s) for s in X_train[:150]]
    X_test = [_sentence_features(s) for s in X_test[:50]]
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key, n_jobs in (("one", 1), ("two", 2), ("again", 2)):
            models[key] = CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=25,
                                        n_jobs=n_jobs).fit(X_train, y_train[:150])
    one = models["one"]
    for other in (models["two"], models["again"]):
        for name in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
            assert np.array_equal(getattr(one, name), getattr(other, name)), name
        assert one.loss_curve_ == other.loss_curve_
    marginals = {}
    for n_jobs in (1, 2):
        one.set_params(n_jobs=n_jobs)
        marginals[n_jobs] = one.predict_marginals(X_test)
    for a, b in zip(marginals[1], marginals[2]):
        assert np.array_equal(a, b)


@TWO_THREADS
def test_loss_bitwise_equal_for_1_and_2_threads_with_cold_features():
    lengths = np.random.default_rng(9).integers(0, 30, size=300)
    X, offsets, label_ids = _binary_problem(int(lengths.sum()), 500, 5, lengths, seed=10)
    pairs = StatePairs.observed(X, label_ids, 5)
    loss = chain_loss(X, offsets, label_ids, pairs, l2=0.1)
    fused = loss.terms.fused
    fused.use_hot_features(fused.hot_features[:20])
    w = np.random.default_rng(11).normal(size=loss.n_parameters)
    results = results_per_thread_count(lambda: loss(w))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])


# --- concurrency ---------------------------------------------------------------------


def _blas_threads():
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_concurrent_predicts_equal_serial_ones(fitted):
    X = _toy(400, seed=12)[0]
    serial_labels = fitted.predict(X)
    serial_marginals = fitted.predict_marginals(X)
    blas_before = _blas_threads()
    start = threading.Barrier(4)

    def work(i):
        start.wait()  # all four threads inside the kernels together
        return fitted.predict(X) if i % 2 == 0 else fitted.predict_marginals(X)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(8)))
    for i, result in enumerate(results):
        expected = serial_labels if i % 2 == 0 else serial_marginals
        assert len(result) == len(expected)
        for a, b in zip(result, expected):
            assert np.array_equal(a, b)
    # predict leaves the process-wide BLAS setting alone
    assert _blas_threads() == blas_before


def test_overlapping_fits_share_one_blas_limit(monkeypatch):
    """The first fit in holds BLAS to one thread; only the last one out restores it.

    A fake stands in for threadpoolctl: OpenBLAS itself ignores some thread
    counts set from threads other than the main one, which would make a check
    of the real setting flaky (the logic is what is tested here).
    """
    from skcrf._utils import parallel as _parallel

    events = []

    class FakeLimits:
        def __init__(self, limits, user_api):
            events.append(("limit", limits, user_api))

        def restore_original_limits(self):
            events.append(("restore",))

    monkeypatch.setattr(_parallel, "threadpool_limits", FakeLimits)
    steps = {name: threading.Event() for name in ("a_in", "b_in", "a_out")}

    def fit_a():
        with _parallel.kernel_threads(1, hold_blas=True):
            steps["a_in"].set()
            steps["b_in"].wait(timeout=30)
            events.append(("a leaves",))
        steps["a_out"].set()

    def fit_b():
        steps["a_in"].wait(timeout=30)
        with _parallel.kernel_threads(1, hold_blas=True):
            steps["b_in"].set()
            steps["a_out"].wait(timeout=30)
            events.append(("b leaves",))

    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(fit_a), pool.submit(fit_b)]:
            future.result(timeout=60)
    assert events == [("limit", 1, "blas"), ("a leaves",), ("b leaves",), ("restore",)]
    # one at a time: each sets and restores; prediction does not touch BLAS
    events.clear()
    for _ in range(2):
        with _parallel.kernel_threads(None, hold_blas=True):
            pass
    with _parallel.kernel_threads(None):
        pass
    assert events == [("limit", 1, "blas"), ("restore",)] * 2


def test_concurrent_predicts_share_the_kernel_threads():
    """Predictions from several threads at once, each driving the shared kernel pool,
    give the serial result bit for bit."""
    from concurrent.futures import ThreadPoolExecutor

    X = [[{"w": str(i % 7), "v": i / 10} for i in range(n)] for n in range(1, 60)]
    y = [["A" if tok["v"] > 2 else "B" for tok in seq] for seq in X]
    crf = skcrf.CRFClassifier(alpha=0.1, max_iter=20, n_jobs=2).fit(X, y)
    X_big = X * 40  # past SMALL_BATCH_TOKENS: the calls use the pool
    serial = crf.predict_marginals(X_big)
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: crf.predict_marginals(X_big), range(8)))
    for run in runs:
        for got, want in zip(run, serial):
            np.testing.assert_array_equal(got, want)


# --- fuzzing -------------------------------------------------------------------------


_keys = st.sampled_from(["w", "pos", "n", "flag", "suffix"])
_values = st.one_of(st.sampled_from(["a", "b", "c", "Ñ", ""]),
                    st.floats(-5, 5, allow_nan=False), st.integers(-3, 3), st.booleans())
_tokens_st = st.dictionaries(_keys, _values, max_size=4)
_sequences = st.lists(st.lists(_tokens_st, max_size=6), min_size=1, max_size=5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=_sequences, X_new=_sequences, seed=st.integers(0, 2**16),
       n_labels=st.integers(2, 3), l1_ratio=st.sampled_from([0.0, 0.5]))
def test_random_inputs_fit_and_predict_or_say_why(X, X_new, seed, n_labels, l1_ratio):
    rng = np.random.default_rng(seed)
    labels = ["B-X", "I-X", "O"][:n_labels]
    y = [list(rng.choice(labels, size=len(seq))) for seq in X]
    crf = CRFClassifier(alpha=0.5, l1_ratio=l1_ratio, max_iter=15)
    n_distinct = len({label for seq in y for label in seq})
    if sum(map(len, X)) == 0:
        with pytest.raises(ValueError, match="no tokens"):
            crf.fit(X, y)
        return
    if n_distinct < 2:
        with pytest.raises(ValueError, match="single class"):
            crf.fit(X, y)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
    assert np.isfinite(crf.coef_).all() and np.isfinite(crf.transition_coef_).all()
    for Z in (X, X_new):
        predicted = crf.predict(Z)
        marginals = crf.predict_marginals(Z)
        assert len(predicted) == len(marginals) == len(Z)
        for seq, labels_, probs in zip(Z, predicted, marginals):
            assert labels_.shape == (len(seq),)
            assert set(labels_.tolist()) <= set(crf.classes_.tolist())
            assert probs.shape == (len(seq), crf.classes_.shape[0])
            assert np.isfinite(probs).all()
            np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)


# --- the read-only install, last: its subprocess ran during the tests above ----------


def test_read_only_install_works_without_a_cache(read_only_install):
    package, process = read_only_install
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "CacheUnavailableWarning" in stderr and "NUMBA_CACHE_DIR" in stderr
    file_line, labels, sums = stdout.strip().splitlines()
    assert Path(file_line).parent == package  # the copy, not the checkout
    assert labels == str([["A", "B"], ["B", "A", "A"]])
    assert sums == str([1.0, 1.0, 1.0])
    # numba could write nothing: the copy holds only what we put there
    # the sources and the package data (py.typed, the sample corpus), copied with them
    sources = [p.relative_to(REPO / "skcrf") for p in (REPO / "skcrf").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts]
    markers = {folder.relative_to(REPO / "skcrf") / "__pycache__"
               for folder in [REPO / "skcrf", *(REPO / "skcrf").rglob("*")]
               if folder.is_dir() and "__pycache__" not in folder.parts}
    assert sorted(p.relative_to(package) for p in package.rglob("*") if p.is_file()) == sorted(
        sources + list(markers))
    assert skcrf.__file__ != str(package / "__init__.py")


def test_kernels_start_no_numba_threading_layer():
    """The kernels run on skcrf's own threads: numba's OpenMP / TBB / workqueue layer,
    with its spin-waits and its unsafe concurrent launches, is never started."""
    code = ("import numba, skcrf; X = [[{'a': 1}, {'b': 1}]] * 3000; y = [['x', 'y']] * 3000; "
            "crf = skcrf.CRFClassifier(max_iter=2, n_jobs=2).fit(X, y); "
            "crf.predict(X); crf.predict_marginals(X)\n"
            "try:\n    print(numba.threading_layer())\nexcept ValueError:\n    print('none')")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "none"


def test_a_huge_sample_weight_is_named_not_the_feature_values(toy):
    # issue 43, items 19 and 28: the message blamed (moderate) feature values
    X, y = toy
    weights = np.ones(len(X))
    weights[1] = 1e300
    with pytest.raises(ValueError, match=r"sample_weight reaches 1e\+300 \(sequence 1\)") \
            as error:
        CRFClassifier(alpha=1.0).fit(X, y, sample_weight=weights)
    assert "Scale real-valued features" not in str(error.value)
    assert "scale real-valued features" not in str(error.value)


def test_score_with_huge_finite_weights_is_a_number(toy):
    # issue 43, item 20: their sum overflowed and score returned NaN
    X, y = toy
    crf = CRFClassifier(alpha=1.0, max_iter=20).fit(X, y)
    weights = np.full(len(X), 1e308)
    assert crf.score(X, y, sample_weight=weights) == crf.score(X, y)


def test_no_progress_says_what_was_observed_and_blames_nothing_unknown(toy, monkeypatch):
    # issue 43, item 28: a fit that stays at zero for another cause (here a solver
    # that returns its start) was blamed on the feature values
    from skcrf._estimators import base
    from skcrf.learning.lbfgs import SolverResult, Stop

    def no_step(objective, w0, **kwargs):
        return SolverResult(w=np.zeros_like(w0), n_iter=1, stop=Stop.LINE_SEARCH,
                            loss_curve=[1602.0])

    monkeypatch.setattr(base, "lbfgs", no_step)
    X, y = toy
    with pytest.raises(ValueError, match="no likely cause was found") as error:
        CRFClassifier(alpha=1.0).fit(X, y)
    message = str(error.value)
    assert "objective was 1602 at the start" in message
    assert "scale real-valued features" not in message.lower()
