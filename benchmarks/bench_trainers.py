"""skcrf's online solvers against CRFsuite's online trainers, and averaged SGD against L-BFGS.

On CoNLL-2002 Spanish NER (esp.train, tested on esp.testb) and CoNLL-2000
chunking, with the sklearn-crfsuite tutorial's feature dicts (built before
any timing), three comparisons:

1. each of CRFsuite's l2sgd / ap / pa / arow (through sklearn-crfsuite) against
   skcrf's sgd / perceptron / passive_aggressive / arow with the same settings
   and the same number of epochs: fit time (turning the dicts into each
   library's representation included) and span F1;
2. averaged SGD (``solver="sgd", average=True``) for at most 10 epochs against
   skcrf's own L-BFGS, both with CRFsuite's usual c1 = c2 = 0.1
   (``alpha=0.3, l1_ratio=1/3``);
3. a stream: ``partial_fit`` over esp.train in 100 batches, each through
   :class:`~skcrf.SequenceHasher`, with the resident memory after batches 10,
   50 and 100.

Run: python benchmarks/bench_trainers.py [--corpus conll2002 conll2000]
[--epochs 10] [--batches 100] [--skip-stream]

Targets (issue 33): (1) skcrf's fit <= 0.3x CRFsuite's time, span F1 within
0.3 point; (2) averaged SGD within 0.3 point of L-BFGS's F1 in <= 10 epochs
and <= 0.5x its fit time; (3) memory flat in the number of batches. The
machine is shared and noisy: compare the ratios one run prints, not absolute
times across runs.
"""

import argparse
import gc
import os
import platform
import time
import warnings

import numba
from common import add_corpus_argument, data_home, tutorial_splits

from skcrf import CRFClassifier, SequenceHasher
from skcrf.metrics import span_f1_score

#: CRFsuite's trainer and its settings (its defaults, spelled out), and skcrf's
#: parameters for the same algorithm. CRFsuite's l2sgd minimises
#: ``sum_q -log p + c2 * ||w||^2``: skcrf's ``alpha = 2 * c2``, pure L2.
TRAINERS = {
    "l2sgd": ({"algorithm": "l2sgd", "c2": 1.0},
              {"solver": "sgd", "alpha": 2.0, "l1_ratio": 0.0, "average": False}),
    "ap": ({"algorithm": "ap"},
           {"solver": "perceptron", "average": True}),
    "pa": ({"algorithm": "pa", "pa_type": 1, "c": 1.0, "error_sensitive": True,
            "averaging": True},
           {"solver": "passive_aggressive", "C": 1.0, "average": True}),
    "arow": ({"algorithm": "arow", "variance": 1.0, "gamma": 1.0},
             {"solver": "arow", "C": 1.0, "average": False}),
}

#: The stream's batches whose resident memory is reported.
STREAM_CHECKPOINTS = (10, 50, 100)
#: Growth from the first checkpoint to the last that still counts as flat.
FLAT_MIB = 16.0


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed_fit(model, X, y):
    """Seconds of ``model.fit(X, y)``, after a full garbage collection."""
    gc.collect()
    with warnings.catch_warnings():
        # the online fits stop at max_iter by design of the comparison
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - started


def f1(model, X, y):
    return span_f1_score(y, [list(labels) for labels in model.predict(X)])


def compare_trainers(corpus, F_train, y_train, F_test, y_test, epochs):
    import sklearn_crfsuite

    print(f"\n{corpus}: CRFsuite's online trainers against skcrf's, {epochs} epochs")
    print(f"{'trainer':10s}{'crfsuite fit':>14s}{'skcrf fit':>11s}{'ratio':>8s}"
          f"{'crfsuite F1':>13s}{'skcrf F1':>10s}{'diff':>9s}   targets")
    for name, (theirs, ours) in TRAINERS.items():
        crfsuite = sklearn_crfsuite.CRF(max_iterations=epochs, all_possible_transitions=True,
                                        **theirs)
        their_seconds = timed_fit(crfsuite, F_train, y_train)
        their_f1 = f1(crfsuite, F_test, y_test)
        skcrf = CRFClassifier(max_iter=epochs, tol=0.0, n_iter_no_change=epochs,
                              random_state=0, **ours)
        our_seconds = timed_fit(skcrf, F_train, y_train)
        our_f1 = f1(skcrf, F_test, y_test)
        ratio = our_seconds / their_seconds
        fast = ratio <= 0.3
        close = our_f1 >= their_f1 - 0.003
        print(f"{name:10s}{their_seconds:13.2f}s{our_seconds:10.2f}s{ratio:7.2f}x"
              f"{their_f1:13.4f}{our_f1:10.4f}{(our_f1 - their_f1) * 100:+8.2f}pt   "
              f"time {'met' if fast else 'MISSED'}, F1 {'met' if close else 'MISSED'}")


