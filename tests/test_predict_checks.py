"""Prediction's own checks of fitted state and its split into sequences.

Prediction skips sklearn's check_is_fitted when the estimator holds the
attribute every fit sets; these tests pin that an unfitted estimator still
gets sklearn's error and that a refit or set_params leaves nothing stale.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from skcrf import CRFClassifier, SemiMarkovCRF, TreeCRF
from skcrf._estimators.base import CRFEstimator

X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}], [{"w": "c"}, {"w": "a"}, {"w": "b"}]]
Y = [["A", "B"], ["B"], ["C", "A", "B"]]
Y_OTHER = [["B", "A"], ["A"], ["A", "B", "A"]]


def fitted(y=Y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CRFClassifier(max_iter=20, n_jobs=1, **params).fit(X, y)


@pytest.mark.parametrize("estimator", [CRFClassifier(), SemiMarkovCRF(), TreeCRF()])
@pytest.mark.parametrize("query", [
    lambda crf: crf.predict(X),
    lambda crf: crf.predict(X, return_proba=True),
    lambda crf: crf.predict_marginals(X),
    lambda crf: crf.predict_proba(X),
    lambda crf: crf.predict_nbest(X, 2),
    lambda crf: crf.sequence_log_proba(X, Y),
    lambda crf: crf.score(X, Y),
])
def test_unfitted_estimators_raise_sklearn_not_fitted_error(estimator, query):
    name = type(estimator).__name__
    with pytest.raises(NotFittedError, match=rf"^This {name} instance is not fitted yet\. "
                                             rf"Call 'fit' with appropriate arguments"):
        query(estimator)


def test_a_clone_of_a_fitted_estimator_is_unfitted():
    with pytest.raises(NotFittedError):
        clone(fitted()).predict(X)


def test_refit_and_set_params_predict_with_the_new_model():
    crf = fitted()
    first = crf.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, Y_OTHER)
    for a, b in zip(crf.predict(X), fitted(Y_OTHER).predict(X)):
        np.testing.assert_array_equal(a, b)
    assert any((a != b).any() for a, b in zip(crf.predict(X), first))
    crf.set_params(alpha=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, Y)
    for a, b in zip(crf.predict_marginals(X), fitted(alpha=5.0).predict_marginals(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("lengths", [[], [0], [3], [2, 0, 1], [0, 0], [1, 4, 0]])
@pytest.mark.parametrize("columns", [None, 3])
def test_split_equals_numpy_split(lengths, columns):
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    shape = (int(offsets[-1]),) if columns is None else (int(offsets[-1]), columns)
    values = np.arange(np.prod(shape)).reshape(shape)
    pieces = CRFEstimator._split(values, offsets)
    expected = np.split(values, offsets[1:-1]) if lengths else []
    assert len(pieces) == len(expected)
    for piece, want in zip(pieces, expected):
        np.testing.assert_array_equal(piece, want)
        assert piece.shape == want.shape and piece.base is not None  # a view, as np.split


def test_fitted_state_follows_sklearn_rule():
    crf = CRFClassifier()
    assert not crf.__sklearn_is_fitted__()
    crf.custom_ = 1  # any learned-looking attribute counts, as in sklearn's own check
    assert crf.__sklearn_is_fitted__()
    fitted_crf = fitted()
    assert fitted_crf.__sklearn_is_fitted__()
    assert not clone(fitted_crf).__sklearn_is_fitted__()


def test_a_featurizer_output_of_another_vocabulary_gets_a_hint():
    # issue 43, item 27: "X has n features, but ... fitted with m" and nothing else
    from skcrf import CRFClassifier, TokenFeaturizer

    train = [["The", "cat", "sat"], ["A", "dog", "ran"]]
    crf = CRFClassifier(max_iter=20).fit(TokenFeaturizer().fit_transform(train),
                                         [["D", "N", "V"]] * 2)
    with pytest.raises(ValueError, match="X has .* features.*, but CRFClassifier was fitted "
                                         "with .*keep a SequenceVectorizer between"):
        crf.predict(TokenFeaturizer().fit_transform([["Some", "new", "text", "here"]]))
