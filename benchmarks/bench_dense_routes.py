"""Which structures are worth a dense (BLAS) route: fit time through CSR against the block.

A synthetic numeric task (``make_sequence_classification``: about 20k tokens,
64 dense dimensions, 10 labels), fitted with L-BFGS for a fixed number of
iterations, once from the list of arrays (the dense block) and once from the
same values as a CSR ``SequenceMatrix`` (the route before dense blocks). A
structure without a dense route reads the block as CSR columns either way;
its row says so. Each fit runs in this process, alternately, after a warm-up
fit that compiles the kernels.

Run (from the checkout): PYTHONPATH=. python benchmarks/bench_dense_routes.py [--tokens 20000] [--dims 64] [--iter 30]
"""

import argparse
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix
from skcrf.datasets import make_sequence_classification

#: row -> (estimator maker, whether the estimator multiplies the block by BLAS)
ROWS = {
    "order 1": (lambda it: CRFClassifier(max_iter=it), True),
    "order 2 exact": (lambda it: CRFClassifier(order=2, max_iter=it), True),
    "order 2 pruned": (lambda it: CRFClassifier(order=2, prune_threshold=1e-3, max_iter=it),
                       True),
    "semi-Markov": (lambda it: SemiMarkovCRF(max_iter=it), True),
}


def as_csr(X):
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    return SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets)


def timed_fit(make, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        model = make().fit(X, y)
    return time.perf_counter() - started, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--iter", type=int, default=30)
    parser.add_argument("--rows", default=",".join(ROWS))
    args = parser.parse_args()
    n_sequences = args.tokens // 25
    # stickiness 0.6: runs of a few tokens, so the semi-Markov CRF's longest
    # segment (the longest training run) stays short
    X, y = make_sequence_classification(n_sequences, n_features=args.dims,
                                        n_classes=args.classes, length_range=(10, 40),
                                        stickiness=0.6, random_state=0)
    y = [np.asarray(labels).astype(str) for labels in y]
    X_csr = as_csr(X)
    print(f"{sum(len(x) for x in X)} tokens x {args.dims} dims, {args.classes} labels, "
          f"{args.iter} L-BFGS iterations; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'structure':<16} {'CSR s':>8} {'dense s':>8} {'dense/CSR':>9}  route of the block")
    for name in [n.strip() for n in args.rows.split(",") if n.strip()]:
        maker, blas = ROWS[name]
        for warm in (X[:20], as_csr(X[:20])):  # compile both routes
            timed_fit(lambda: maker(2), warm, y[:20])
        csr_seconds, _ = timed_fit(lambda: maker(args.iter), X_csr, y)
        dense_seconds, _ = timed_fit(lambda: maker(args.iter), X, y)
        print(f"{name:<16} {csr_seconds:8.2f} {dense_seconds:8.2f} "
              f"{dense_seconds / csr_seconds:9.2f}  "
              f"{'BLAS' if blas else 'CSR columns (no dense route)'}", flush=True)


if __name__ == "__main__":
    main()