def compare_averaged_sgd(corpus, F_train, y_train, F_test, y_test, epochs):
    print(f"\n{corpus}: averaged SGD ({epochs} epochs) against L-BFGS, alpha=0.3, "
          f"l1_ratio=1/3")
    lbfgs = CRFClassifier(alpha=0.3, l1_ratio=1 / 3)
    lbfgs_seconds = timed_fit(lbfgs, F_train, y_train)
    lbfgs_f1 = f1(lbfgs, F_test, y_test)
    asgd = CRFClassifier(solver="sgd", average=True, alpha=0.3, l1_ratio=1 / 3,
                         max_iter=epochs, tol=0.0, n_iter_no_change=epochs, random_state=0)
    asgd_seconds = timed_fit(asgd, F_train, y_train)
    asgd_f1 = f1(asgd, F_test, y_test)
    print(f"{'':22s}{'fit (s)':>9s}{'iterations':>12s}{'span F1':>10s}")
    print(f"{'L-BFGS':22s}{lbfgs_seconds:9.2f}{lbfgs.n_iter_:12d}{lbfgs_f1:10.4f}")
    print(f"{'averaged SGD':22s}{asgd_seconds:9.2f}{asgd.n_iter_:12d}{asgd_f1:10.4f}")
    ratio = asgd_seconds / lbfgs_seconds
    print(f"ratio {ratio:.2f}x, F1 {(asgd_f1 - lbfgs_f1) * 100:+.2f}pt; targets: "
          f"time <= 0.5x {'met' if ratio <= 0.5 else 'MISSED'}, F1 within 0.3pt "
          f"{'met' if asgd_f1 >= lbfgs_f1 - 0.003 else 'MISSED'}, epochs <= 10 "
          f"{'met' if asgd.n_iter_ <= 10 else 'MISSED'}")


def stream(F_train, y_train, F_test, y_test, n_batches):
    """partial_fit over the training set in batches through SequenceHasher; RSS by batch."""
    print(f"\nconll2002: a stream of {n_batches} batches through SequenceHasher "
          f"(2**20 columns), averaged SGD, one partial_fit per batch")
    classes = sorted({label for labels in y_train for label in labels})
    hasher = SequenceHasher()
    # the penalty counts once per call: alpha / n_batches is fit's alpha = 0.3 over all
    model = CRFClassifier(solver="sgd", average=True, alpha=0.3 / n_batches,
                          l1_ratio=0.0, random_state=0)
    n = len(F_train)
    gc.collect()
    base = _rss_mib()
    memory = {}
    started = time.perf_counter()
    for b in range(n_batches):
        lo, hi = n * b // n_batches, n * (b + 1) // n_batches
        model.partial_fit(hasher.transform(F_train[lo:hi]), y_train[lo:hi], classes=classes)
        if b + 1 in STREAM_CHECKPOINTS or b + 1 == n_batches:
            memory[b + 1] = _rss_mib() - base
    seconds = time.perf_counter() - started
    score = f1(model, hasher.transform(F_test), y_test)
    print("resident memory above the start (MiB): " + ", ".join(
        f"after {b} batches {mib:.1f}" for b, mib in sorted(memory.items())))
    first, last = min(memory), max(memory)
    growth = memory[last] - memory[first]
    print(f"{seconds:.1f} s in all, span F1 {score:.4f}; growth from batch {first} to "
          f"{last}: {growth:+.1f} MiB, target flat (< {FLAT_MIB:.0f} MiB): "
          f"{'met' if growth < FLAT_MIB else 'MISSED'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_argument(parser)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--skip-stream", action="store_true")
    args = parser.parse_args()

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}; load "
          f"average {os.getloadavg()[0]:.1f} at the start")
    # compile (or load from cache) every solver's kernels outside the timed region
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = [[{"a": 1.0}, {"b": 1.0}], [{"a": 1.0}]], [["x", "y"], ["x"]]
        for settings in (*(ours for _, ours in TRAINERS.values()), {"solver": "lbfgs"}):
            CRFClassifier(max_iter=2, **settings).fit(X, y).predict(X)
        CRFClassifier(solver="sgd", average=True, l1_ratio=0.5, max_iter=2).fit(X, y)

    for corpus in args.corpus:
        F_train, y_train, F_test, y_test = tutorial_splits(corpus)
        compare_trainers(corpus, F_train, y_train, F_test, y_test, args.epochs)
        compare_averaged_sgd(corpus, F_train, y_train, F_test, y_test, args.epochs)
        if corpus == "conll2002" and not args.skip_stream:
            stream(F_train, y_train, F_test, y_test, args.batches)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
