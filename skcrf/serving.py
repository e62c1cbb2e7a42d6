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

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from numbers import Integral
from typing import Any

__all__ = ["MicroBatcher"]

_STOP = object()


class MicroBatcher:
    """Predict single sequences from many threads in shared batched calls.

    Each :meth:`predict_one` call queues its sequence and waits; one worker
    thread calls ``predict`` on everything queued (at most ``max_batch``
    sequences), then hands each caller its own result. An idle batcher
    adds no wait: a lone request is predicted at once, alone; under load the
    requests that arrive during a batch form the next one. Results are those
    of ``predict([sequence])[0]``: a batch whose call raises is predicted
    again one sequence at a time, so that each caller gets its own result
    or its own error (naming sequence 0, as a call of its own would).

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
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._worker = None
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
        future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("This MicroBatcher is closed.")
            if self._worker is None:
                self._worker = threading.Thread(target=self._serve, daemon=True,
                                                name="skcrf-microbatcher")
                self._worker.start()
            self._queue.put((sequence, future))
        return future.result()

    def close(self) -> None:
        """Predict what is queued, then stop the worker thread; later calls raise."""
        with self._lock:
            self._closed = True
            worker = self._worker
            self._queue.put(_STOP)
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    def __enter__(self) -> MicroBatcher:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _serve(self):
        stopping = False
        while not stopping:
            batch = [self._queue.get()]  # waits for the first request
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())  # and takes what else waits
                except queue.Empty:
                    break
            if _STOP in batch:
                stopping = True
                batch = [item for item in batch if item is not _STOP]
            if batch:
                self._answer(batch)

    def _answer(self, batch):
        sequences = [sequence for sequence, _ in batch]
        try:
            results = self.predict(sequences)
            if len(results) != len(batch):
                raise ValueError(f"predict returned {len(results)} results for "
                                 f"{len(batch)} sequences.")
        except BaseException:  # noqa: BLE001 - each caller gets its own outcome below
            for sequence, future in batch:  # one bad sequence fails only its caller
                _predict_alone(future, self.predict, sequence)
            return
        for (_, future), result in zip(batch, results):
            future.set_result(result)


def _predict_alone(future, predict, sequence):
    """Set ``future`` to ``predict([sequence])[0]``, or to the exception it raises."""
    try:
        future.set_result(predict([sequence])[0])
    except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
        future.set_exception(error)
