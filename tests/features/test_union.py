"""SequenceUnion: sparse and dense parts joined, sklearn's composition contract."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skcrf import SequenceMatrix, SequenceVectorizer, TokenFeaturizer
from skcrf.features import PerTokenTransformer, SequenceUnion, WordVectorizer, make_sequence_union

TABLE = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
X = [["a", "b", "c"], ["b"], [], ["c", "a"]]


def _union(**kwargs):
    return SequenceUnion([
        ("words", make_pipeline(TokenFeaturizer(window=0), SequenceVectorizer())),
        ("vectors", WordVectorizer(TABLE)),
    ], **kwargs)


def test_sparse_and_dense_blocks_side_by_side():
    Xt = _union().fit_transform(X)
    sparse = make_pipeline(TokenFeaturizer(window=0), SequenceVectorizer()).fit_transform(X)
    dense = WordVectorizer(TABLE).fit_transform(X)
    np.testing.assert_array_equal(Xt.offsets, dense.offsets)
    assert (Xt.matrix != sparse.matrix).nnz == 0
    np.testing.assert_array_equal(Xt.dense, dense.dense)
    assert Xt.feature_names.tolist() == [f"words__{n}" for n in sparse.feature_names]
    assert Xt.dense_names.tolist() == ["vectors__vec[0]", "vectors__vec[1]"]


def test_transform_per_sequence_equals_the_whole():
    union = _union().fit(X)
    whole = union.transform(X)
    assert union.get_feature_names_out().shape == (whole.n_features + whole.n_dense,)
    for q in range(len(X)):
        one = union.transform([X[q]])
        rows = slice(whole.offsets[q], whole.offsets[q + 1])
        np.testing.assert_array_equal(one.dense, whole.dense[rows])
        np.testing.assert_array_equal(one.matrix.toarray(), whole.matrix[rows].toarray())


def test_weights_drop_and_names_without_prefix():
    weighted = _union(transformer_weights={"vectors": 2.0, "words": 3.0}).fit_transform(X)
    plain = _union().fit_transform(X)
    np.testing.assert_array_equal(weighted.dense, 2.0 * plain.dense)
    np.testing.assert_array_equal(weighted.matrix.toarray(), 3.0 * plain.matrix.toarray())
    dropped = _union().set_params(vectors="drop").fit_transform(X)
    assert dropped.dense is None and dropped.n_features == plain.n_features
    bare = _union(verbose_feature_names_out=False).fit_transform(X)
    assert bare.dense_names.tolist() == ["vec[0]", "vec[1]"]


def test_params_reach_the_parts_and_clone_is_unfitted():
    union = _union()
    params = union.get_params()
    assert params["vectors__lowercase"] is False
    assert params["words__tokenfeaturizer__window"] == 0
    union.set_params(vectors__prefix="emb", words__tokenfeaturizer__window=1)
    assert union.named_transformers.vectors.prefix == "emb"
    copy = clone(union.fit(X))
    assert copy.get_params()["vectors__prefix"] == "emb"
    assert not hasattr(copy.named_transformers.vectors, "vectors_")
    assert make_sequence_union(WordVectorizer(TABLE)).transformer_list[0][0] == "wordvectorizer"


def test_list_of_arrays_parts_and_dense_only():
    blocks = [np.arange(2 * len(s), dtype=float).reshape(len(s), 2) for s in X]
    scaled = PerTokenTransformer(StandardScaler())
    union = SequenceUnion([("raw", _Identity(blocks)), ("scaled", _Identity(blocks, scaled))])
    Xt = union.fit_transform(X)
    assert Xt.n_features == 0 and Xt.n_dense == 4
    np.testing.assert_array_equal(Xt.dense[:, :2], np.vstack(blocks))


@pytest.mark.parametrize("parts, message", [
    ([("a", WordVectorizer(TABLE)), ("b", "drop"), ("c", 3)], "'c' of SequenceUnion"),
    ([("a", "drop")], "every one is 'drop'"),
    ([("a", WordVectorizer(TABLE)), ("a", WordVectorizer(TABLE))], "unique"),
])
def test_bad_parts(parts, message):
    with pytest.raises((TypeError, ValueError), match=message):
        SequenceUnion(parts).fit(X)


def test_disagreeing_parts_and_duplicate_names():
    other = [np.zeros((1, 1))]
    with pytest.raises(ValueError, match="disagree on the sequences"):
        SequenceUnion([("v", WordVectorizer(TABLE)), ("o", _Identity(other))]).fit(X)
    twice = SequenceUnion([("v", WordVectorizer(TABLE)), ("w", WordVectorizer(TABLE))],
                          verbose_feature_names_out=False)
    with pytest.raises(ValueError, match="dense column 'vec\\[0\\]'"):
        twice.fit(X)
    with pytest.raises(ValueError, match="transformer_weights names \\['x'\\]"):
        _union(transformer_weights={"x": 1.0}).fit(X)


def test_grid_search_tunes_a_part_of_the_union():
    # the words say nothing about the labels; the second vector column does
    rng = np.random.RandomState(0)
    words = ["a", "b", "c", "d"]
    table = {word: [rng.normal(), float(i % 2)] for i, word in enumerate(words)}
    X_ = [[words[i] for i in rng.randint(4, size=5)] for _ in range(40)]
    y_ = [np.array([words.index(w) % 2 for w in s]) for s in X_]
    union = SequenceUnion([("vectors", WordVectorizer(table, prefix="v")),
                           ("constant", _Ones())])
    pipe = make_pipeline(union, _TokenLogistic())
    search = GridSearchCV(pipe, [{"sequenceunion__vectors__oov": ["zeros", "mean"]},
                                 {"sequenceunion__vectors": ["drop"]}],
                          cv=2, error_score="raise")
    search.fit(X_, y_)
    assert len(search.cv_results_["params"]) == 3
    dropped = [p.get("sequenceunion__vectors") == "drop" for p in search.cv_results_["params"]]
    scores = search.cv_results_["mean_test_score"]
    assert min(s for s, d in zip(scores, dropped) if not d) == 1.0
    assert max(s for s, d in zip(scores, dropped) if d) < 1.0  # a constant: one label
    assert search.best_estimator_[-1].n_dense_ == 3


class _Identity(BaseEstimator):
    """A part returning fixed per-sequence arrays (or what a transformer makes of them)."""

    def __init__(self, blocks, inner=None):
        self.blocks = blocks
        self.inner = inner

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        if self.inner is None:
            return self.blocks
        return clone(self.inner).fit_transform(self.blocks)

    def fit_transform(self, X, y=None):
        return self.transform(X)


class _Ones(BaseEstimator):
    """A part giving every token the constant 1: a list of arrays, one per sequence."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return [np.ones((len(sequence), 1)) for sequence in X]


