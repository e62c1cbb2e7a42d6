"""Peak memory of fit, skcrf vs sklearn-crfsuite, and skcrf's memory over iterations.

Each library trains in a fresh interpreter (so neither inherits the other's
freed heap) on the same sklearn-crfsuite tutorial dicts, built before the
measurement starts. Peak memory is resident memory above the level before
``fit``, sampled every 5 ms (tracemalloc cannot see CRFsuite's C allocations).
skcrf also records its resident memory after every solver iteration: a leak
would show as growth from iteration 50 (once L-BFGS's history is full and the
allocator has settled) to the last.

Run: python benchmarks/bench_memory.py [--corpus conll2002] [--max-iter 200]

Targets (issue 6): skcrf's fit peak at most half of sklearn-crfsuite's, and
flat memory across the iterations.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

from common import PeakRSS, data_home, sent2features

from skcrf.datasets import load_conll2000, load_conll2002

LOADERS = {"conll2002": (load_conll2002, "train"), "conll2000": (load_conll2000, "train")}
CHECKPOINTS = (10, 50, 100, 150, 200)
#: The leak check starts after this iteration: until then the memory rises by a
#: few MiB as L-BFGS fills its history (6 pairs of vectors) and the allocator
#: settles (measured on esp.train: +2.0 MiB from iteration 10 to 50, then
#: +0.3 MiB from 50 to 200).
WARM_UP = 50
#: Growth after WARM_UP that still counts as flat: a leak of even 10 kB per
#: iteration would add 1.5 MiB over 150 iterations.
FLAT_MIB = 1.0


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _train_dicts(corpus):
    loader, split = LOADERS[corpus]
    X, y = loader(split, data_home=data_home())
    return [sent2features(s) for s in X], y


def run_crfsuite(X, y, max_iter):
    import sklearn_crfsuite

    model = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
                                 all_possible_transitions=True)
    with PeakRSS() as memory:
        started = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - started
    return {"peak": memory.mib, "seconds": seconds,
            "iterations": model.training_log_.last_iteration["num"]}


def run_skcrf(X, y, max_iter):
    from skcrf import CRFClassifier
    from skcrf.learning import lbfgs as _solvers

    # compile (or load from numba's cache) the kernels outside the measurement
    CRFClassifier(max_iter=1).fit([[{"a": 1.0}, {"b": 1.0}]], [["x", "y"]])
    per_iteration = []
    record = _solvers._Progress.record

    def recording(progress, *args, **kwargs):
        stop = record(progress, *args, **kwargs)
        per_iteration.append(_rss_mib())
        return stop

    _solvers._Progress.record = recording
    # tol=0: run every iteration, as the leak check needs
    model = CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter, tol=0.0)
    with PeakRSS() as memory:
        started = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - started
    base = memory.base / 2**20
    return {"peak": memory.mib, "seconds": seconds, "iterations": model.n_iter_,
            "rss_by_iteration": [rss - base for rss in per_iteration]}


def worker(library, corpus, max_iter):
    """Measure one library in this fresh process; print the result as JSON."""
    X, y = _train_dicts(corpus)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both may stop at max_iter
        run = run_skcrf if library == "skcrf" else run_crfsuite
        result = run(X, y, max_iter)
    result.update(n_sequences=len(X), n_tokens=sum(map(len, X)))
    print(json.dumps(result))


def measure_in_subprocess(library, corpus, max_iter):
    done = subprocess.run(
        [sys.executable, __file__, "--worker", library, "--corpus", corpus,
         "--max-iter", str(max_iter)],
        capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(corpus, crfsuite, skcrf):
    print(f"\n{corpus}: {skcrf['n_sequences']} training sequences, "
          f"{skcrf['n_tokens']} tokens")
    print(f"{'':28s}{'sklearn-crfsuite':>18s}{'skcrf':>10s}{'ratio':>9s}")
    print(f"{'fit peak memory (MiB)':28s}{crfsuite['peak']:18.1f}{skcrf['peak']:10.1f}"
          f"{skcrf['peak'] / crfsuite['peak']:8.2f}x")
    print(f"{'fit time (s)':28s}{crfsuite['seconds']:18.1f}{skcrf['seconds']:10.1f}"
          f"{skcrf['seconds'] / crfsuite['seconds']:8.2f}x")
    print(f"{'iterations':28s}{crfsuite['iterations']:18d}{skcrf['iterations']:10d}")
    rss = skcrf["rss_by_iteration"]
    print("skcrf resident memory above the start of fit, after iteration:")
    for i in CHECKPOINTS:
        if i <= len(rss):
            print(f"  {i:4d}: {rss[i - 1]:6.1f} MiB")
    for first in (10, WARM_UP):
        first = min(len(rss), first)
        print(f"  growth from iteration {first} to {len(rss)}: "
              f"{rss[-1] - rss[first - 1]:+.1f} MiB")
    growth = rss[-1] - rss[min(len(rss), WARM_UP) - 1]
    checks = [("fit peak <= 0.5x", skcrf["peak"] <= 0.5 * crfsuite["peak"]),
              (f"memory flat after iteration {WARM_UP} (growth < {FLAT_MIB:g} MiB)",
               abs(growth) < FLAT_MIB)]
    print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}"
                                  for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=sorted(LOADERS), default="conll2002")
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--worker", choices=["skcrf", "crfsuite"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.corpus, args.max_iter)
        return
    print(f"python {sys.version.split()[0]}, data from {data_home()}; each library in "
          f"its own process")
    crfsuite = measure_in_subprocess("crfsuite", args.corpus, args.max_iter)
    skcrf = measure_in_subprocess("skcrf", args.corpus, args.max_iter)
    report(args.corpus, crfsuite, skcrf)


if __name__ == "__main__":
    main()
