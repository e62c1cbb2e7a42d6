"""skcrf.dask with a wide nameless input (SequenceHasher(n_features=2**20)): the partitions
report the columns they hold, and the distributed fit keeps their union
(``feature_columns_``) exactly as a local fit does, on the LocalCluster of tests/test_dask.py."""

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("dask.bag")
pytest.importorskip("distributed")

import skcrf.dask  # noqa: E402
from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix  # noqa: E402
from skcrf._estimators.columns import WIDE_UNUSED, used_columns  # noqa: E402
from skcrf.features import SequenceHasher  # noqa: E402
from tests._ties import assert_same_predictions  # noqa: E402
from tests.test_dask import _assert_same_model, _quiet_fit, ner  # noqa: E402,F401
from tests.test_dask import client  # noqa: E402,F401  (the module's cluster)
from tests.test_dask_dense import _matrix_bags  # noqa: E402

WIDTH = 2 ** 20


def _fit_both(client, X, y, cuts, estimator=CRFClassifier, **params):
    params = {"max_iter": 40, **params}
    local = _quiet_fit(estimator(**params).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, estimator(**params),
                      *_matrix_bags(X, y, cuts), client=client)
    return local, dist


@pytest.mark.parametrize("estimator, params", [
    (CRFClassifier, {}), (CRFClassifier, {"order": 2}), (SemiMarkovCRF, {"max_iter": 25})],
    ids=["order1", "order2", "semimarkov"])
def test_hashed_input_distributed_fit_keeps_the_local_fits_columns(client, ner, estimator,
                                                                   params):
    X_dicts, y, X_test = ner
    hasher = SequenceHasher(n_features=WIDTH)
    X = hasher.transform(X_dicts)
    local, dist = _fit_both(client, X, y, [0, 60, 130, len(y)], estimator, **params)
    assert local.n_features_in_ == dist.n_features_in_ == WIDTH
    kept = dist.feature_columns_
    assert kept.shape[0] < WIDTH - WIDE_UNUSED
    assert dist.coef_.shape[-1] == kept.shape[0] == dist.feature_names_.shape[0]
    np.testing.assert_array_equal(kept, used_columns(X))
    _assert_same_model(local, dist)  # feature_columns_, names, weights to 1e-9
    # new wide input, columns the training data never held among them
    test = hasher.transform(X_test)
    assert np.setdiff1d(test.matrix.indices, kept).size
    assert_same_predictions(local, dist, test)
    import dask
    import dask.bag as db
    bag = db.from_delayed([dask.delayed(test.take(np.arange(a, b)))
                           for a, b in [(0, 40), (40, len(test))]])
    mapped = skcrf.dask.predict(dist, bag).compute()
    assert all(np.array_equal(a, b) for a, b in zip(dist.predict(test), mapped))


def test_a_partition_without_tokens_or_sequences_adds_no_column(client, ner):
    X_dicts, y, _ = ner
    X_dicts = X_dicts[:100] + [[], []] + X_dicts[100:]
    y = list(y[:100]) + [[], []] + list(y[100:])
    X = SequenceHasher(n_features=WIDTH).transform(X_dicts)
    # partition 1: two empty sequences; partition 2: no sequence at all
    local, dist = _fit_both(client, X, y, [0, 100, 102, 102, len(y)])
    assert "feature_columns_" in vars(dist)
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X)


def _padded(X, unused):
    """``X``'s used columns as columns ``0..k-1`` of a nameless input of ``k + unused`` columns."""
    used = used_columns(X)
    narrow = X.matrix[:, used].tocsr()
    matrix = sp.csr_matrix((narrow.data, narrow.indices, narrow.indptr),
                           shape=(narrow.shape[0], used.shape[0] + unused))
    return SequenceMatrix(matrix, X.offsets)


@pytest.mark.parametrize("unused", [WIDE_UNUSED - 1, WIDE_UNUSED])
def test_the_union_of_the_partitions_decides_as_the_whole_input_does(client, ner, unused):
    """One column short of the threshold, the model keeps the full width, as locally.

    Each partition alone holds fewer columns, so it alone would leave enough
    unused: the rule is applied to their union.
    """
    X_dicts, y, _ = ner
    X = _padded(SequenceHasher(n_features=WIDTH).transform(X_dicts), unused)
    cuts = [0, 60, 130, len(y)]
    assert all(np.unique(X.take(np.arange(a, b)).matrix.indices).shape[0]
               < X.n_features - WIDE_UNUSED for a, b in zip(cuts[:-1], cuts[1:]))
    local, dist = _fit_both(client, X, y, cuts)
    compacts = unused >= WIDE_UNUSED
    assert ("feature_columns_" in vars(local)) == compacts
    assert dist.coef_.shape[1] == (X.n_features - unused if compacts else X.n_features)
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X)
