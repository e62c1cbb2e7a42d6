"""The dense block of SequenceMatrix: construction, checks, splitting, pickling."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix
from skcrf.features import from_lengths


def _blocks(rng, lengths, width, dtype=np.float64):
    return [rng.normal(size=(n, width)).astype(dtype) for n in lengths]


def test_from_sequences_stacks_once_and_keeps_float32():
    rng = np.random.default_rng(0)
    blocks = _blocks(rng, [2, 0, 3], 4, np.float32)
    X = SequenceMatrix.from_sequences(blocks)
    assert X.dense.dtype == np.float32 and X.dense.flags.c_contiguous
    assert X.lengths.tolist() == [2, 0, 3] and X.n_dense == 4 and X.n_features == 0
    np.testing.assert_array_equal(X.dense, np.vstack(blocks))
    assert X.dense_names.tolist() == ["x0", "x1", "x2", "x3"]
    assert X.matrix.shape == (5, 0)


def test_mixed_precision_and_ints_become_float64():
    X = SequenceMatrix.from_sequences([np.ones((2, 2), np.float32), np.ones((1, 2), int)])
    assert X.dense.dtype == np.float64


def test_all_sparse_sequences_give_a_sparse_matrix():
    X = SequenceMatrix.from_sequences([sp.eye(3, format="csr"), sp.eye(2, 3, format="csr")])
    assert X.dense is None and X.n_features == 3 and X.lengths.tolist() == [3, 2]


def test_sparse_and_dense_sequences_together_make_a_dense_block():
    X = SequenceMatrix.from_sequences([sp.eye(2, 3, format="csr"), np.ones((1, 3))])
    np.testing.assert_array_equal(X.dense, np.vstack([np.eye(2, 3), np.ones((1, 3))]))


def test_dense_is_not_copied_when_already_right():
    values = np.arange(12.0).reshape(6, 2)
    X = SequenceMatrix(None, [0, 2, 6], dense=values)
    assert np.shares_memory(X.dense, values)
    assert values.flags.writeable and not X.dense.flags.writeable


def test_take_slicing_and_pickling_carry_the_dense_rows():
    rng = np.random.default_rng(1)
    blocks = _blocks(rng, [2, 3, 1], 3)
    X = SequenceMatrix(sp.random(6, 5, density=0.5, format="csr", random_state=0),
                       [0, 2, 5, 6], dense=np.vstack(blocks), dense_names=["a", "b", "c"])
    taken = X[[2, 0]]
    np.testing.assert_array_equal(taken.dense, np.vstack([blocks[2], blocks[0]]))
    assert taken.dense_names.tolist() == ["a", "b", "c"]
    assert taken.matrix.shape == (3, 5)
    np.testing.assert_array_equal(X[np.array([False, True, False])].dense, blocks[1])
    one = X[1]  # one sequence: sparse columns, then dense ones
    np.testing.assert_allclose(one.toarray(), np.hstack([X.matrix[2:5].toarray(), blocks[1]]))
    copy = pickle.loads(pickle.dumps(X))
    np.testing.assert_array_equal(copy.dense, X.dense)
    assert not copy.dense.flags.writeable and copy.dense_names.tolist() == ["a", "b", "c"]
    assert "n_dense=3" in repr(X)


def test_only_dense_sequence_indexes_as_an_array():
    X = SequenceMatrix(None, [0, 1, 3], dense=np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(X[1], [[2.0, 3.0], [4.0, 5.0]])


def test_from_lengths_is_the_hmmlearn_convention():
    values = np.arange(10.0).reshape(5, 2)
    X = from_lengths(values, [2, 3])
    assert X.lengths.tolist() == [2, 3] and np.shares_memory(X.dense, values)
    Xs = from_lengths(sp.csr_matrix(values), np.array([5]))
    assert Xs.dense is None and Xs.n_features == 2
    with pytest.raises(ValueError, match="lengths sum to 4; X has 5 rows"):
        from_lengths(values, [2, 2])
    with pytest.raises(TypeError, match="lengths must be"):
        from_lengths(values, [2.5, 2.5])


@pytest.mark.parametrize("bad, message", [
    (np.nan, r"nan at sequence 1, token 1, column 2"),
    (np.inf, r"inf at sequence 1, token 1, column 2"),
])
def test_non_finite_values_are_named(bad, message):
    values = np.zeros((4, 3))
    values[2, 2] = bad
    with pytest.raises(ValueError, match=message):
        SequenceMatrix(None, [0, 1, 4], dense=values)
    blocks = [values[:1], values[1:]]
    with pytest.raises(ValueError, match=message.replace("dense block", "input")):
        SequenceMatrix.from_sequences(blocks)


def test_bad_blocks_are_named():
    with pytest.raises(ValueError, match="Sequence 1 of X has 2 columns; sequence 0 has 3"):
        SequenceMatrix.from_sequences([np.zeros((1, 3)), np.zeros((2, 2))])
    with pytest.raises(TypeError, match="Sequence 0 of X is an array of dtype object"):
        SequenceMatrix.from_sequences([np.array([["a", 1]], dtype=object)])
    with pytest.raises(ValueError, match="Sequence 0 of X is an array of shape \\(3,\\)"):
        SequenceMatrix.from_sequences([np.zeros(3)])
    with pytest.raises(TypeError, match="dense must hold real numbers"):
        SequenceMatrix(None, [0, 1], dense=np.array([["a"]], dtype=object))
    with pytest.raises(ValueError, match="dense has 2 rows; the offsets describe 3"):
        SequenceMatrix(None, [0, 3], dense=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="dense_names has 1 entries for 2"):
        SequenceMatrix(None, [0, 2], dense=np.zeros((2, 2)), dense_names=["a"])
    with pytest.raises(ValueError, match="neither"):
        SequenceMatrix(None, [0, 2])


def test_pandas_column_names_become_dense_names():
    pd = pytest.importorskip("pandas")
    frames = [pd.DataFrame({"u": [1.0, 2.0], "v": [3, 4]}), pd.DataFrame({"u": [5.0], "v": [6]})]
    X = SequenceMatrix.from_sequences(frames)
    assert X.dense_names.tolist() == ["u", "v"]
    np.testing.assert_array_equal(X.dense, [[1, 3], [2, 4], [5, 6]])
    with pytest.raises(ValueError, match="Sequence 1 of X is a DataFrame with columns"):
        SequenceMatrix.from_sequences([frames[0], frames[1].rename(columns={"v": "w"})])
