"""Faults an adversarial review found (issue 15), each reproduced before its fix.

A hostile user changes inputs after they were checked, refits an estimator
while another thread predicts with it, interrupts a fit, feeds extreme values,
damages numba's cache or passes labels numpy cannot hold in one integer type.
skcrf must give a clear error or the right answer, never a segfault, a numba
traceback or a silently wrong result.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer, TokenFeaturizer


def _sequence_matrix(n_tokens=5, offsets=(0, 2, 5)):
    return SequenceMatrix(sp.eye(n_tokens, format="csr"), offsets=list(offsets))


@pytest.fixture(scope="module")
def matrix_model():
    """A CRFClassifier fitted on a small SequenceMatrix, and that matrix."""
    rng = np.random.default_rng(0)
    matrix = sp.random(60, 8, density=0.4, format="csr", random_state=0)
    X = SequenceMatrix(matrix, offsets=np.arange(0, 61, 6))
    y = [rng.choice(["A", "B", "C"], size=6) for _ in range(10)]
    return CRFClassifier(alpha=0.1, max_iter=30).fit(X, y), X


# --- 1. offsets checked once, changed later -------------------------------------


def test_offsets_cannot_be_changed_in_place(matrix_model):
    """Writing past the tokens used to make the kernels index out of bounds (segfault)."""
    crf, X = matrix_model
    X = X[np.arange(len(X))]
    with pytest.raises(ValueError, match="read-only"):
        X.offsets[-1] = 50_000_000
    with pytest.raises(ValueError):
        X.offsets.setflags(write=True)
    assert X.offsets[-1] == X.n_tokens
    assert len(crf.predict(X)) == len(X)


def test_offsets_assignment_is_checked_like_the_constructor():
    X = _sequence_matrix()
    with pytest.raises(ValueError, match="end at the number of rows"):
        X.offsets = [0, 2, 50_000_000]
    with pytest.raises(ValueError, match="non-decreasing"):
        X.offsets = [0, 4, 2, 5]
    X.offsets = [0, 1, 5]
    assert X.lengths.tolist() == [1, 4]
    assert not X.offsets.flags.writeable


def test_constructor_leaves_the_callers_offsets_writable():
    offsets = np.array([0, 2, 5])
    X = _sequence_matrix(offsets=offsets)
    assert offsets.flags.writeable
    offsets[-1] = 50_000_000  # the caller's array, not the matrix's
    assert X.offsets[-1] == 5


@pytest.mark.parametrize("offsets, match", [
    ([0, 2.7, 4], r"offsets\[1\] is 2.7"),
    ([0.0, np.nan, 4.0], r"offsets\[1\] is nan"),
    (np.array([0, 2 ** 63, 2 ** 63 + 4], dtype=np.uint64), "range"),
    ([False, True, True], "integers"),
    (["0", "2", "4"], "integers"),
])
def test_offsets_must_be_integers(offsets, match):
    """Float offsets used to be truncated silently (2.7 became 2)."""
    with pytest.raises((ValueError, TypeError), match=match):
        SequenceMatrix(sp.eye(4, format="csr"), offsets=offsets)


def test_whole_float_offsets_are_taken_as_integers():
    X = SequenceMatrix(sp.eye(4, format="csr"), offsets=[0.0, 2.0, 4.0])
    assert X.offsets.dtype == np.int64 and X.lengths.tolist() == [2, 2]


def test_matrix_changed_in_place_is_refused_before_the_kernels(matrix_model):
    """The matrix may change in place (that counts), so it is re-checked at each call."""
    crf, X = matrix_model
    X = X[np.arange(len(X))]
    X.matrix.indices[0] = 50_000_000
    with pytest.raises(ValueError, match="changed in place"):
        crf.predict(X)
    X = X[np.arange(len(X))]
    X.matrix.resize((X.n_tokens - 1, X.n_features))
    with pytest.raises(ValueError, match="rows"):
        crf.predict(X)


def test_offsets_survive_pickling_read_only():
    import pickle

    X = pickle.loads(pickle.dumps(_sequence_matrix()))
    assert not X.offsets.flags.writeable
    assert X.lengths.tolist() == [2, 3]


# --- 2. predict in one thread while another refits -------------------------------


def _two_models_data():
    """Two training sets with different labels and feature sets (the second's larger)."""
    X_a = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}, {"w": "c"}]]
    y_a = [["A", "B"], ["B", "A", "C"]]
    X_b = [[{"w": "a", "v": 1}, {"w": "d"}], [{"w": "b"}, {"u": "c"}, {"w": "c"}]]
    y_b = [["Y", "X"], ["Z", "Y", "X"]]
    return X_a, y_a, X_b, y_b


