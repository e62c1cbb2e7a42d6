"""A fit and a large predict in a forked child return (issue 43, item 1).

``fork`` copies only the forking thread: the kernels' thread pool the parent
made would reach the child as an object whose threads never run, and the
child's first parallel kernel would wait for them forever. Each child runs
under a timeout; a hang is killed and reported, never waited out.
"""

import multiprocessing
import os
import signal
import sys
import time

import pytest

from skcrf import CRFClassifier
from skcrf.inference._runtime import threads
from skcrf.inference._runtime.batch import use_threads
from tests._toys import chain_corpus

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                                reason="needs fork")

#: Seconds a child may take; the work is a small fit and predict on compiled kernels.
TIMEOUT = 120

#: Enough sequences that the predict's chunks go to the pool's threads (one chunk per sequence).
N_PREDICT = 400


def _work():
    """Fit and predict on two threads, as a forked child would; returns the predicted tags."""
    X, y = chain_corpus(40, seed=1)
    X_big, _ = chain_corpus(N_PREDICT, seed=2)
    with use_threads(2):
        crf = CRFClassifier(max_iter=30).fit(X, y)
        return [list(map(str, seq)) for seq in crf.predict(X_big)]


@pytest.fixture(scope="module")
def expected():
    """The parent's result, computed first so that the parent's pool exists before any fork."""
    result = _work()
    assert threads._pool is not None  # the pool the children inherit
    return result


def _child(queue):
    queue.put(_work())


def test_fit_and_predict_in_a_multiprocessing_fork_child(expected):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    try:
        result = queue.get(timeout=TIMEOUT)
    except Exception:  # noqa: BLE001 - the queue's Empty: the child hung or died
        result = None
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
            child.join()
    assert result is not None, "the forked child did not finish its fit and predict"
    assert result == expected


def test_fit_and_predict_after_os_fork(expected):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the tags through the pipe, then leave at once
        status = 1
        try:
            os.close(read_end)
            tags = "\n".join(" ".join(seq) for seq in _work()).encode()
            with os.fdopen(write_end, "wb") as out:
                out.write(tags)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    deadline = time.monotonic() + TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            pytest.fail("the forked child did not finish its fit and predict")
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as source:
        output = source.read().decode()
    assert os.waitstatus_to_exitcode(status) == 0
    assert output == "\n".join(" ".join(seq) for seq in expected)


def test_the_child_makes_its_own_pool(expected):
    """The pool object a child uses is not the parent's."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    parent_pool = id(threads._pool)
    child = context.Process(target=lambda: queue.put(
        (threads._pool is None, id(threads._shared_pool()) != parent_pool)))
    child.start()
    try:
        result = queue.get(timeout=TIMEOUT)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
            child.join()
    assert result == (True, True)
    assert expected
