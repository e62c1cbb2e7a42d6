"""MicroBatcher: many threads' single sequences in shared predict calls, results as alone."""

import signal
import threading
import time
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
    queued = threading.Event()
    sizes = []

    def predict(X):
        sizes.append(len(X))
        if X[0] is good and len(sizes) == 1:
            queued.wait(5)  # the first batch runs while the others queue together
        return model.predict(X)

    with MicroBatcher(predict) as batcher, ThreadPoolExecutor(3) as pool:
        first = pool.submit(batcher.predict_one, good)
        while not sizes:
            time.sleep(0.001)
        futures = [pool.submit(batcher.predict_one, s) for s in (good, bad)]
        while len(batcher._queued) < 2:
            time.sleep(0.001)
        queued.set()
        assert first.result().tolist() == model.predict([good])[0].tolist()
        assert futures[0].result().tolist() == model.predict([good])[0].tolist()
        with pytest.raises(type(alone.value)) as error:
            futures[1].result()
    assert str(error.value) == str(alone.value)
    assert sizes[:2] == [1, 2]  # good and bad in one batch, then each alone


def upper(X):
    return [s.upper() for s in X]


def test_a_lone_request_is_predicted_on_its_callers_thread():
    threads = []

    def predict(X):
        threads.append(threading.current_thread())
        return upper(X)

    batcher = MicroBatcher(predict)
    before = threading.active_count()
    assert [batcher.predict_one(s) for s in ("a", "b")] == ["A", "B"]
    assert threads == [threading.current_thread()] * 2
    assert threading.active_count() == before  # no worker thread
    batcher.close()


def test_an_interrupted_leader_leaves_the_others_to_the_next():
    gate = threading.Event()

    def predict(X):
        if X[0] == "block":
            gate.wait(5)
        if "boom" in X:
            raise KeyboardInterrupt  # the leading thread's own Ctrl-C
        return upper(X)

    batcher = MicroBatcher(predict)
    with ThreadPoolExecutor(3) as pool:
        blocker = pool.submit(batcher.predict_one, "block")
        while not batcher._running:
            time.sleep(0.001)
        boom = pool.submit(batcher.predict_one, "boom")
        while len(batcher._queued) < 1:
            time.sleep(0.001)
        other = pool.submit(batcher.predict_one, "other")
        while len(batcher._queued) < 2:
            time.sleep(0.001)
        gate.set()  # the lead passes to "boom", whose batch holds "other"
        assert blocker.result(5) == "BLOCK"
        with pytest.raises(KeyboardInterrupt):
            boom.result(5)
        assert other.result(5) == "OTHER"
    assert batcher.predict_one("after") == "AFTER" and not batcher._running
    batcher.close()


def test_a_caller_interrupted_while_waiting_leaves_the_queue():
    gate = threading.Event()
    seen = []

    def predict(X):
        seen.extend(X)
        gate.wait(5)
        return upper(X)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    batcher = MicroBatcher(predict)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with ThreadPoolExecutor(1) as pool:
            leader = pool.submit(batcher.predict_one, "lead")
            while not seen:
                time.sleep(0.001)
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with pytest.raises(KeyboardInterrupt):
                batcher.predict_one("waiting")  # queued behind "lead", interrupted
            gate.set()
            assert leader.result(5) == "LEAD"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert batcher.predict_one("after") == "AFTER"
    assert seen == ["lead", "after"]  # the interrupted request was never predicted
    batcher.close()


def test_close_waits_for_the_queued_requests():
    gate = threading.Event()

    def predict(X):
        gate.wait(5)
        return upper(X)

    batcher = MicroBatcher(predict)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(batcher.predict_one, s) for s in "ab"]
        while not batcher._running:
            time.sleep(0.001)
        closing = pool.submit(batcher.close)
        time.sleep(0.05)
        assert not closing.done()  # a batch still runs
        gate.set()
        closing.result(5)
        assert [f.result(5) for f in futures] == ["A", "B"]
    with pytest.raises(RuntimeError, match="closed"):
        batcher.predict_one("c")


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
