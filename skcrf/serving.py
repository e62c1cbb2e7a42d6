"""Serving one model to many threads: their single sequences predicted in shared batches.

Predicting one sentence per call spends most of its time in Python, which
holds the GIL: threads calling ``predict`` one sentence each do not go
faster together than one thread does. One call on many sentences costs much
less per sentence (the fixed costs are paid once, and the kernels run
without the GIL). :class:`MicroBatcher` turns the first pattern into the
second: the requests that arrive while a batch is being predicted wait for
the next batch, which takes them all in one call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

__all__ = ["MicroBatcher"]


class _Request:
    """One caller's sequence, its outcome, and the lock its caller waits on."""

    __slots__ = ("sequence", "result", "error", "leads", "wake")

    def __init__(self, sequence):
        self.sequence = sequence
        self.result = self.error = None
        self.leads = False  # woken to predict the next batch, not with an outcome
        # held until woken: a plain lock is the cheapest way to park a thread
        self.wake = threading.Lock()
        self.wake.acquire()

    def outcome(self):
        if self.error is not None:
            error, self.error = self.error, None  # no cycle through the traceback
            raise error
        return self.result


class MicroBatcher:
    """Predict single sequences from many threads in shared batched calls.

    Each :meth:`predict_one` call queues its sequence. A caller that finds
    no batch running predicts one itself, at once: everything queued (at
    most ``max_batch`` sequences, its own first) in one call of ``predict``,
    then hands each caller its own result and wakes the oldest caller still
    waiting to predict the next batch. So a lone request is predicted at
    once, alone, on its own thread, as a direct call would be, and under
    load the requests that arrive during a batch form the next one. There
    is no worker thread to start, stop or lose across a ``fork``. Results
    are those of ``predict([sequence])[0]``: a batch whose call raises is
    predicted again one sequence at a time, so that each caller gets its own
    result or its own error (naming sequence 0, as a call of its own would).

    Parameters
    ----------
    predict : callable
        Takes a list of sequences and returns one result per sequence: a
        fitted ``CRFClassifier.predict``, a pipeline's ``predict``,
        ``predict_marginals``, :class:`skcrf.compat.CRF`'s ``predict``...
    max_batch : int, default=64
        The most sequences per call of ``predict``.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.serving import MicroBatcher
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> model = CRFClassifier(max_iter=20).fit(X, [["D", "N"], ["D", "N"]])
    >>> with MicroBatcher(model.predict) as batcher:  # shared by the server's threads
    ...     batcher.predict_one([{"w": "a"}, {"w": "dog"}]).tolist()
    ['D', 'N']
    """

    def __init__(self, predict: Callable[[list], Sequence[Any]], *, max_batch: int = 64):
        if not callable(predict):
            raise TypeError(f"predict must be callable (a model's predict method); got a "
                            f"{type(predict).__name__}.")
        if isinstance(max_batch, bool) or not isinstance(max_batch, Integral) or max_batch < 1:
            raise ValueError(f"max_batch must be an integer >= 1; got {max_batch!r}.")
        self.predict = predict
        self.max_batch = int(max_batch)
        self._lock = threading.Lock()
        self._queued = []  # requests not yet taken into a batch, oldest first
        self._running = False  # whether some caller is predicting a batch
        self._idle = threading.Condition(self._lock)  # notified when no batch runs
        self._leader = None  # the thread predicting the batch that runs
        self._closed = False

    def predict_one(self, sequence: Any) -> Any:
        """``predict([sequence])[0]``, computed in a batch with other threads' sequences.

        Parameters
        ----------
        sequence : sequence of tokens
            What ``predict`` takes one of in its list (feature dicts, raw
            tokens for a pipeline with a featurizer).

        Returns
        -------
        result
            This sequence's item of ``predict``'s output.
        """
        request = _Request(sequence)
        with self._lock:
            if self._closed:
                raise RuntimeError("This MicroBatcher is closed.")
            self._queued.append(request)
            # when no batch runs nothing is queued, so a leader's request is the oldest
            leads = not self._running
            self._running = True
        while True:
            if leads:
                self._predict_batch()
            else:
                try:
                    request.wake.acquire()  # woken with an outcome, or to lead
                except BaseException:  # a Ctrl-C while waiting: leave, and pass the lead on
                    self._leave(request)
                    raise
                if request.leads:
                    request.leads, leads = False, True
                    continue
            return request.outcome()

    def close(self) -> None:
        """Refuse new calls and wait until the queued ones are predicted."""
        with self._lock:
            self._closed = True
            if self._leader is not threading.current_thread():  # not from inside predict
                self._idle.wait_for(lambda: not self._running)

    def __enter__(self) -> MicroBatcher:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _leave(self, request):
        """Take a caller's request out of the queue; if it was to lead, wake the next one."""
        with self._lock:
            if request in self._queued:
                self._queued.remove(request)
            if request.leads:
                self._pass_lead()

    def _pass_lead(self):
        """Wake the oldest waiting caller to predict the next batch, or end the run (locked)."""
        if self._queued:
            following = self._queued[0]
            following.leads = True
            following.wake.release()
        else:
            self._running = False
            self._idle.notify_all()

    def _predict_batch(self):
        """Predict the oldest queued requests (the caller's first), then pass the lead on."""
        with self._lock:
            batch = self._queued[:self.max_batch]
            del self._queued[:self.max_batch]
            self._leader = threading.current_thread()
        try:
            self._answer(batch)
        except BaseException:
            # a KeyboardInterrupt or SystemExit of the leading thread is its own:
            # the others' requests go back to the front, for the next leader
            with self._lock:
                self._queued[:0] = [r for r in batch[1:] if r.wake.locked()]
            raise
        finally:
            with self._lock:
                self._leader = None
                self._pass_lead()

    def _answer(self, batch):
        """Give each request of ``batch`` its outcome; wake every caller but the leader."""
        sequences = [request.sequence for request in batch]
        try:
            results = self.predict(sequences)
            if len(results) != len(batch):
                raise ValueError(f"predict returned {len(results)} results for "
                                 f"{len(batch)} sequences.")
        except Exception:  # noqa: BLE001 - each caller gets its own outcome below
            for request in batch:  # one bad sequence fails only its caller
                _predict_alone(request, self.predict)
        else:
            for request, result in zip(batch, results):
                request.result = result
        for request in batch[1:]:
            request.wake.release()


def _predict_alone(request, predict):
    """Set ``request``'s outcome to ``predict([sequence])[0]``, or to the exception it raises."""
    try:
        request.result = predict([request.sequence])[0]
    except Exception as error:  # noqa: BLE001 - raised in the caller's thread
        request.error = error
