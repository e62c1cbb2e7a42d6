"""DenseWindow: neighbours' dense rows, against a loop over tokens; errors and model files."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceMatrix, load_model, save_model
from skcrf.features import DenseWindow, WordVectorizer

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _naive_window(sequences, window):
    """Row by row: the token's neighbours at -window..+window, zeros past the ends."""
    rows = []
    for sequence in sequences:
        for i in range(len(sequence)):
            parts = [sequence[i + offset] if 0 <= i + offset < len(sequence)
                     else np.zeros(sequence.shape[1]) for offset in range(-window, window + 1)]
            rows.append(np.concatenate(parts))
    return np.array(rows)


@pytest.mark.parametrize("window", [0, 1, 2, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_a_loop_over_tokens(window, seed):
    rng = np.random.default_rng(seed)
    sequences = [rng.normal(size=(n, 3)) for n in rng.integers(1, 7, size=6)]
    step = DenseWindow(window=window).fit(sequences)
    Xt = step.transform(sequences)
    np.testing.assert_array_equal(Xt.dense, _naive_window(sequences, window))
    assert Xt.lengths.tolist() == [len(s) for s in sequences]
    names = step.get_feature_names_out().tolist()
    assert len(names) == (2 * window + 1) * 3 and names == Xt.dense_names.tolist()
    assert names[window * 3: window * 3 + 3] == ["x0", "x1", "x2"]
    if window:
        assert names[0] == f"-{window}:x0" and names[-1] == f"+{window}:x2"


def test_sparse_columns_pass_through_and_dtype_is_kept():
    dense = np.arange(10, dtype=np.float32).reshape(5, 2)
    matrix = sp.csr_matrix(np.eye(5)[:, :3])
    X = SequenceMatrix(matrix, [0, 2, 5], feature_names=["a", "b", "c"], dense=dense)
    Xt = DenseWindow(window=1).fit_transform(X)
    assert (Xt.matrix != matrix).nnz == 0 and Xt.feature_names.tolist() == ["a", "b", "c"]
    assert Xt.dense.dtype == np.float32
    # no neighbour across the boundary of the two sequences
    assert Xt.dense[1, 4:].tolist() == [0.0, 0.0] and Xt.dense[2, :2].tolist() == [0.0, 0.0]


def test_bad_input_is_named():
    sparse_only = SequenceMatrix(sp.csr_matrix(np.ones((2, 2))), [0, 2])
    with pytest.raises(ValueError, match="needs a dense block"):
        DenseWindow().fit(sparse_only)
    step = DenseWindow().fit([np.zeros((2, 3))])
    with pytest.raises(ValueError, match="X has 2 dense columns per token; DenseWindow was "
                                         "fitted on 3"):
        step.transform([np.zeros((2, 2))])
    with pytest.raises(ValueError, match="window"):
        DenseWindow(window=-1).fit([np.zeros((2, 3))])


def test_a_pipeline_of_word_vectors_round_trips_in_a_model_file(tmp_path):
    X = [["a", "b", "c"], ["b", "a"], ["c"]]
    y = [["x", "y", "x"], ["y", "x"], ["y"]]
    table = {"a": [1.0, 2.0], "b": [0.0, 1.0], "c": [3.0, 3.0]}
    pipe = make_pipeline(WordVectorizer(table), DenseWindow(window=1),
                         CRFClassifier(max_iter=5))
    pipe.fit(X, y)
    assert pipe[:-1].transform(X).n_dense == 6
    save_model(pipe, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    np.testing.assert_array_equal(loaded[:-1].transform(X).dense, pipe[:-1].transform(X).dense)
    assert [list(p) for p in loaded.predict(X)] == [list(p) for p in pipe.predict(X)]
    again = clone(pipe[1]).fit(pipe[0].transform(X))
    assert again.dense_names_.tolist() == pipe[1].dense_names_.tolist()


def test_damaged_state_is_refused(tmp_path):
    step = DenseWindow(window=1).fit([np.zeros((2, 3))])
    step.dense_names_ = step.dense_names_[:-1]
    with pytest.raises(ValueError, match="not a multiple of n_dense_in_=3"):
        save_model(step, tmp_path / "window.skcrf")
        load_model(tmp_path / "window.skcrf")
