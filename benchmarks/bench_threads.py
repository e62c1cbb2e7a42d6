"""Do threads speed up predict on one fitted model? (The kernels release the GIL.)

A CRF is fitted on CoNLL-2002 Spanish (a few iterations: the weights do not
matter here), then ``predict_marginals`` runs on the test set, pre-vectorized
so that the time is the kernels', with ``n_jobs=1`` per call: once per task
serially, then with the same tasks spread over a pool of Python threads.
Without the GIL released, the threaded time would equal the serial one.

Run: python benchmarks/bench_threads.py [--tasks 32] [--threads 2 4]
"""

import argparse
import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from common import best_of, data_home, sent2features

from skcrf import CRFClassifier
from skcrf.datasets import load_conll2002


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    X_train, y_train = load_conll2002("train", data_home=data_home())
    X_test, _ = load_conll2002("testb", data_home=data_home())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CRFClassifier(alpha=0.3, max_iter=10, n_jobs=1).fit(
            [sent2features(s) for s in X_train], y_train)
    X = model.vectorizer_.transform([sent2features(s) for s in X_test])
    expected = model.predict_marginals(X)

    def task(_):
        return model.predict_marginals(X)

    serial = best_of(args.repeats, lambda: [task(i) for i in range(args.tasks)])
    print(f"{numba.config.NUMBA_NUM_THREADS} cores for numba; {args.tasks} calls of "
          f"predict_marginals on {X.n_tokens} tokens, n_jobs=1 each")
    print(f"{'serial':>12s}: {serial:6.2f} s")
    for n_threads in args.threads:
        with ThreadPoolExecutor(n_threads) as pool:
            threaded = best_of(args.repeats, lambda: list(pool.map(task, range(args.tasks))))
            results = list(pool.map(task, range(n_threads)))
        same = all(np.array_equal(a, b) for r in results for a, b in zip(r, expected))
        print(f"{n_threads:>4d} threads: {threaded:6.2f} s  speed-up {serial / threaded:4.2f}x"
              f"  results identical: {same}")


if __name__ == "__main__":
    main()
