"""sample_weight: what it means for the objective, and how scikit-learn routes it."""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline

from skcrf import (CRFClassifier, CRFClassifierCV, SemiMarkovCRF, SequenceVectorizer,
                   TokenFeaturizer, TreeCRF)
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.features.arrays import FeatureArrays
from skcrf._utils.validation import encode_labels
from tests._toys import chain_corpus, span_corpus, tree_corpus


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _weights(n, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


@pytest.mark.parametrize("fused", [True, False])
def test_weighted_objective_is_the_weighted_sum_of_the_sequences_terms(fused):
    """Loss and gradient are sum_q s_q (log Z_q - w . Phi_q) (+ L2), whatever the groups."""
    X, y = chain_corpus(12)
    matrix = SequenceVectorizer().fit_transform(X)
    features = FeatureArrays.of_sequences(matrix)
    _, labels = encode_labels(y, matrix.lengths)
    structure = ChainStructure.for_training(features, matrix.offsets, labels, 4)
    weights = np.array([1.0, 2.0, 0.5, 2.0] * 3)
    w = np.random.default_rng(0).normal(size=structure.n_parameters) * 0.3
    weighted = NegativeLogLikelihood(structure, features, matrix.offsets, labels, l2=0.1,
                                     sequence_weights=weights)
    loss, grad = weighted(w)
    total_loss, total_grad = 0.5 * 0.1 * (w @ w), 0.1 * w
    for q in range(12):
        one = matrix[q:q + 1]
        f = FeatureArrays.of_sequences(one)
        part = NegativeLogLikelihood(structure, f, one.offsets,
                                     labels[matrix.offsets[q]:matrix.offsets[q + 1]], l2=0.0,
                                     fused=fused)
        part_loss, part_grad = part(w)
        total_loss += weights[q] * part_loss
        total_grad += weights[q] * part_grad
    np.testing.assert_allclose(loss, total_loss, rtol=1e-12)
    np.testing.assert_allclose(grad, total_grad, atol=1e-10)


@pytest.mark.parametrize("estimator, corpus", [(CRFClassifier, chain_corpus),
                                               (SemiMarkovCRF, span_corpus),
                                               (TreeCRF, tree_corpus)])
def test_weights_change_the_model_and_all_ones_is_no_weights(estimator, corpus):
    X, y = corpus()
    plain = estimator().fit(X, y)
    ones = estimator().fit(X, y, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(plain.coef_, ones.coef_)
    weighted = estimator().fit(X, y, sample_weight=_weights(len(X)))
    assert not np.allclose(weighted.coef_, plain.coef_)


def test_bad_weights_are_named():
    X, y = chain_corpus(4)
    with pytest.raises(ValueError, match=r"sample_weight\[1\] \(sequence 1\) is -1.0"):
        CRFClassifier().fit(X, y, sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(2,\), X has 4"):
        CRFClassifier().fit(X, y, sample_weight=[1.0, 1.0])
    with pytest.raises(ValueError, match="is nan"):
        CRFClassifier().fit(X, y, sample_weight=[1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="sample_weight is 0 for every sequence"):
        CRFClassifier().fit(X, y, sample_weight=np.zeros(4))


def test_grid_search_routes_sample_weight(routing):
    X, y = chain_corpus(30)
    weights = _weights(len(X))
    crf = CRFClassifier(max_iter=50).set_fit_request(sample_weight=True)
    crf.set_score_request(sample_weight=False)  # unweighted scores choose alpha
    search = GridSearchCV(crf, {"alpha": [0.1, 1.0]}, cv=KFold(3)).fit(
        X, y, sample_weight=weights)
    expected = CRFClassifier(alpha=search.best_params_["alpha"], max_iter=50).fit(
        X, y, sample_weight=weights)
    np.testing.assert_array_equal(search.best_estimator_.coef_, expected.coef_)
    # not requested: an error says so, rather than the weights silently ignored
    with pytest.raises(ValueError, match="sample_weight"):
        GridSearchCV(CRFClassifier(), {"alpha": [0.1]}, cv=KFold(3)).fit(
            X, y, sample_weight=weights)


def test_cross_validate_and_a_pipeline_route_sample_weight(routing):
    X, y = chain_corpus(30)
    weights = np.zeros(len(X))
    weights[::2] = 1.0  # half the sequences weigh nothing
    raw = [[token["w"] for token in sequence] for sequence in X]
    crf = CRFClassifier(max_iter=50).set_fit_request(sample_weight=True)
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         crf.set_score_request(sample_weight=True))
    result = cross_validate(pipe, raw, y, cv=KFold(2), params={"sample_weight": weights},
                            return_estimator=True)
    test = next(iter(KFold(2).split(raw)))[1]
    fold = result["estimator"][0]
    predicted = fold.predict([raw[q] for q in test])
    # the weighted token accuracy: sequences of weight 0 do not count
    expected = np.mean(np.concatenate([predicted[k] == y[q] for k, q in enumerate(test)
                                       if weights[q]]))
    assert result["test_score"][0] == pytest.approx(expected)
    train = next(iter(KFold(2).split(raw)))[0]
    kept = [q for q in train if weights[q]]
    alone = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                          CRFClassifier(max_iter=50)).fit([raw[q] for q in kept],
                                                          [y[q] for q in kept])
    fitted = result["estimator"][0]
    # zero weights in the CRF only: the vectorizer saw every sequence, so compare by name
    names = fitted[-1].feature_names_.tolist()
    for j, name in enumerate(alone[-1].feature_names_.tolist()):
        np.testing.assert_allclose(fitted[-1].coef_[:, names.index(name)],
                                   alone[-1].coef_[:, j], atol=1e-8)


def test_cv_estimator_weights_its_fits_and_leaves_out_zero_weights():
    X, y = chain_corpus(30)
    weights = _weights(len(X))
    weights[:6] = 0.0
    cv = CRFClassifierCV(alphas=[0.1, 1.0], cv=3).fit(X, y, sample_weight=weights)
    removed = CRFClassifierCV(alphas=[0.1, 1.0], cv=3).fit(
        X[6:], y[6:], sample_weight=weights[6:])
    np.testing.assert_array_equal(cv.scores_, removed.scores_)
    np.testing.assert_array_equal(cv.coef_, removed.coef_)
    plain = CRFClassifierCV(alphas=[0.1, 1.0], cv=3).fit(X[6:], y[6:])
    assert not np.array_equal(plain.coef_, cv.coef_)
    with pytest.raises(ValueError, match="'solver' parameter"):
        CRFClassifierCV(solver="sgd").fit(X, y)


def test_dask_fit_weighs_the_sequences():
    distributed = pytest.importorskip("distributed")
    import dask.bag as db

    from skcrf.dask import fit

    X, y = chain_corpus(24)
    weights = _weights(len(X))
    weights[3] = 0.0
    with distributed.Client(n_workers=1, threads_per_worker=1, processes=False,
                            dashboard_address=None) as client:
        model = fit(CRFClassifier(), db.from_sequence(X, npartitions=3),
                    db.from_sequence(y, npartitions=3),
                    sample_weight=db.from_sequence(weights.tolist(), npartitions=3),
                    client=client)
    local = CRFClassifier().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(model.coef_, local.coef_, atol=1e-6)
    np.testing.assert_array_equal(model.feature_names_, local.feature_names_)
