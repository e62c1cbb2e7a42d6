"""Data-parallel training on Dask: per-iteration time, memory per worker and overhead.

On CoNLL-2002 Spanish NER (esp.train) and CoNLL-2000 chunking, with the
tutorial feature dicts: one objective evaluation (an L-BFGS iteration is
about one) of a local fit, against skcrf.dask.fit on a LocalCluster of
2 worker processes x 1 thread; the overhead of the distributed evaluation
(wall time minus the busiest worker's kernel time), the bytes it moves (as
the fit counts them, and as the workers count what they send), the
resident memory of each worker holding its partitions' objective, and
sklearn-crfsuite's time per iteration from the same run as a reference.

Run: python benchmarks/bench_dask.py [--corpus conll2002 conll2000] [--max-iter 30]
     [--partitions 8] [--subset N]

The machine is shared and noisy: compare figures of one run, not across runs.
"""

import argparse
import time
import warnings

import numpy as np
from common import CORPORA, PeakRSS, add_corpus_argument, data_home, sent2features

from skcrf import CRFClassifier
from skcrf._utils.parallel import kernel_threads
from skcrf.dask._fit import fit_recorded
from skcrf.dask._partitions import kernel_seconds


def local_per_evaluation(X, y, max_iter):
    """Seconds per objective evaluation of a local fit, its fit time and peak memory."""
    crf = CRFClassifier(max_iter=max_iter, tol=0.0)
    data = crf._training_data(X, y)
    objective = crf._training_problem(data).objective(data, crf._l2)
    w = np.zeros(objective.n_parameters)
    # as the solver calls it: BLAS held to one thread (see skcrf._utils.parallel)
    with kernel_threads(crf.n_jobs, hold_blas=True):
        objective(w)  # compiled or loaded from the cache: not timed
        started = time.perf_counter()
        for _ in range(5):
            objective(w)
        per_evaluation = (time.perf_counter() - started) / 5
    with PeakRSS() as memory:
        started = time.perf_counter()
        crf.fit(X, y)
        fit_seconds = time.perf_counter() - started
    return per_evaluation, fit_seconds, memory.mib, objective.n_parameters


def distributed_figures(client, X, y, max_iter, npartitions):
    import dask.bag as db
    import psutil

    def rss():
        return psutil.Process().memory_info().rss

    # a small fit first: the workers import skcrf and load the kernels before the baseline
    small = db.from_sequence(list(zip(X[:50], y[:50])), npartitions=2)
    fit_recorded(CRFClassifier(max_iter=2), small.pluck(0), small.pluck(1), client=client)
    base = client.run(rss)
    pairs = db.from_sequence(list(zip(X, y)), npartitions=npartitions)
    started = time.perf_counter()
    crf, terms = fit_recorded(CRFClassifier(max_iter=max_iter, tol=0.0), pairs.pluck(0),
                              pairs.pluck(1), client=client)
    fit_seconds = time.perf_counter() - started
    held = client.run(rss)  # the workers still hold the objectives (terms refers to them)
    owners = client.who_has(terms.objectives)
    seconds = client.gather([client.submit(kernel_seconds, o, pure=False)
                             for o in terms.objectives])
    busiest = {}
    for future, spent in zip(terms.objectives, seconds):
        worker = owners[future.key][0]
        busiest[worker] = busiest.get(worker, 0.0) + spent
    per_evaluation = terms.seconds / terms.n_calls
    # bytes the workers sent (to each other, and to the client through the
    # scheduler) over a few more evaluations, counted by the workers themselves
    before = sum(client.run(sent_bytes).values())
    w = np.zeros(terms.n_parameters)
    for _ in range(3):
        terms(w)
    workers_sent = (sum(client.run(sent_bytes).values()) - before) / 3
    kernel_per_evaluation = max(busiest.values()) / terms.n_calls
    result = {
        "per evaluation (ms)": 1e3 * per_evaluation,
        "busiest worker's kernels (ms)": 1e3 * kernel_per_evaluation,
        "overhead per evaluation (ms)": 1e3 * (per_evaluation - kernel_per_evaluation),
        "moved per evaluation (MiB)": (terms.run.bytes_out + terms.run.bytes_in)
        / terms.n_calls / 2**20,
        "workers sent per evaluation, measured (MiB)": workers_sent / 2**20,
        "vectors to the client per evaluation": getattr(terms, "n_vectors_in",
                                                        len(terms.objectives) * terms.n_calls)
        / terms.n_calls,
        "fit (s)": fit_seconds,
        "setup (s)": fit_seconds - terms.seconds,
        "worker memory held (MiB)": [round((held[a] - base[a]) / 2**20, 1) for a in sorted(held)],
        "worker RSS (MiB)": [round(held[a] / 2**20, 1) for a in sorted(held)],
        "n_parameters": terms.n_parameters,
    }
    del terms
    return result


def sent_bytes(dask_worker):
    return dask_worker.transfer_outgoing_bytes_total


def crfsuite_per_iteration(X, y, max_iter):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
                               all_possible_transitions=True)
    started = time.perf_counter()
    crf.fit(X, y)
    return (time.perf_counter() - started) / max_iter


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_argument(parser)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--subset", type=int, default=None,
                        help="first N training sentences only (a quick check)")
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for corpus in args.corpus:
            loader, train, _ = CORPORA[corpus]
            X, y = loader(train, data_home=data_home())
            X, y = X[:args.subset], y[:args.subset]
            X = [sent2features(s) for s in X]
            n_tokens = sum(map(len, y))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # max_iter is reached by design
                local, local_fit, local_mib, n_parameters = local_per_evaluation(
                    X, y, args.max_iter)
                dist = distributed_figures(client, X, y, args.max_iter, args.partitions)
            try:
                crfsuite = crfsuite_per_iteration(X, y, args.max_iter)
            except ImportError:
                crfsuite = float("nan")
            print(f"\n{corpus}: {len(X)} sequences, {n_tokens} tokens, {n_parameters} "
                  f"parameters, {args.partitions} partitions, max_iter={args.max_iter}")
            print(f"  local (2 threads): {1e3 * local:.1f} ms per evaluation, fit "
                  f"{local_fit:.2f} s, fit peak memory {local_mib:.1f} MiB")
            print(f"  sklearn-crfsuite: {1e3 * crfsuite:.1f} ms per iteration")
            print("  LocalCluster (2 workers x 1 thread):")
            for key, value in dist.items():
                shown = f"{value:.2f}" if isinstance(value, float) else value
                print(f"    {key}: {shown}")
            print(f"  tokens per second per evaluation: local {n_tokens / local:.3g}, "
                  f"distributed {n_tokens / (dist['per evaluation (ms)'] / 1e3):.3g}")


if __name__ == "__main__":
    main()
