"""Which structures are worth a dense (BLAS) route: fit time through CSR against the block.

A synthetic numeric task (``make_sequence_classification``: about 20k tokens,
64 dense dimensions, 10 labels), fitted with L-BFGS for a fixed number of
iterations, once from the list of arrays (the dense block) and once from the
same values as a CSR ``SequenceMatrix`` (the route before dense blocks).
Trees take each sequence as a path; the "partial" rows leave some labels
unknown; the "predict" rows time ``predict_marginals`` of every sequence (the
best of 3) by one model, given the dense block both times: read by BLAS, and
copied into CSR columns as before its dense route (the "CSR s" column). A
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

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, TreeCRF
from skcrf.datasets import make_sequence_classification

#: row -> (estimator maker, whether the estimator multiplies the block by BLAS, the
#: input: "chain" sequences, "tree" (each sequence a path: parents i - 1), with
#: "partial" labels (every third sequence's tokens 2, 7, 12... unknown), or
#: "predict" (predict_marginals of every sequence by a model fitted once))
ROWS = {
    "order 1": (lambda it: CRFClassifier(max_iter=it), True, "chain"),
    "order 2 exact": (lambda it: CRFClassifier(order=2, max_iter=it), True, "chain"),
    "order 2 pruned": (lambda it: CRFClassifier(order=2, prune_threshold=1e-3, max_iter=it),
                       True, "chain"),
    "semi-Markov": (lambda it: SemiMarkovCRF(max_iter=it), True, "chain"),
    "semi-Markov o2": (lambda it: SemiMarkovCRF(order=2, max_iter=it), True, "chain"),
    "tree": (lambda it: TreeCRF(max_iter=it), True, "tree"),
    "order 2 partial": (lambda it: CRFClassifier(order=2, max_iter=it), True, "partial"),
    "semi-M. partial": (lambda it: SemiMarkovCRF(max_iter=it), True, "partial"),
    "tree partial": (lambda it: TreeCRF(max_iter=it), True, "tree partial"),
    "semi-M. predict": (lambda it: SemiMarkovCRF(max_iter=it), True, "predict"),
    "tree predict": (lambda it: TreeCRF(max_iter=it), True, "tree predict"),
}


def as_csr(X, parents=None):
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    return SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets, parents=parents)


def inputs(X, kind):
    """``(dense input, the same values as CSR)`` of a row's kind."""
    if "tree" not in kind:
        return X, as_csr(X)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    parents = np.concatenate([np.arange(len(x)) - 1 for x in X])  # paths
    return (SequenceMatrix(None, offsets, parents=parents, dense=np.vstack(X)),
            as_csr(X, parents))


def labels_of(y, kind):
    if "partial" not in kind:
        return y
    return [[None if q % 3 == 0 and t % 5 == 2 else label for t, label in enumerate(labels)]
            for q, labels in enumerate(y)]


def timed_fit(make, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        model = make().fit(X, y)
    return time.perf_counter() - started, model


def timed_marginals(model, X):
    started = time.perf_counter()
    model.predict_marginals(X)
    return time.perf_counter() - started


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
    print(f"{sum(len(x) for x in X)} tokens x {args.dims} dims, {args.classes} labels, "
          f"{args.iter} L-BFGS iterations; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'structure':<16} {'CSR s':>8} {'dense s':>8} {'dense/CSR':>9}  route of the block")
    for name in [n.strip() for n in args.rows.split(",") if n.strip()]:
        maker, blas, kind = ROWS[name]
        X_dense, X_csr = inputs(X, kind)
        labels = labels_of(y, kind)
        warm_dense, warm_csr = inputs(X[:20], kind)
        for warm in (warm_dense, warm_csr):  # compile both routes
            _, model = timed_fit(lambda: maker(2), warm, labels[:20])
            model.predict_marginals(warm)
        if "predict" in kind:
            _, model = timed_fit(lambda: maker(args.iter), X_csr, labels)
            dense_seconds = min(timed_marginals(model, X_dense) for _ in range(3))
            # the same dense input read as CSR columns, as before its BLAS route
            model._reads_dense_block = lambda training: False
            csr_seconds = min(timed_marginals(model, X_dense) for _ in range(3))
        else:
            csr_seconds, _ = timed_fit(lambda: maker(args.iter), X_csr, labels)
            dense_seconds, _ = timed_fit(lambda: maker(args.iter), X_dense, labels)
        print(f"{name:<16} {csr_seconds:8.2f} {dense_seconds:8.2f} "
              f"{dense_seconds / csr_seconds:9.2f}  "
              f"{'BLAS' if blas else 'CSR columns (no dense route)'}", flush=True)


if __name__ == "__main__":
    main()