def test_predict_overlapping_a_refit_uses_the_model_it_started_with(monkeypatch):
    """A fit that completes while predict vectorizes must not change that predict.

    Predict used to read the vectorizer, then ``classes_`` and the weights:
    a refit finishing in between gave the new model's labels for the old
    model's features (or, with fewer features, out-of-bounds reads).
    """
    X_a, y_a, X_b, y_b = _two_models_data()
    crf = CRFClassifier(alpha=0.1).fit(X_a, y_a)
    expected = [labels.tolist() for labels in crf.predict(X_a)]
    expected_marginals = crf.predict_marginals(X_a)
    expected_score = crf.score(X_a, y_a)

    def refit_meanwhile(method):
        crf.fit(X_a, y_a)
        transform = crf.vectorizer_.transform

        def run(X):
            crf.fit(X_b, y_b)  # "another thread" finishes a fit meanwhile
            return transform(X)

        monkeypatch.setattr(crf.vectorizer_, "transform", run)
        return method(X_a)

    assert [labels.tolist() for labels in refit_meanwhile(crf.predict)] == expected
    for got, want in zip(refit_meanwhile(crf.predict_marginals), expected_marginals):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert refit_meanwhile(lambda X: crf.score(X, y_a)) == expected_score
    assert list(crf.classes_) == ["X", "Y", "Z"]  # the refits did happen


class _WatchedCRF(CRFClassifier):
    """Runs a predict whenever fit sets a fitted attribute: what a concurrent thread may see."""

    watch = None

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name.endswith("_") and not name.startswith("__") and _WatchedCRF.watch is not None:
            target, X, seen = _WatchedCRF.watch
            seen.append([labels.tolist() for labels in target.predict(X)])


def test_fit_swaps_in_the_new_model_at_once():
    """No predict during a refit sees part of the old model and part of the new one."""
    X_a, y_a, X_b, y_b = _two_models_data()
    crf = _WatchedCRF(alpha=0.1).fit(X_a, y_a)
    old = [labels.tolist() for labels in crf.predict(X_a)]
    seen = []
    _WatchedCRF.watch = (crf, X_a, seen)
    try:
        crf.fit(X_b, y_b)
    finally:
        _WatchedCRF.watch = None
    new = [labels.tolist() for labels in crf.predict(X_a)]
    assert new != old and seen
    assert all(prediction in (old, new) for prediction in seen)


def test_a_failed_refit_keeps_the_previous_model():
    X_a, y_a, X_b, _ = _two_models_data()
    crf = CRFClassifier(alpha=0.1).fit(X_a, y_a)
    coef = crf.coef_
    with pytest.raises(ValueError):
        crf.fit(X_b, [["Y", "X"], ["Z", "Y"]])  # a label short
    assert crf.coef_ is coef and list(crf.classes_) == ["A", "B", "C"]


def test_concurrent_predicts_and_refits_see_one_model_or_the_other():
    import threading

    X_a, y_a, X_b, y_b = _two_models_data()
    crf = CRFClassifier(alpha=0.1)
    one = [labels.tolist() for labels in crf.fit(X_a, y_a).predict(X_a)]
    other = [labels.tolist() for labels in crf.fit(X_b, y_b).predict(X_a)]
    assert one != other
    stop = threading.Event()
    mixed = []

    def refit():
        while not stop.is_set():
            crf.fit(X_a, y_a)
            crf.fit(X_b, y_b)

    thread = threading.Thread(target=refit)
    thread.start()
    try:
        for _ in range(300):
            prediction = [labels.tolist() for labels in crf.predict(X_a)]
            if prediction not in (one, other):
                mixed.append(prediction)
    finally:
        stop.set()
        thread.join()
    assert not mixed


def test_fit_warnings_still_point_at_the_callers_line():
    X_a, y_a, _, _ = _two_models_data()
    with pytest.warns(ConvergenceWarning) as record:
        CRFClassifier(alpha=0.1, max_iter=1).fit(X_a, y_a)
    assert record[0].filename == __file__


# --- 12. labels numpy holds in no integer type; labels of the wrong type ---------


