"""WordVectorizer and WordClusters in model files: round trips, and damaged state refused."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, load_model, save_model
from skcrf.features import WordClusters, WordVectorizer

X = [["a", "b", "c"], ["b", "a"]]
y = [["x", "y", "x"], ["y", "x"]]
TABLE = {"a": [1.0, 2.0], "b": [0.0, 1.0], "c": [3.0, 3.0]}

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("step", [
    WordVectorizer(TABLE, lowercase=True, oov="mean", dtype=np.float32),
    WordClusters(TABLE, n_clusters=(2, 3), window=1, random_state=0),
], ids=["WordVectorizer", "WordClusters"])
def test_a_pipeline_round_trips(tmp_path, step):
    pipe = make_pipeline(step, CRFClassifier(max_iter=5)).fit(X, y)
    save_model(pipe, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    first, again = pipe[0].transform(X), loaded[0].transform(X)
    if isinstance(step, WordVectorizer):
        np.testing.assert_array_equal(first.dense, again.dense)
        assert again.dense.dtype == np.float32
    else:
        assert (first.matrix != again.matrix).nnz == 0
    assert [list(p) for p in loaded.predict(X)] == [list(p) for p in pipe.predict(X)]


def _save_and_load(model, path):
    save_model(model, path)
    return load_model(path)


def test_damaged_state_is_refused(tmp_path):
    clusters = WordClusters(TABLE, n_clusters=2, random_state=0).fit(X)
    clusters.clusters_ = clusters.clusters_ + 5
    with pytest.raises(ValueError, match="beyond its clustering's size"):
        _save_and_load(clusters, tmp_path / "clusters.skcrf")
    vectors = WordVectorizer(TABLE).fit(X)
    vectors.vocabulary_ = {"a": 99}
    with pytest.raises(ValueError, match="vocabulary_ must map words"):
        _save_and_load(vectors, tmp_path / "vectors.skcrf")
    vectors = WordVectorizer(TABLE).fit(X)
    vectors.vectors_ = vectors.vectors_[:, :1]
    with pytest.raises(ValueError, match="1 columns for 2 dense_names_"):
        _save_and_load(vectors, tmp_path / "vectors.skcrf")
