"""Calibration metrics against their definitions, and CalibratedCRF's temperature scaling."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from skcrf import CalibratedCRF, CRFClassifier, SemiMarkovCRF, load_model, save_model
from skcrf._calibration import scaled_model
from skcrf.features import SequenceVectorizer
from skcrf.metrics import (expected_calibration_error, reliability_curve, span_confidences,
                           token_confidences)
from tests.test_spans import _corpus, _test_sequences

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def test_reliability_curve_and_ece_follow_their_definitions():
    rng = np.random.default_rng(0)
    confidence = rng.random(200)
    correct = rng.random(200) < confidence ** 2
    curve = reliability_curve(correct, confidence, n_bins=5)
    bins = np.minimum((confidence * 5).astype(int), 4)
    for k, b in enumerate(np.unique(bins)):
        members = bins == b
        assert curve.count[k] == members.sum()
        assert np.isclose(curve.confidence[k], confidence[members].mean())
        assert np.isclose(curve.accuracy[k], correct[members].mean())
    expected = sum(members.sum() / 200 * abs(correct[members].mean() - confidence[members].mean())
                   for members in (bins == b for b in np.unique(bins)))
    assert np.isclose(expected_calibration_error(correct, confidence, n_bins=5), expected)
    # right exactly as often as it says: nothing to correct
    assert expected_calibration_error([True, True, False, False], [1.0, 1.0, 0.0, 0.0]) == 0.0
    assert np.isnan(expected_calibration_error([], []))


@pytest.mark.parametrize("correct, confidence, match", [
    ([True], [1.5], r"confidence\[0\] is 1.5"), ([True, False], [0.5], "one length"),
    ([2], [0.5], "booleans")])
def test_bad_calibration_input_is_named(correct, confidence, match):
    with pytest.raises(ValueError, match=match):
        expected_calibration_error(correct, confidence)


def test_token_and_span_confidences_pair_predictions_with_gold():
    classes = np.array(["B-PER", "I-PER", "O"])
    marginals = [np.array([[0.7, 0.1, 0.2], [0.2, 0.5, 0.3]]), np.zeros((0, 3))]
    correct, confidence = token_confidences([["B-PER", "O"], []], marginals, classes)
    assert correct.tolist() == [True, False]
    assert confidence.tolist() == [0.7, 0.5]
    spans = [[(0, 2, "PER", 0.6), (3, 4, "PER", 0.9)], []]
    correct, confidence = span_confidences([["B-PER", "I-PER", "O", "B-PER"], []], spans)
    assert correct.tolist() == [True, True]
    correct, _ = span_confidences([["B-PER", "O", "O", "O"], []], spans)
    assert correct.tolist() == [False, False]
    with pytest.raises(ValueError, match="expected \\(start, stop, label, probability\\)"):
        span_confidences([["O"]], [[(0, 1, "PER")]])


def _overfit_chain():
    X, y = _corpus("IOB2", n_sequences=60, seed=3)
    crf = CRFClassifier(alpha=1e-3, max_iter=100).fit(X[:30], y[:30])
    return crf, X[30:], y[30:]


@pytest.mark.parametrize("objective", ["sequence", "token"])
def test_temperature_minimises_the_held_out_loss_and_keeps_predictions(objective):
    crf, X, y = _overfit_chain()
    calibrated = CalibratedCRF(crf, objective=objective).fit(X, y)
    T = calibrated.temperature_
    assert 0.05 <= T <= 20 and calibrated.n_sequences_used_ == len(X)

    def loss(t):
        model = CalibratedCRF(crf)
        model.estimator_ = scaled_model(crf, 1 / t)
        if objective == "sequence":
            return -model.sequence_log_proba(X, y).sum()
        marginals = model.predict_marginals(X)
        ids = {c: k for k, c in enumerate(crf.classes_.tolist())}
        return -sum(np.log(m[np.arange(len(s)), [ids[t] for t in s]]).sum()
                    for m, s in zip(marginals, y))

    assert loss(T) <= loss(T * 1.05) + 1e-9 and loss(T) <= loss(T / 1.05) + 1e-9
    for a, b in zip(calibrated.predict(X), crf.predict(X)):
        assert a.tolist() == b.tolist()
    # the calibrated probabilities are those of the scaled potentials
    log_p = calibrated.sequence_log_proba(X, y)
    assert np.all(log_p <= 0) and np.all(np.isfinite(log_p))
    assert crf.coef_ is not calibrated.estimator_.coef_
    np.testing.assert_allclose(calibrated.estimator_.coef_, crf.coef_ / T)


def test_calibrated_pipeline_and_semi_markov_save_and_load(tmp_path):
    X, y = _corpus("IOB2", n_sequences=40, seed=4)
    pipe = make_pipeline(SequenceVectorizer(), SemiMarkovCRF(alpha=0.1, max_iter=30))
    pipe.fit(X[:25], y[:25])
    calibrated = CalibratedCRF(pipe).fit(X[25:], y[25:])
    assert clone(calibrated).get_params()["objective"] == "sequence"
    path = tmp_path / "calibrated.skcrf"
    save_model(calibrated, path)
    loaded = load_model(path)
    assert loaded.temperature_ == calibrated.temperature_
    X_test = _test_sequences()
    np.testing.assert_allclose(
        [p for spans in loaded.predict_spans(X_test, return_proba=True) for *_, p in spans],
        [p for spans in calibrated.predict_spans(X_test, return_proba=True) for *_, p in spans])


def test_unfitted_estimator_is_refused():
    X, y = _corpus("IOB2", n_sequences=5)
    with pytest.raises(ValueError, match="not fitted"):
        CalibratedCRF(CRFClassifier()).fit(X, y)