@pytest.mark.parametrize("labels", [[-1, 2 ** 64 - 1], [0, 2 ** 70]])
def test_integer_labels_beyond_every_integer_dtype_are_refused(labels):
    """They used to become float64 classes, which merge labels that differ."""
    X = [[{"w": "a"}, {"w": "b"}]]
    with pytest.raises(ValueError, match="no single integer type"):
        CRFClassifier().fit(X, [labels])
    crf = CRFClassifier(alpha=0.1).fit(X, [[0, 1]])
    with pytest.raises(ValueError, match="no single integer type"):
        crf.score(X, [labels])


def test_integer_labels_of_uint64_stay_integers():
    X = [[{"w": "a"}, {"w": "b"}]]
    crf = CRFClassifier(alpha=0.1).fit(X, [[2 ** 64 - 1, 5]])
    assert crf.classes_.dtype == np.uint64
    assert crf.classes_.tolist() == [5, 2 ** 64 - 1]
    assert crf.predict(X)[0].tolist() == [2 ** 64 - 1, 5]


@pytest.mark.parametrize("fit_labels, score_labels", [
    (["A", "B"], [0, 1]),
    ([0, 1], ["0", "1"]),
    (["A", "B"], [b"A", b"B"]),
])
def test_score_refuses_labels_of_another_type_than_classes(fit_labels, score_labels):
    """It used to return 0.0: no label of another type ever equals a class."""
    X = [[{"w": "a"}, {"w": "b"}]]
    crf = CRFClassifier(alpha=0.1).fit(X, [fit_labels])
    with pytest.raises(TypeError, match="classes_"):
        crf.score(X, [score_labels])


def test_score_compares_ints_and_floats_by_value():
    X = [[{"w": "a"}, {"w": "b"}]]
    crf = CRFClassifier(alpha=0.1).fit(X, [[0, 1]])
    assert crf.score(X, [[0.0, 1.0]]) == 1.0


# --- 4. Ctrl-C and MemoryError inside a kernel ----------------------------------


def _slow_training_set(n_tokens=40_000, n_classes=20):
    """A SequenceMatrix big enough that one loss evaluation takes a good fraction of a second."""
    rng = np.random.default_rng(0)
    matrix = sp.random(n_tokens, 500, density=0.02, format="csr", random_state=0)
    offsets = np.arange(0, n_tokens + 1, 20)
    labels = rng.integers(0, n_classes, n_tokens)
    return SequenceMatrix(matrix, offsets), np.split(labels, offsets[1:-1])


def test_ctrl_c_inside_a_training_kernel_is_a_keyboard_interrupt(monkeypatch):
    """It surfaced as ``SystemError: CPUDispatcher(nll_terms) returned a result with an
    exception set``; the previous model must also survive."""
    import _thread
    import threading

    import skcrf.structures.chain._fused as fused

    X, y = _slow_training_set()
    crf = CRFClassifier(alpha=1.0, max_iter=1).fit(X, y)
    coef, classes = crf.coef_.copy(), crf.classes_
    kernel = fused.nll_terms
    calls = []

    def interrupted_kernel(*args, **kwargs):
        # the interrupt arrives while the (nogil) kernel runs, as Ctrl-C would
        if not calls:
            threading.Timer(0.05, _thread.interrupt_main).start()
        calls.append(1)
        return kernel(*args, **kwargs)

    monkeypatch.setattr(fused, "nll_terms", interrupted_kernel)
    with pytest.raises(KeyboardInterrupt):
        crf.set_params(max_iter=200, tol=0).fit(X, y)
    assert calls
    np.testing.assert_array_equal(crf.coef_, coef)
    assert crf.classes_ is classes and crf.max_iter == 200


