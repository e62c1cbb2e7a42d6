"""skcrf.dask with numbers: lists of arrays, DataFrames, SequenceMatrix with a dense block and
vectors inside feature dicts, on the LocalCluster of tests/test_dask.py: distributed == local."""

import numpy as np
import pytest

pytest.importorskip("dask.bag")
pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.bag as db  # noqa: E402

import skcrf.dask  # noqa: E402
from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, TreeCRF  # noqa: E402
from skcrf.datasets import make_sequence_classification  # noqa: E402
from skcrf.features import from_lengths  # noqa: E402
from tests._ties import assert_same_predictions  # noqa: E402
from tests.test_dask import _assert_same_model, _bags, _features, _quiet_fit  # noqa: E402
from tests.test_dask import client  # noqa: E402,F401  (the module's cluster)


@pytest.fixture(scope="module")
def numeric():
    X, y = make_sequence_classification(60, n_features=5, n_classes=3, length_range=(3, 12),
                                        random_state=0)
    return X, [np.asarray(labels).astype(str) for labels in y]


def _matrix_bags(whole, y, cuts):
    """Bags whose partitions are ``whole``'s sequences ``cuts[i]:cuts[i + 1]`` (and labels)."""
    pieces = list(zip(cuts[:-1], cuts[1:]))
    return (db.from_delayed([dask.delayed(whole.take(np.arange(a, b))) for a, b in pieces]),
            db.from_delayed([dask.delayed(list(y[a:b])) for a, b in pieces]))


def _fit_both(client, estimator, X, y, npartitions=3, bags=None):
    from sklearn.base import clone

    local = _quiet_fit(estimator.fit, X, y)
    X_bag, y_bag = _bags(X, y, npartitions) if bags is None else bags
    dist = _quiet_fit(skcrf.dask.fit, clone(estimator), X_bag, y_bag, client=client)
    return local, dist


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("params", [{}, {"order": 2}], ids=["order1", "order2"])
def test_list_of_arrays_distributed_fit_equals_local_fit(client, numeric, dtype, params):
    X, y = numeric
    X = [x.astype(dtype) for x in X]
    local, dist = _fit_both(client, CRFClassifier(max_iter=30, **params), X, y)
    assert dist.vectorizer_ is None and dist.n_dense_features_in_ == 5
    # a float32 block's products add in float32: cut at other tokens (partitions
    # instead of chunks), their rounding differs by about 1e-7 per evaluation,
    # which 30 L-BFGS steps carry on; one partition is bitwise (test below)
    _assert_same_model(local, dist, rtol=1e-9 if dtype == np.float64 else 1e-3)
    assert_same_predictions(local, dist, X)
    # prediction over a bag of arrays: the model's own
    mapped = skcrf.dask.predict(dist, db.from_sequence(X, npartitions=2)).compute()
    assert all(np.array_equal(a, b) for a, b in zip(dist.predict(X), mapped))


def test_dataframes_distributed_fit_equals_local_fit(client, numeric):
    pd = pytest.importorskip("pandas")
    X, y = numeric
    frames = [pd.DataFrame(x, columns=[f"c{j}" for j in range(x.shape[1])]) for x in X]
    local, dist = _fit_both(client, CRFClassifier(max_iter=30), frames, y)
    assert list(dist.feature_names_) == [f"c{j}" for j in range(5)]
    _assert_same_model(local, dist)
    mapped = skcrf.dask.predict(dist, db.from_sequence(frames, npartitions=3)).compute()
    assert all(np.array_equal(a, b) for a, b in zip(dist.predict(frames), mapped))


def test_partitions_of_sequence_matrices_keep_their_dense_block(client, numeric):
    """A bag whose partitions are SequenceMatrix objects (sparse part and dense block)."""
    import scipy.sparse as sp

    X, y = numeric
    rng = np.random.default_rng(1)
    lengths = [len(x) for x in X]
    stacked = np.vstack(X)
    sparse = sp.random(stacked.shape[0], 7, density=0.3, format="csr", random_state=rng)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    whole = SequenceMatrix(sparse, offsets, dense=stacked)
    bags = _matrix_bags(whole, y, [0, 20, 45, 60])
    local, dist = _fit_both(client, CRFClassifier(max_iter=30), whole, y, bags=bags)
    assert dist.n_features_in_ == 12 and dist.n_dense_features_in_ == 5
    _assert_same_model(local, dist)
    mapped = skcrf.dask.predict(dist, bags[0]).compute()
    assert all(np.array_equal(a, b) for a, b in zip(dist.predict(whole), mapped))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_stacked_partition_as_from_lengths(client, numeric, dtype):
    X, y = numeric
    whole = from_lengths(np.vstack(X).astype(dtype), [len(x) for x in X])
    local, dist = _fit_both(client, CRFClassifier(max_iter=20), whole, y,
                            bags=_matrix_bags(whole, y, [0, len(X)]))
    _assert_same_model(local, dist, rtol=0.0)  # one partition: the local sums, bit for bit


@pytest.fixture(scope="module")
def vectors(tagged_small):
    """Feature dicts with a 4-d vector per token (a hash of the word), one key in some."""
    X_train, y_train, _, _ = tagged_small
    X, y = [], []
    for sentence, labels in zip(X_train[:120], y_train[:120]):
        tokens = _features(sentence)
        for t, token in enumerate(tokens):
            seed = sum(map(ord, token["w"])) % 997
            token["vec"] = np.random.default_rng(seed).normal(size=4)
            if t % 3 == 0:
                token["shape"] = np.float64([len(token["w"]), token["title"]])
        X.append(tokens)
        y.append(labels)
    return X, y


