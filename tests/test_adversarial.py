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

from skcrf import CRFClassifier, SequenceMatrix


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
