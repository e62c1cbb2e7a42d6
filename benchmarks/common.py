"""Shared pieces of the benchmark scripts: data, tutorial features, measurement."""

import ctypes
import gc
import os
import sys
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skcrf.datasets import get_data_home, load_conll2000, load_conll2002  # noqa: E402

#: The CoNLL corpora the comparisons run on: loader, training split, test split.
CORPORA = {
    "conll2002": (load_conll2002, "train", "testb"),
    "conll2000": (load_conll2000, "train", "test"),
}


def data_home():
    """$SKCRF_DATA, else the repository's ../shared/data."""
    if "SKCRF_DATA" in os.environ:
        return get_data_home()
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def add_corpus_argument(parser):
    """``--corpus``: one or more of CORPORA, all by default."""
    parser.add_argument("--corpus", nargs="+", choices=sorted(CORPORA),
                        default=["conll2002", "conll2000"])


def tutorial_splits(corpus):
    """``(F_train, y_train, F_test, y_test)``: a corpus as the tutorial's feature dicts."""
    loader, train, test = CORPORA[corpus]
    X_train, y_train = loader(train, data_home=data_home())
    X_test, y_test = loader(test, data_home=data_home())
    return ([sent2features(s) for s in X_train], y_train,
            [sent2features(s) for s in X_test], y_test)


def best_of(repeats, run):
    """The fastest of ``repeats`` wall-clock timings of ``run()``, in seconds.

    Each timing starts after a full garbage collection: the objects an earlier
    step left (a fit's millions of feature dicts) would otherwise be scanned
    by whichever timed call first crosses the collector's threshold.
    """
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def fit_and_predict(model, X_train, y_train, X_test):
    """Fit ``model`` (timed, peak memory) and predict ``X_test`` (timed).

    Warnings are silenced during fit: the benchmarks stop every model at
    ``max_iter`` by design. Returns ``(y_pred as lists of labels, fit seconds,
    predict seconds, fit peak memory in MiB)``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PeakRSS() as memory:
            started = time.perf_counter()
            model.fit(X_train, y_train)
            fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    y_pred = [list(labels) for labels in model.predict(X_test)]
    return y_pred, fit_seconds, time.perf_counter() - started, memory.mib


def print_table(title, results, cell):
    """Print one column per model, one row per measure (each measure once, in first order).

    ``cell(key, value)`` formats a value in 12 characters; a model without
    the measure gets a blank cell.
    """
    names = list(results)
    print(f"\n{title}")
    print(f"{'':24s}" + "".join(f"{name:>12s}" for name in names))
    for key in dict.fromkeys(k for r in results.values() for k in r):
        cells = [f"{'':>12s}" if results[name].get(key) is None
                 else cell(key, results[name][key]) for name in names]
        print(f"{key:24s}" + "".join(cells))


def print_fit_ratios(results, bases):
    """Each model's fit time over that of each base model present."""
    for base in bases:
        if base in results:
            print(f"fit time / {base}: " + ", ".join(
                f"{name} {results[name]['fit (s)'] / results[base]['fit (s)']:.2f}x"
                for name in results if name != base))


def word2features(sent, i):
    """The sklearn-crfsuite tutorial's features for token i of a (word, POS) sentence."""
    word, postag = sent[i][0], sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    for offset, edge in ((-1, "BOS"), (1, "EOS")):
        if not 0 <= i + offset < len(sent):
            features[edge] = True
            continue
        word1, postag1 = sent[i + offset][0], sent[i + offset][1]
        features.update({
            f"{offset:+d}:word.lower()": word1.lower(),
            f"{offset:+d}:word.istitle()": word1.istitle(),
            f"{offset:+d}:word.isupper()": word1.isupper(),
            f"{offset:+d}:postag": postag1,
            f"{offset:+d}:postag[:2]": postag1[:2],
        })
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


class PeakRSS:
    """Peak resident memory above the starting level, sampled in a thread.

    tracemalloc cannot see CRFsuite's C allocations, so both libraries are
    measured the same way: resident set size from /proc, every 5 ms.
    """

    def __init__(self, interval=0.005):
        self.interval = interval

    @staticmethod
    def _rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    @staticmethod
    def _release_free_memory():
        """Return freed heap pages to the OS (glibc), so the base is honest.

        Without it, memory freed by an earlier measurement in the same process
        stays resident and a later fit reuses it without raising the RSS: the
        second library measured looked like it needed no memory at all.
        """
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass

    def __enter__(self):
        gc.collect()
        self._release_free_memory()
        self.base = self._rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
        self.mib = (self.peak - self.base) / 2**20