def _interrupted_in_a_kernel(name):
    """A stand-in for kernel ``name`` that fails as a Ctrl-C during a numba kernel does:
    a SystemError chained to the pending KeyboardInterrupt."""
    def kernel(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as pending:
            raise SystemError(f"CPUDispatcher(<function {name}>) returned a result with an "
                              f"exception set") from pending
    return kernel


@pytest.mark.parametrize("module, kernel, call", [
    ("skcrf.features._slot_matrix", "slot_features",
     lambda: TokenFeaturizer().transform([["a", "b"]] * 3000)),
    ("skcrf.features._slot_matrix", "slot_features",
     lambda: make_pipeline(TokenFeaturizer(), SequenceVectorizer()).fit_transform(
         [["a", "b"]] * 3000)),
    # an output of a few thousand tokens is built when read, past 96 by the kernel
    ("skcrf.features._slot_matrix", "slot_features",
     lambda: TokenFeaturizer().transform([["a", "b"]] * 100).n_tokens),
    # and read into a vectorizer's columns by another kernel
    ("skcrf.features._small_columns", "slot_columns",
     lambda: SequenceVectorizer().fit([[{"bias": 1.0}]]).transform(
         TokenFeaturizer().transform([["a", "b"]]))),
    ("skcrf.features._csr_arrays", "sort_row_indices",
     lambda: SequenceVectorizer().fit_transform([[{"w": "a"}]])),
    ("skcrf.features._csr_arrays", "sort_row_indices",
     lambda: SequenceVectorizer().fit([[{"w": "a"}]]).transform([[{"w": "a"}]])),
])
def test_ctrl_c_inside_a_featurizing_kernel_is_a_keyboard_interrupt(monkeypatch, module, kernel,
                                                                   call):
    """TokenFeaturizer.transform gave ``SystemError: CPUDispatcher(<function
    slot_features>) returned a result with an exception set`` in 15 of 40 timed
    Ctrl-Cs (issue 32, item 9)."""
    import importlib

    monkeypatch.setattr(importlib.import_module(module), kernel,
                        _interrupted_in_a_kernel(kernel))
    with pytest.raises(KeyboardInterrupt):
        call()


def test_memory_error_in_a_threaded_kernel_is_a_memory_error():
    """A MemoryError raised by a kernel on a pool thread reaches the caller as itself."""
    from skcrf._utils.parallel import kernel_threads
    from skcrf.inference._runtime.batch import compiled, run_chunks

    @compiled()
    def allocate_per_chunk(chunk_lo, chunk_hi, size, out):
        for c in range(chunk_lo, chunk_hi):
            values = np.empty(size)
            values[:] = 1.0
            out[c] = values[0]

    out = np.zeros(8)
    with kernel_threads(2):
        run_chunks(allocate_per_chunk, 8, 3, out)
    assert out.tolist() == [1.0] * 8
    with pytest.raises(MemoryError), kernel_threads(2):
        run_chunks(allocate_per_chunk, 8, 1 << 44, out)
    with pytest.raises(SystemError), kernel_threads(None):
        raise SystemError("some other error")


# --- 3. memory: nothing of O(n_chunks * n_classes ** 2) that the caller does not use


def _peak_bytes(function, *args):
    """Peak memory traced while ``function(*args)`` runs (numba allocates through
    PyMem_RawMalloc, which tracemalloc sees), and its result."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = function(*args)
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def _chain_batch(n_classes, n_sequences=40, length=15, seed=0):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n_sequences * length, n_classes))
    transitions = rng.normal(size=(n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    offsets = np.arange(0, n_sequences * length + 1, length)
    return unary, transitions, start, end, offsets


def test_marginals_allocate_no_transition_counts():
    """predict_marginals took (n_chunks, C, C) counts it never read: ~2 GiB for
    2,000 classes and 600 tokens, a 9 MiB result."""
    from skcrf.inference.chain.order1 import forward_backward

    n_classes = 500
    batch = _chain_batch(n_classes)
    forward_backward(*batch, False)  # compiled before measuring
    peak, (log_z, marginals, counts) = _peak_bytes(forward_backward, *batch, False)
    square = n_classes ** 2 * 8
    # the output, the exponentials of the transitions and their transpose (two
    # squares, for the forward and the backward step to read rows; the exact
    # pass's two more only if some sequence needs it) and per-chunk rows;
    # before: 40 chunks of counts, 43 squares
    assert peak < marginals.nbytes + 3 * square, peak / 2 ** 20
    assert counts.size == 0
    np.testing.assert_array_equal(marginals, forward_backward(*batch, True)[1])


def test_order2_marginals_allocate_no_trigram_counts():
    from skcrf.inference.chain.order2 import forward_backward2

    n_classes = 60
    unary, transitions, start, end, offsets = _chain_batch(n_classes, 10, 5)
    trigram = np.random.default_rng(1).normal(size=(n_classes,) * 3)
    forward_backward2(unary, transitions, trigram, start, end, offsets, False)
    peak, (_, marginals, pairs, triples) = _peak_bytes(
        forward_backward2, unary, transitions, trigram, start, end, offsets, False)
    assert pairs.size == 0 and triples.size == 0
    # the potentials take a few cubes; the counts would take one more
    cube = n_classes ** 3 * 8
    full = forward_backward2(unary, transitions, trigram, start, end, offsets, True)
    np.testing.assert_array_equal(marginals, full[1])
    peak_with_counts, _ = _peak_bytes(
        forward_backward2, unary, transitions, trigram, start, end, offsets, True)
    assert peak <= peak_with_counts - cube


def test_fit_memory_does_not_grow_with_chunks_times_classes_squared():
    """Fit kept one (C, C) partial count per chunk of sequences: 859 classes and
    2,000 tokens took 481 MiB for an 11 MiB model."""
    n_classes, n_sequences, length = 300, 60, 10
    rng = np.random.default_rng(0)
    matrix = sp.random(n_sequences * length, 40, density=0.1, format="csr", random_state=0)
    X = SequenceMatrix(matrix, np.arange(0, n_sequences * length + 1, length))
    labels = rng.integers(0, n_classes, n_sequences * length)
    labels[:n_classes] = np.arange(n_classes)
    y = np.split(labels, X.offsets[1:-1])
    crf = CRFClassifier(alpha=1.0, max_iter=2)
    crf.fit(X, y)  # compiled before measuring
    peak, _ = _peak_bytes(crf.fit, X, y)
    square = n_classes ** 2 * 8
    # model, solver history and potentials take some squares; before, 60 more
    assert peak < 24 * square, peak / 2 ** 20


# --- 6. a huge finite feature value on one token ---------------------------------


#: A feature value of 1e17 times weights of order 1: exact arithmetic pins its
#: token to one label; the other tokens must keep their digits.
HUGE = 1e17


def _pinned(row):
    """The limit of a huge score row: its best label only, every other one forbidden."""
    pinned = np.full_like(row, -np.inf)
    pinned[np.argmax(row)] = 0.0
    return pinned


def _huge_first_token(n_classes=4, n_tokens=6, seed=3):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n_tokens, n_classes))
    weights = rng.normal(size=n_classes)
    big, reference = unary.copy(), unary.copy()
    big[0] = HUGE * weights + unary[0]
    reference[0] = _pinned(big[0])
    transitions = rng.normal(size=(n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    offsets = np.array([0, n_tokens])
    return big, reference, transitions, start, end, offsets


@pytest.mark.parametrize("seed", range(4))
def test_huge_unary_leaves_the_other_tokens_exact_order1(seed):
    from skcrf.inference.chain.order1 import forward_backward, viterbi

    big, reference, transitions, start, end, offsets = _huge_first_token(seed=seed)
    _, got, _ = forward_backward(big, transitions, start, end, offsets, False)
    _, want, _ = forward_backward(reference, transitions, start, end, offsets, False)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_array_equal(viterbi(big, transitions, start, end, offsets),
                                  viterbi(reference, transitions, start, end, offsets))
    # training's counts too
    _, _, got_counts = forward_backward(big, transitions, start, end, offsets, True)
    _, _, want_counts = forward_backward(reference, transitions, start, end, offsets, True)
    np.testing.assert_allclose(got_counts, want_counts, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_huge_unary_leaves_the_other_tokens_exact_order2(seed):
    from skcrf.inference.chain.order2 import forward_backward2, viterbi2

    big, reference, transitions, start, end, offsets = _huge_first_token(seed=seed)
    trigram = np.random.default_rng(seed).normal(size=(big.shape[1],) * 3)
    got = forward_backward2(big, transitions, trigram, start, end, offsets, True)
    want = forward_backward2(reference, transitions, trigram, start, end, offsets, True)
    for got_part, want_part in zip(got[1:], want[1:]):
        np.testing.assert_allclose(got_part, want_part, atol=1e-12)
    np.testing.assert_array_equal(
        viterbi2(big, transitions, trigram, start, end, offsets),
        viterbi2(reference, transitions, trigram, start, end, offsets))


@pytest.mark.parametrize("seed", range(4))
def test_huge_transition_feature_leaves_the_other_tokens_exact(seed):
    """Transition features carry the value into the edges of its token."""
    from skcrf.inference.chain.edges import forward_backward_edges, viterbi_edges

    _, _, transitions, start, end, offsets = _huge_first_token(seed=seed)
    rng = np.random.default_rng(seed + 10)
    n_tokens, n_classes = 6, transitions.shape[0]
    unary = rng.normal(size=(n_tokens, n_classes))
    edges = np.broadcast_to(transitions, (n_tokens, n_classes, n_classes)).copy()
    big, reference = edges.copy(), edges.copy()
    big[2] += HUGE * rng.normal(size=(n_classes, n_classes))
    reference[2] = _pinned(big[2].ravel()).reshape(n_classes, n_classes)
    _, got, got_pairs = forward_backward_edges(unary, big, start, end, offsets, True)
    _, want, want_pairs = forward_backward_edges(unary, reference, start, end, offsets, True)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got_pairs, want_pairs, atol=1e-12)
    np.testing.assert_array_equal(viterbi_edges(unary, big, start, end, offsets),
                                  viterbi_edges(unary, reference, start, end, offsets))


def test_huge_feature_value_at_predict_changes_only_its_own_token():
    """1e17 on token 0 made the other tokens' marginals uniform and changed their labels."""
    rng = np.random.default_rng(0)
    X = [[{"w": str(rng.choice(list("abcd"))), "x": float(rng.normal())}
          for _ in range(6)] for _ in range(40)]
    y = [[("A" if token["w"] in "ab" else "B") if token["x"] < 0.5 else "C"
          for token in sequence] for sequence in X]
    crf = CRFClassifier(alpha=0.1).fit(X, y)
    sequence = [dict(token) for token in X[0]]
    big, pinned = [dict(token) for token in sequence], [dict(token) for token in sequence]
    big[0]["x"] = HUGE
    pinned[0]["x"] = 1e4  # as pinned in exact arithmetic: exp(-1e4) is 0
    np.testing.assert_allclose(crf.predict_marginals([big])[0],
                               crf.predict_marginals([pinned])[0], atol=1e-9)
    assert crf.predict([big])[0].tolist() == crf.predict([pinned])[0].tolist()


@pytest.mark.parametrize("value", [1e308, -1e308])
@pytest.mark.parametrize("transition_features", [None, "all"])
def test_feature_values_whose_scores_overflow_are_named_at_predict(value,
                                                                   transition_features):
    """Scores beyond float64 gave all-zero marginals and arbitrary labels, silently."""
    X = [[{"x": 1.0, "w": "a"}, {"x": -1.0, "w": "b"}], [{"x": 0.5, "w": "b"}]]
    y = [["A", "B"], ["B"]]
    crf = CRFClassifier(alpha=0.1, transition_features=transition_features).fit(X, y)
    crf.coef_[:, list(crf.feature_names_).index("x")] = [4.0, -4.0]  # 4e308 overflows
    X_new = [[{"x": 1.0}], [{"x": 1.0}, {"x": value}]]
    for method in (crf.predict, crf.predict_marginals):
        with pytest.raises(ValueError, match="sequence 1, token 1 overflow"):
            method(X_new)


# --- 7. a damaged numba cache file -----------------------------------------------


_PREDICT_SCRIPT = """
import pickle, sys, warnings
warnings.simplefilter("always")
with open(sys.argv[1], "rb") as f:
    crf, X = pickle.load(f)
print([labels.tolist() for labels in crf.predict(X)])
print(crf.predict_marginals(X)[0].sum(axis=1).round(9).tolist())
"""


def test_damaged_cache_files_are_recompiled_with_one_warning(tmp_path):
    """Random bytes in a .nbi file broke every later predict with UnpicklingError.

    Run in subprocesses whose NUMBA_CACHE_DIR is a fresh directory, so that
    the real cache is never touched.
    """
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}, {"w": "a"}]]
    crf = CRFClassifier(alpha=0.1).fit(X, [["A", "B"], ["B", "A", "A"]])
    model = tmp_path / "model.pkl"
    model.write_bytes(pickle.dumps((crf, X)))
    script = tmp_path / "predict.py"
    script.write_text(_PREDICT_SCRIPT)
    cache = tmp_path / "cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_OPT="0",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))

    def predict():
        return subprocess.run([sys.executable, str(script), str(model)], env=env,
                              capture_output=True, text=True, timeout=600)

    first = predict()
    assert first.returncode == 0, first.stderr
    indexes = sorted(cache.rglob("*.nbi"))
    assert indexes
    rng = np.random.default_rng(0)
    for index in indexes:
        index.write_bytes(rng.bytes(index.stat().st_size))

    damaged = predict()
    assert damaged.returncode == 0, damaged.stderr
    assert damaged.stdout == first.stdout
    assert damaged.stderr.count("CacheDamagedWarning") == 1, damaged.stderr
    assert "recompil" in damaged.stderr

    repaired = predict()  # the recompiled kernels were written back
    assert repaired.returncode == 0 and repaired.stdout == first.stdout
    assert "CacheDamagedWarning" not in repaired.stderr, repaired.stderr
