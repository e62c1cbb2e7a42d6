"""Serving one model from many threads: one sentence at a time, results as serial ones."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

import skcrf.compat as compat
from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from tests._corpora import tagged_sentences


def _serve_concurrently(predict_one, sentences, n_threads=8):
    """Each of ``n_threads`` threads predicts every sentence, one call each, in its own order."""
    start = threading.Barrier(n_threads)

    def work(shift):
        start.wait()  # all threads calling at once
        order = np.roll(np.arange(len(sentences)), 7 * shift)
        return {int(i): predict_one(sentences[i]) for i in order}

    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(work, range(n_threads)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_many_threads_on_one_pipeline_tag_as_one():
    X, y, X_test, _, _ = tagged_sentences(120, 80)
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(), CRFClassifier(max_iter=30))
    pipe.fit(X, y)
    serial = [pipe.predict([sentence])[0].tolist() for sentence in X_test]
    for result in _serve_concurrently(lambda s: pipe.predict([s])[0].tolist(), X_test):
        assert [result[i] for i in range(len(X_test))] == serial

    def marginals_of(sentence):
        return pipe[-1].predict_marginals(pipe[:-1].transform([sentence]))[0]

    serial_marginals = [marginals_of(sentence) for sentence in X_test]
    marginals = _serve_concurrently(marginals_of, X_test, 4)
    for result in marginals:
        for i, expected in enumerate(serial_marginals):
            np.testing.assert_array_equal(result[i], expected)


def test_many_threads_on_one_compat_crf_tag_as_one():
    X, y, X_test, _, _ = tagged_sentences(120, 80)

    def features(sentence):
        return [{"w": token[0].lower(), "pos": token[1]} for token in sentence]

    crf = compat.CRF(c1=0.05, c2=0.05, max_iterations=30).fit([features(s) for s in X], y)
    sentences = [features(s) for s in X_test]
    serial = [crf.predict_single(sentence) for sentence in sentences]
    for result in _serve_concurrently(crf.predict_single, sentences):
        assert [result[i] for i in range(len(sentences))] == serial
