"""SequenceMatrix: checks, indexing, and the matrix built only when read."""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix


def from_arrays(data=None, dtype=np.float64):
    """Two sequences (2 + 1 tokens) over 3 features, as skcrf's transformers make them."""
    indices = np.array([0, 2, 1, 0, 1], dtype=np.int32)
    indptr = np.array([0, 2, 3, 5], dtype=np.int64)
    return SequenceMatrix._from_arrays(data, indices, indptr, 3,
                                       np.array([0, 2, 3], dtype=np.int64), ["a", "b", "c"],
                                       dtype)


EXPECTED = [[1, 0, 1], [0, 1, 0], [1, 1, 0]]


def test_offsets_are_checked():
    with pytest.raises(ValueError, match="end at the number of rows"):
        SequenceMatrix(sp.eye(3, format="csr"), [0, 2])
    with pytest.raises(ValueError, match="non-decreasing"):
        SequenceMatrix(sp.eye(3, format="csr"), [0, 2, 1, 3])
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        SequenceMatrix(sp.eye(3, format="csr"), [0, 3], ["a", "b"])


def test_arrays_give_the_matrix_only_when_it_is_read():
    X = from_arrays()
    assert (len(X), X.n_tokens, X.n_features, X.nnz) == (2, 3, 3, 5)
    assert repr(X) == "SequenceMatrix(n_sequences=2, n_tokens=3, n_features=3, nnz=5)"
    assert X._matrix is None  # nothing above needed the array of ones
    assert X.matrix.toarray().tolist() == EXPECTED
    assert X.matrix is X.matrix  # built once


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arrays_keep_the_dtype(dtype):
    assert from_arrays(dtype=dtype).matrix.dtype == dtype
    X = from_arrays(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), dtype)
    assert X._canonical_arrays()[0].dtype == dtype and X.matrix.dtype == dtype
    assert X.matrix.toarray().tolist() == [[1, 0, 2], [0, 3, 0], [4, 5, 0]]


def test_indexing_and_pickling_work_before_the_matrix_is_built():
    X = from_arrays()
    assert X[1].toarray().tolist() == [EXPECTED[2]]
    assert X[[1, 0]].matrix.toarray().tolist() == [EXPECTED[2]] + EXPECTED[:2]
    Y = pickle.loads(pickle.dumps(from_arrays()))
    assert Y.matrix.toarray().tolist() == EXPECTED
    assert Y.feature_names.tolist() == ["a", "b", "c"]


def test_a_users_matrix_has_no_canonical_arrays():
    # its arrays may be unsorted, of any index type: consumers go through scipy
    X = SequenceMatrix(sp.csr_matrix(np.array(EXPECTED, dtype=float)), [0, 2, 3])
    assert X._canonical_arrays() is None and X.nnz == 5


def test_splits_are_made_from_the_arrays():
    X = from_arrays(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    part = X[[1, 0]]
    assert X._matrix is None and part._canonical_arrays() is not None
    assert part.matrix.toarray().tolist() == [[4, 5, 0], [1, 0, 2], [0, 3, 0]]
    block = X[0]
    assert block.toarray().tolist() == [[1, 0, 2], [0, 3, 0]]
    block.data[:] = 0  # a copy: X keeps its values
    assert X.matrix.toarray().tolist() == [[1, 0, 2], [0, 3, 0], [4, 5, 0]]


def test_changes_to_the_read_matrix_count():
    X = from_arrays()
    X.matrix.data[:] = 7.0
    # consumers now read the matrix, not the arrays that said "all ones"
    assert X._canonical_arrays() is None
    assert X[1].toarray().tolist() == [[7, 7, 0]]
    assert X[[0]].matrix.toarray().tolist() == [[7, 0, 7], [0, 7, 0]]


def test_assigning_a_matrix_is_checked_and_replaces_the_arrays():
    X = from_arrays()
    with pytest.raises(ValueError, match="end at the number of rows"):
        X.matrix = sp.eye(4, 3, format="csr")
    with pytest.raises(ValueError, match="3 feature_names"):
        X.matrix = sp.eye(3, 4, format="csr")
    X.matrix = 2 * sp.eye(3, format="csr")
    assert X._canonical_arrays() is None and X.nnz == 3
    assert X[0].toarray().tolist() == [[2, 0, 0], [0, 2, 0]]


def test_pickle_keeps_the_arrays_until_the_matrix_is_read():
    X = from_arrays()
    assert pickle.loads(pickle.dumps(X))._matrix is None  # no array of ones stored
    # once read, the matrix may change in place: copies keep the changes
    X.matrix.data[:] = 5.0
    for copy_ in (pickle.loads(pickle.dumps(X)), copy.deepcopy(X)):
        assert copy_._canonical_arrays() is None
        assert copy_.matrix.toarray().tolist() == [[5 * v for v in row] for row in EXPECTED]


def test_a_pickle_of_the_first_release_still_loads():
    # an earlier skcrf pickled the matrix as the attribute "matrix"
    old = SequenceMatrix.__new__(SequenceMatrix)
    old.__setstate__({"matrix": sp.csr_matrix(np.array(EXPECTED, dtype=float)),
                      "offsets": np.array([0, 2, 3]), "feature_names": None})
    assert (old.n_tokens, old.n_features, old.nnz) == (3, 3, 5)
    assert old[1].toarray().tolist() == [EXPECTED[2]]