def test_vectors_in_feature_dicts_distributed_fit_equals_local_fit(client, vectors):
    X, y = vectors
    local, dist = _fit_both(client, CRFClassifier(max_iter=30), X, y)
    assert dist.vectorizer_.vector_widths_ == {"shape": 2, "vec": 4}
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X[:40])


def test_a_vector_key_missing_from_a_partition_gets_zeros_there(client, vectors):
    """Partition 0 never meets "shape": its block is widened as a local fit's zeros."""
    X, y = vectors
    X = [[{k: v for k, v in token.items() if k != "shape"} for token in sentence]
         if q < 40 else sentence for q, sentence in enumerate(X)]
    local, dist = _fit_both(client, CRFClassifier(max_iter=25), X, y)
    _assert_same_model(local, dist)


@pytest.mark.parametrize("estimator", [
    SemiMarkovCRF(max_iter=20),  # its token scores by BLAS
    CRFClassifier(max_iter=20, transition_features=["pos="]),  # the block as CSR columns
], ids=["semimarkov", "transition-features"])
def test_other_models_with_vectors(client, vectors, estimator):
    X, y = vectors
    local, dist = _fit_both(client, estimator, X[:80], y[:80], npartitions=2)
    _assert_same_model(local, dist)


@pytest.mark.parametrize("partial", [False, True], ids=["labelled", "partial"])
def test_dense_routes_of_trees_and_semimarkov_orders(client, numeric, partial):
    """SemiMarkovCRF of order 2 (its label patterns reduced over partitions), and trees
    and order-1 segment models with partial labels, on the BLAS route as a local fit."""
    X, y = numeric
    if partial:
        y = [[None if t == 1 and q % 2 else label for t, label in enumerate(labels)]
             for q, labels in enumerate(y)]
        estimator = SemiMarkovCRF(max_iter=20)
    else:
        estimator = SemiMarkovCRF(order=2, max_iter=20)
    local, dist = _fit_both(client, estimator, X, y)
    _assert_same_model(local, dist)
    if partial:
        lengths = [len(x) for x in X]
        parents = np.concatenate([np.arange(n) - 1 for n in lengths])  # paths
        whole = SequenceMatrix(None, np.concatenate([[0], np.cumsum(lengths)]),
                               parents=parents, dense=np.vstack(X))
        local, dist = _fit_both(client, TreeCRF(max_iter=20), whole, y,
                                bags=_matrix_bags(whole, y, [0, 30, 60]))
        _assert_same_model(local, dist)


def test_tree_with_a_dense_block(client, numeric):
    X, y = numeric
    lengths = [len(x) for x in X]
    parents = np.concatenate([np.arange(n) - 1 for n in lengths])  # paths
    whole = SequenceMatrix(None, np.concatenate([[0], np.cumsum(lengths)]),
                           parents=parents, dense=np.vstack(X))
    local, dist = _fit_both(client, TreeCRF(max_iter=25), whole, y,
                            bags=_matrix_bags(whole, y, [0, 30, 60]))
    _assert_same_model(local, dist)


def test_partial_labels_with_a_dense_block(client, numeric):
    X, y = numeric
    y = [[None if t % 4 == 1 else label for t, label in enumerate(labels)]
         for labels in y]
    local, dist = _fit_both(client, CRFClassifier(max_iter=25), X, y)
    _assert_same_model(local, dist)


def test_partitions_of_different_columns_are_refused(client, numeric, vectors):
    X, y = numeric
    ragged = X[:30] + [x[:, :4] for x in X[30:]]
    X_bag, y_bag = _bags(ragged, y, 2)
    with pytest.raises(ValueError, match="Partition 1 has 0 sparse and 4 dense columns"):
        skcrf.dask.fit(CRFClassifier(), X_bag, y_bag, client=client)
    mixed = X[:30] + vectors[0][:30]
    X_bag, y_bag = _bags(mixed, y[:30] + vectors[1][:30], 2)
    with pytest.raises(TypeError, match="must hold sequences of one kind"):
        skcrf.dask.fit(CRFClassifier(), X_bag, y_bag, client=client)
    Xv, yv = vectors
    short = [[dict(token, vec=token["vec"][:3]) for token in s] for s in Xv[60:]]
    X_bag, y_bag = _bags(Xv[:60] + short, yv, 2)
    with pytest.raises(ValueError, match="vectors of length 3 under 'vec'"):
        skcrf.dask.fit(CRFClassifier(), X_bag, y_bag, client=client)
    bad = [x.copy() for x in X]
    bad[40][1, 2] = np.nan
    X_bag, y_bag = _bags(bad, y, 2)
    with pytest.raises(ValueError, match="partition 1"):
        skcrf.dask.fit(CRFClassifier(), X_bag, y_bag, client=client)


def test_sample_weights_with_a_dense_block(client, numeric):
    """Weights of 0 leave sequences out as they read, on the workers as locally."""
    from sklearn.base import clone

    X, y = numeric
    weights = np.random.default_rng(2).choice([0.0, 0.5, 2.0], size=len(X))
    estimator = CRFClassifier(max_iter=25)
    local = _quiet_fit(clone(estimator).fit, X, y, sample_weight=weights)
    X_bag, y_bag = _bags(X, y, 3)
    w_bag = db.from_sequence(weights.tolist(), npartitions=3)
    dist = _quiet_fit(skcrf.dask.fit, clone(estimator), X_bag, y_bag, sample_weight=w_bag,
                      client=client)
    _assert_same_model(local, dist)
