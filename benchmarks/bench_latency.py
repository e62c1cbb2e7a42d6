"""Single-sentence latency of the raw-token pipeline, without the long fits of bench_training.

Fits (or loads from ``--models``) the three models of bench_training's
``latency_report`` with few iterations, and a pipeline of SequenceVectorizer
and CRFClassifier on the same feature dicts, then times tagging each of 200
esp.testb sentences one at a time, in CPU time (``time.process_time``), many
rounds (the raw-token pipeline also with its fitted steps called in turn,
without the Pipeline's own checks); prints the min and median per sentence
of each way and its ratio to
sklearn-crfsuite's ``predict_single`` on ready dicts, including sklearn-crfsuite's
own model loaded into skcrf (``skcrf.compat.load_crfsuite``). With ``--phases``,
also each step of the raw-token pipeline called alone, and what the
:class:`~sklearn.pipeline.Pipeline` itself adds (its predict less its steps,
timed alternately sentence by sentence; the featurizer's output for a few
sentences is built only when read, so "TokenFeaturizer" is its checks and the
vectorizer's phase holds the features' work, see ``_small_columns.py``). Then serves
sklearn-crfsuite's model, the raw-token pipeline and the dict model from 1, 2 and 4
threads at once, one sentence a call, directly and through
``skcrf.serving.MicroBatcher``, and prints the sentences per second (wall time) of
each, and the same with batches of 50 sentences a call: one-sentence calls are
mostly Python under the GIL, which the batcher's shared calls amortize. Last, the same from 1 and 2 worker processes (each its own
GIL), which is how a server uses more cores.

Run: python benchmarks/bench_latency.py [--max-iter 30] [--rounds 15] [--models FILE]
[--phases] [--no-threads] [--no-processes]
The machine may be shared: compare ratios, and alternate runs of two versions
(PYTHONPATH=<other checkout> runs another skcrf on the same --models file).
"""

import argparse
import math
import os
import pickle
import threading
import time
import warnings

import numpy as np
import skcrf
from common import data_home, sent2features

from skcrf import CRFClassifier
from skcrf.compat import load_crfsuite
from skcrf.datasets import load_conll2002
from skcrf.features import SequenceVectorizer, TokenFeaturizer

try:
    from skcrf.serving import MicroBatcher
except ImportError:  # an earlier skcrf, run for comparison
    MicroBatcher = None

SKCRF = dict(alpha=0.3, l1_ratio=1 / 3)

#: Sentences per call in the thread table's batched rows.
BATCH = 50


