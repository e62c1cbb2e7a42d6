"""MicroBatcher: many threads' single sequences in shared predict calls, results as alone."""

import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import numpy as np
import pytest

from skcrf import CRFClassifier
from skcrf.serving import MicroBatcher

from .features.test_vectorizer import tutorial_dicts
from .test_latency import LABELS, TRAIN


@pytest.fixture(scope="module")
def model():
    return CRFClassifier(max_iter=20, tol=1e-2).fit([tutorial_dicts(s) for s in TRAIN], LABELS)


def _sentences():
    words = ["perro", "casa", "Juan", "Madrid", "come", "vive", "en", "La", "El", "es"]
    return [tutorial_dicts([(words[(i + j) % len(words)], "NC") for j in range(2 + i % 5)])
            for i in range(60)]


def test_threads_get_their_own_results_in_shared_batches(model):
    sentences = _sentences()
    alone = [model.predict([s])[0].tolist() for s in sentences]
    sizes = []

    def predict(X):
        sizes.append(len(X))
        return model.predict(X)

    start = threading.Barrier(6)
    with MicroBatcher(predict, max_batch=8) as batcher:
        def work(k):
            start.wait()
            order = sentences[k:] + sentences[:k]
            return [batcher.predict_one(s).tolist() for s in order]

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(work, [0, 5, 11, 23, 37, 41]))
    for k, result in zip([0, 5, 11, 23, 37, 41], results):
        assert result == alone[k:] + alone[:k]
    assert sum(sizes) == 6 * len(sentences) and max(sizes) <= 8


def test_a_bad_sequence_fails_only_its_caller(model):
    good, bad = tutorial_dicts(TRAIN[0]), [{"bias": Decimal(1)}]
    with pytest.raises(Exception) as alone:
        model.predict([bad])
    release = threading.Event()

    def predict(X):
        release.wait(5)  # let both requests queue into one batch
        return model.predict(X)

    with MicroBatcher(predict) as batcher, ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(batcher.predict_one, s) for s in (good, bad)]
        release.set()
        assert futures[0].result().tolist() == model.predict([good])[0].tolist()
        with pytest.raises(type(alone.value)) as error:
            futures[1].result()
    assert str(error.value) == str(alone.value)


def test_marginals_and_a_closed_batcher(model):
    sentence = tutorial_dicts(TRAIN[2])
    batcher = MicroBatcher(model.predict_marginals)
    np.testing.assert_array_equal(batcher.predict_one(sentence),
                                  model.predict_marginals([sentence])[0])
    batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.predict_one(sentence)
    MicroBatcher(model.predict).close()  # never started: nothing to join


@pytest.mark.parametrize("max_batch", [0, -1, 2.5, True])
def test_bad_settings_are_named(model, max_batch):
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(model.predict, max_batch=max_batch)
    with pytest.raises(TypeError, match="callable"):
        MicroBatcher(model)