class _TokenLogistic(ClassifierMixin, BaseEstimator):
    """A per-token classifier on a SequenceMatrix: the pipeline's plumbing, no CRF."""

    def fit(self, X, y):
        tokens = _stacked(X)
        self.n_dense_ = X.n_dense
        self.model_ = LogisticRegression().fit(tokens, np.concatenate(y))
        return self

    def predict(self, X):
        labels = self.model_.predict(_stacked(X))
        return [labels[a:b] for a, b in zip(X.offsets[:-1], X.offsets[1:])]

    def score(self, X, y):
        return float(np.mean(np.concatenate(self.predict(X)) == np.concatenate(y)))


def _stacked(X):
    assert isinstance(X, SequenceMatrix)
    if X.dense is None:
        return X.matrix if X.n_features else sp.csr_matrix(np.ones((X.n_tokens, 1)))
    return X.dense


def test_a_crf_learns_from_the_joined_blocks():
    from skcrf import CRFClassifier

    # the label is the second number of the word's vector; the words are new at test time
    table = {w: [0.5, float(i % 2)] for i, w in enumerate("abcdefgh")}
    rng = np.random.RandomState(0)
    X_ = [[str(w) for w in rng.choice(list("abcdefgh"), size=6)] for _ in range(60)]
    y_ = [["odd" if table[w][1] else "even" for w in s] for s in X_]
    pipe = make_pipeline(
        SequenceUnion([("words", make_pipeline(TokenFeaturizer(window=0),
                                               SequenceVectorizer(min_freq=1000))),
                       ("vectors", WordVectorizer(table))]),
        CRFClassifier(max_iter=100))
    pipe.fit(X_[:40], y_[:40])
    crf = pipe[-1]
    assert list(crf.feature_names_[-2:]) == ["vectors__vec[0]", "vectors__vec[1]"]
    predicted = pipe.predict(X_[40:])
    assert [len(p) for p in predicted] == [len(s) for s in X_[40:]]
    assert all(list(p) == list(t) for p, t in zip(predicted, y_[40:]))