def fitted_models(max_iter, path):
    """(crfsuite, token pipeline, dict model, dict pipeline), fitted, or loaded from ``path``.

    A file of an earlier version of this script holds the first three: the
    others are fitted and the file rewritten.
    """
    import sklearn_crfsuite
    from sklearn.pipeline import make_pipeline

    models = []
    if path and os.path.exists(path):
        with open(path, "rb") as file:
            models = list(pickle.load(file))
    makes = [
        (lambda: sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                      max_iterations=max_iter), "dicts"),
        (lambda: make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                               CRFClassifier(max_iter=max_iter, **SKCRF)), "tokens"),
        (lambda: CRFClassifier(max_iter=max_iter, **SKCRF), "dicts"),
        (lambda: make_pipeline(SequenceVectorizer(), CRFClassifier(max_iter=max_iter, **SKCRF)),
         "dicts"),
    ]
    if len(models) == len(makes):
        return models
    X, y = load_conll2002("train", data_home=data_home())
    inputs = {"tokens": X, "dicts": [sent2features(s) for s in X]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models += [make().fit(inputs[kind], y) for make, kind in makes[len(models):]]
    if path:
        with open(path, "wb") as file:
            pickle.dump(models, file)
    return models


def by_steps(pipeline, X):
    """``pipeline.predict(X)`` without the Pipeline's own checks (see deployment.rst)."""
    *transformers, model = [step for _, step in pipeline.steps]
    for step in transformers:
        X = step.transform(X)
    return model.predict(X)


def per_sentence(tag, items, rounds):
    """CPU seconds per item of ``tag(item)``: (min, median) over ``rounds`` rounds."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for item in items:
            tag(item)
        times.append((time.process_time() - started) / len(items))
    return min(times), float(np.median(times))


def pipeline_phases(pipeline, sentences, rounds):
    """CPU us per sentence of each step of ``pipeline`` alone, of all, and of its predict.

    Each sentence goes through the steps one by one and through the
    pipeline, each in turn first, so both meet the same load. Min over
    rounds of each; the steps' total is the min of the rounds' totals, so
    "Pipeline.predict" less it is about what the Pipeline adds, within noise.
    Also times the ``check_is_fitted`` the Pipeline calls on each predict.
    """
    from sklearn.utils.validation import check_is_fitted

    *transformers, model = [step for _, step in pipeline.steps]
    names = [type(step).__name__ for step in transformers] + [
        f"{type(model).__name__}.predict", "steps' total", "Pipeline.predict",
        "check_is_fitted(Pipeline)"]
    best = [math.inf] * len(names)
    clock = time.process_time_ns
    for _ in range(rounds):
        spent = [0] * len(names)
        for i, sentence in enumerate(sentences):
            # in turn first and second: the second meets the featurizer's names warm
            for whole in ((False, True) if i % 2 else (True, False)):
                if whole:
                    started = clock()
                    pipeline.predict([sentence])
                    spent[-2] += clock() - started
                    continue
                X = [sentence]
                for k, step in enumerate(transformers):
                    started = clock()
                    X = step.transform(X)
                    spent[k] += clock() - started
                started = clock()
                model.predict(X)
                spent[-4] += clock() - started
            started = clock()
            check_is_fitted(pipeline)
            spent[-1] += clock() - started
        spent[-3] = sum(spent[:-3])
        best = [min(b, s / len(sentences) / 1e3) for b, s in zip(best, spent)]
    return dict(zip(names, best))


def threaded_throughput(tag, items, n_threads, rounds):
    """(items per wall-clock second, process CPU us per item), the best of ``rounds``.

    ``n_threads`` threads each tag all of ``items``. On a shared machine the
    wall-clock rate follows the load; the CPU time per item (all threads',
    the batcher's worker included) does much less.
    """
    best, cpu = 0.0, math.inf
    for _ in range(rounds):
        start = threading.Barrier(n_threads + 1)

        def work():
            start.wait()
            for item in items:
                tag(item)

        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for thread in threads:
            thread.start()
        start.wait()
        started, cpu_started = time.perf_counter(), time.process_time()
        for thread in threads:
            thread.join()
        n = n_threads * len(items)
        best = max(best, n / (time.perf_counter() - started))
        cpu = min(cpu, (time.process_time() - cpu_started) / n * 1e6)
    return best, cpu


def _tag_in_process(model, way, items, rounds, ready, results):
    """A worker process of :func:`process_throughput`: tag ``items`` ``rounds`` times."""
    before = _resident_mib()
    model = pickle.loads(model)  # only this way's model: the memory below is its own
    loaded = _resident_mib()
    tag = (model.predict_single if way == "crfsuite"
           else lambda sequence: model.predict([sequence]))
    for item in items[:20]:  # load the kernels before the clock starts
        tag(item)
    ready.wait()
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for item in items:
            tag(item)
    results.put((time.perf_counter() - started, time.process_time() - cpu_started,
                 before, loaded, _resident_mib()))


def _resident_mib():
    """This process's resident memory now, in MiB (Linux; NaN elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return math.nan


def process_throughput(model, way, items, n_processes, rounds):
    """(items per wall-clock second, CPU us per item, MiB) of ``n_processes`` processes.

    Each process (started by ``spawn``: its own interpreter and GIL, as a
    server's worker processes) loads the pickled ``model`` and tags all of
    ``items`` ``rounds`` times, one a call; all start together. The rate is
    the items of all processes over the slowest process's time. The memory
    is a process's resident set before unpickling the model (the
    interpreter, numpy, scikit-learn, skcrf and sklearn-crfsuite imported),
    after it, and at the end (the kernels loaded, the caches of values
    filled), the largest of the processes'.
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    ready, results = context.Barrier(n_processes + 1), context.Queue()
    processes = [context.Process(target=_tag_in_process,
                                 args=(model, way, items, rounds, ready, results))
                 for _ in range(n_processes)]
    for process in processes:
        process.start()
    ready.wait()
    times = [results.get() for _ in processes]
    for process in processes:
        process.join()
    n = n_processes * rounds * len(items)
    return (n / max(t[0] for t in times), sum(t[1] for t in times) / n * 1e6,
            tuple(max(t[k] for t in times) for k in (2, 3, 4)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--models", default=None,
                        help="pickle of the fitted models: loaded if it exists, else written")
    parser.add_argument("--phases", action="store_true",
                        help="also time each step of the raw-token pipeline alone")
    parser.add_argument("--no-threads", action="store_true",
                        help="skip serving from 1, 2 and 4 threads")
    parser.add_argument("--no-processes", action="store_true",
                        help="skip serving from 1 and 2 worker processes")
    args = parser.parse_args()
    print(f"skcrf from {os.path.dirname(skcrf.__file__)}; load average "
          f"{os.getloadavg()[0]:.2f} at start")
    crfsuite, pipeline, dicts, dict_pipeline = fitted_models(args.max_iter, args.models)
    X_test, _ = load_conll2002("testb", data_home=data_home())
    sentences = X_test[:200]
    ready = [sent2features(s) for s in sentences]
    started = time.perf_counter()
    loaded = load_crfsuite(crfsuite)  # sklearn-crfsuite's model, read into skcrf
    loading = time.perf_counter() - started
    started = time.perf_counter()
    loaded.predict_single(ready[0])
    first = time.perf_counter() - started
    for s in sentences[:5]:  # compile / load the kernels outside the timings
        pipeline.predict([s])
    rows = [
        ("sklearn-crfsuite predict_single, dicts ready",
         per_sentence(crfsuite.predict_single, ready, args.rounds)),
        ("sklearn-crfsuite, tutorial features built",
         per_sentence(lambda s: crfsuite.predict_single(sent2features(s)), sentences,
                      args.rounds)),
        ("skcrf predict([dicts]), dicts ready",
         per_sentence(lambda f: dicts.predict([f]), ready, args.rounds)),
        ("skcrf Pipeline(SequenceVectorizer, CRF), dicts",
         per_sentence(lambda f: dict_pipeline.predict([f]), ready, args.rounds)),
        ("skcrf raw-token pipeline predict([s])",
         per_sentence(lambda s: pipeline.predict([s]), sentences, args.rounds)),
        ("raw-token steps called in turn, no Pipeline",
         per_sentence(lambda s: by_steps(pipeline, [s]), sentences, args.rounds)),
        ("its model in skcrf.compat, predict_single",
         per_sentence(loaded.predict_single, ready, args.rounds)),
    ]
    base = rows[0][1][0]
    print(f"{'':44s}{'min us':>8s}{'median':>8s}{'min / crfsuite':>16s}")
    for name, (low, median) in rows:
        print(f"{name:44s}{low * 1e6:8.0f}{median * 1e6:8.0f}{low / base:15.2f}x")
    print(f"load_crfsuite of sklearn-crfsuite's model: {loading * 1e3:.0f} ms; its first "
          f"predict_single: {first * 1e3:.1f} ms")
    if args.phases:
        phases = pipeline_phases(pipeline, sentences, args.rounds)
        print("raw-token pipeline, min CPU us per sentence: "
              + ", ".join(f"{name} {us:.0f}" for name, us in phases.items()))
    if not args.no_threads:
        print_threads(crfsuite, pipeline, dicts, sentences, ready, args.rounds)
    if not args.no_processes:
        print(f"n worker processes each tagging all {len(sentences)} "
              f"{args.rounds} times, one a call: sentences/s (wall), CPU us per sentence "
              f"(all processes), then a process's resident MiB before loading its model, after, "
              f"and at the end")
        print(f"{'':44s}{'1':>8s}{'2':>8s}{'1':>8s}{'2':>8s}{'before':>8s}{'loaded':>8s}"
              f"{'end':>8s}")
        for name, way, model, items in (
                ("sklearn-crfsuite predict_single", "crfsuite", crfsuite, ready),
                ("raw-token pipeline, predict([s])", "pipeline", pipeline, sentences),
                ("dicts, predict([f])", "dicts", dicts, ready)):
            rates = [process_throughput(pickle.dumps(model), way, items, n, args.rounds)
                     for n in (1, 2)]
            before, loaded, end = rates[-1][2]
            print(f"{name:44s}" + "".join(f"{rate:8.0f}" for rate, _, _ in rates)
                  + "".join(f"{cpu:8.0f}" for _, cpu, _ in rates)
                  + f"{before:8.0f}{loaded:8.0f}{end:8.0f}")


def print_threads(crfsuite, pipeline, dicts, sentences, ready, rounds):
    """Print the rates of 1, 2 and 4 threads tagging one sentence a call, direct and batched."""
    print(f"n threads each tagging all {len(sentences)}, one a call unless said: sentences/s "
          f"(wall), then CPU us per sentence (all threads)")
    print(f"{'':44s}{'1':>8s}{'2':>8s}{'4':>8s}{'1':>8s}{'2':>8s}{'4':>8s}")
    # (name, a tag function's maker, items, sentences per item)
    ways = [("sklearn-crfsuite predict_single", lambda: crfsuite.predict_single, ready, 1),
            ("raw-token pipeline, predict([s])", lambda: lambda s: pipeline.predict([s]),
             sentences, 1),
            ("dicts, predict([f])", lambda: lambda f: dicts.predict([f]), ready, 1)]
    if MicroBatcher is not None:  # an skcrf of before skcrf.serving has none
        ways += [("raw-token pipeline through MicroBatcher", lambda: MicroBatcher(
                     pipeline.predict).predict_one, sentences, 1),
                 ("dicts through MicroBatcher", lambda: MicroBatcher(
                     dicts.predict).predict_one, ready, 1)]
    # whole batches a call (the threads' own, as a batch job splits its input):
    # only there do the kernels, which run without the GIL, take much of a call
    # (ten times over: a thread's share would otherwise take a few milliseconds)
    batches = [sentences[i:i + BATCH] for i in range(0, len(sentences), BATCH)] * 10
    batches_ready = [ready[i:i + BATCH] for i in range(0, len(ready), BATCH)] * 10
    ways += [(f"sklearn-crfsuite predict, {BATCH} a call", lambda: crfsuite.predict,
              batches_ready, BATCH),
             (f"raw-token pipeline, {BATCH} a call", lambda: pipeline.predict, batches, BATCH),
             (f"dicts, {BATCH} a call", lambda: dicts.predict, batches_ready, BATCH)]
    for name, make, items, per_item in ways:
        rates = []
        for n_threads in (1, 2, 4):
            tag = make()  # a batcher of its own per run
            rate, cpu = threaded_throughput(tag, items, n_threads, max(1, rounds // 5))
            rates.append((rate * per_item, cpu / per_item))
            getattr(getattr(tag, "__self__", None), "close", lambda: None)()
        print(f"{name:44s}" + "".join(f"{rate:8.0f}" for rate, _ in rates)
              + "".join(f"{cpu:8.0f}" for _, cpu in rates))

if __name__ == "__main__":
    main()
