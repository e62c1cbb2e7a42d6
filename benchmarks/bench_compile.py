"""The first minute: compile time from an empty numba cache, and a warm start.

Each measurement runs in a fresh process with a temporary, empty
``NUMBA_CACHE_DIR``, as a new install, a CI container or a new Dask worker
meets skcrf. A chain's first fit starts a second process that compiles
prediction's kernels on the other core (``skcrf._estimators.compile_ahead``), as does
a semi-Markov CRF's and a tree CRF's; their "-one-process" rows are the same
models with it switched off, and each row waits for that process before the
next one starts. Per structure: wall seconds of ``import skcrf`` and of a toy
problem's first ``fit`` + ``predict`` + ``predict_marginals`` (toy data: the
time is the kernels' compilation), and how many specializations numba
compiled (skcrf's own kernels, then all functions with numba's internals).
Then ``skcrf warmup`` from an empty cache, a warm ``import skcrf`` and a warm
second process's fit + predict, and sklearn-crfsuite's import + fit + predict
of the same toy problem in the same run.

Run: python benchmarks/bench_compile.py [--only chain,tree] [--no-warmup]
Take the figures on a quiet machine: compilation is CPU-bound, and a busy
second core changes them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The toy problem: two short sentences, repeated so that the fused kernels'
#: merged slots (pairs held by 8 tokens) take part, as in a real fit.
TOY = r'''
X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8
Y_PARTIAL = [["B-PER", None, "O"], [{"O", "B-LOC"}, "B-LOC"]] * 8
TREES = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
         for tokens, heads in zip(X, [[1, 2, -1], [1, -1]] * 8)]
TOKENS = [["Ada", "Lovelace", "wrote"], ["in", "Paris"]] * 8
import numpy as np
# numbers: one 2-D array per sentence (the dense route, issue 42), and the same
# sentences' dicts with a vector each (a sparse part beside a dense block)
DENSE = [np.random.default_rng(q).normal(size=(len(s), 4)) for q, s in enumerate(X)]
VECTORS = [[{**t, "vec": np.full(4, 0.25 * len(t["w"]))} for t in s] for s in X]
'''

#: structure name -> (constructor, X name)
STRUCTURES = {
    "chain": ("CRFClassifier(max_iter=5)", "X"),
    "chain-order2": ("CRFClassifier(order=2, max_iter=5)", "X"),
    "chain-transition-features": ("CRFClassifier(transition_features='all', max_iter=5)", "X"),
    "chain-order3": ("CRFClassifier(order=3, max_iter=5)", "X"),
    "chain-order2-pruned": ("CRFClassifier(order=2, prune_threshold=1e-3, max_iter=5)", "X"),
    "chain-sgd": ("CRFClassifier(solver='sgd', max_iter=5)", "X"),
    # the margin solvers' epoch kernel, sparse only (no BLAS code: learning/_online_chain.py)
    "chain-perceptron": ("CRFClassifier(solver='perceptron', max_iter=5)", "X"),
    # unknown and set labels: the masked fused kernel (issue 45)
    "chain-partial": ("CRFClassifier(max_iter=5)", "X"),
    "semi-markov": ("SemiMarkovCRF(max_iter=5)", "X"),
    # featurizing the candidate segments counts in its fit
    "semi-markov-segments": ("SemiMarkovCRF(max_iter=5)", "SEGMENTS"),
    "tree": ("TreeCRF(max_iter=5)", "TREES"),
    "tree-link-features": ("TreeCRF(transition_features='all', max_iter=5)", "TREES"),
    # the dense route (structures/chain/dense.py): order 1, L-BFGS, by BLAS
    "chain-dense": ("CRFClassifier(max_iter=5)", "DENSE"),
    "chain-vectors": ("CRFClassifier(max_iter=5)", "VECTORS"),
    # the online solvers' dense route (learning/_online_chain.py): the epoch
    # kernels with the block, SGD's and the margin solvers'
    "chain-sgd-dense": ("CRFClassifier(solver='sgd', max_iter=5)", "DENSE"),
    "chain-perceptron-dense": ("CRFClassifier(solver='perceptron', max_iter=5)", "DENSE"),
}

#: Rows trained on other labels than ``Y``: structure name -> the labels' name in TOY.
LABELS = {"chain-partial": "Y_PARTIAL"}

#: Runs in the child: times each phase and counts numba's compilations.
CHILD = r'''
import json, sys, time, warnings
started = time.perf_counter()
from numba.core.event import Listener, register

class Count(Listener):
    def __init__(self):
        self.skcrf = 0
        self.total = 0
    def on_start(self, event):
        pass
    def on_end(self, event):
        dispatcher = event.data["dispatcher"]
        self.total += 1
        if getattr(dispatcher.py_func, "__module__", "").startswith("skcrf."):
            self.skcrf += 1

count = Count()
register("numba:compile", count)
import skcrf
from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceVectorizer, TokenFeaturizer,
                   TreeCRF)
from sklearn.pipeline import make_pipeline
imported = time.perf_counter()
TOY
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model = MAKE.fit(DATA, LABELS)
fitted = time.perf_counter()
model.predict(DATA)
predicted = time.perf_counter()
model.predict_marginals(DATA)
done = time.perf_counter()
print(json.dumps({"import": imported - started, "fit": fitted - imported,
                  "predict": predicted - fitted, "marginals": done - predicted,
                  "total": done - started, "skcrf": count.skcrf, "all": count.total}))
# a chain's first fit may have started a process compiling ahead: done before the next row
from skcrf._estimators import compile_ahead as _compile_ahead
if _compile_ahead.process is not None:
    _compile_ahead.process.wait()
'''

CRFSUITE = r'''
import json, time
started = time.perf_counter()
import sklearn_crfsuite
imported = time.perf_counter()
TOY
X = [[{k: (str(v) if isinstance(v, str) else float(v)) for k, v in t.items()} for t in s]
     for s in X]
crf = sklearn_crfsuite.CRF(max_iterations=5).fit(X, Y)
fitted = time.perf_counter()
crf.predict(X)
predicted = time.perf_counter()
crf.predict_marginals(X)
done = time.perf_counter()
print(json.dumps({"import": imported - started, "fit": fitted - imported,
                  "predict": predicted - fitted, "marginals": done - predicted,
                  "total": done - started, "skcrf": 0, "all": 0}))
'''


def run_child(code, cache_dir, **environment):
    """Run ``code`` in a fresh interpreter with ``cache_dir`` as numba's cache; its JSON."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO),
               **environment)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


#: Input made in the child before fitting (its compilation counts in the fit).
SEGMENTS = ("SEGMENTS = make_pipeline(TokenFeaturizer(segment_features=True), "
            "SequenceVectorizer()).fit_transform(TOKENS)\n")


#: Structures whose first fit starts a second process compiling prediction's
#: kernels (skcrf._estimators.compile_ahead): each also gets a row without it, NAME-one-process.
COMPILING_AHEAD = ("chain", "chain-partial", "semi-markov", "tree")
ONE_PROCESS = "-one-process"


def structure_code(name):
    base = name.removesuffix(ONE_PROCESS)
    make, data = STRUCTURES[base]
    toy = TOY + (SEGMENTS if data == "SEGMENTS" else "")
    return (CHILD.replace("TOY", toy).replace("MAKE", make).replace("DATA", data)
            .replace("LABELS", LABELS.get(base, "Y")))


def row(label, figures):
    print(f"{label:<28} {figures['import']:7.2f} {figures['fit']:8.2f} "
          f"{figures['predict']:8.2f} {figures['marginals']:9.2f} {figures['total']:8.2f} "
          f"{figures['skcrf']:7d} {figures['all']:6d}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(STRUCTURES),
                        help="comma-separated structures (default: all)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip 'skcrf warmup' from an empty cache")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    names = [row_name for name in names
             for row_name in ((name, name + ONE_PROCESS) if name in COMPILING_AHEAD
                              else (name,))]
    print(f"{'cold (empty cache), s':<28} {'import':>7} {'fit':>8} {'predict':>8} "
          f"{'marginals':>9} {'total':>8} {'skcrf':>7} {'all':>6}")
    print(f"{'':<28} {'':>7} {'':>8} {'':>8} {'':>9} {'':>8} "
          f"{'(compiled specializations)':>14}")
    try:
        with tempfile.TemporaryDirectory() as cache:
            row("sklearn-crfsuite", run_child(CRFSUITE.replace("TOY", TOY), cache))
    except RuntimeError as error:
        print(f"sklearn-crfsuite: not run ({str(error).splitlines()[-1]})")
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            environment = ({"SKCRF_COMPILE_AHEAD": "0"} if name.endswith(ONE_PROCESS)
                           else {})
            row(name, run_child(structure_code(name), cache, **environment))

    with tempfile.TemporaryDirectory() as cache:
        if not args.no_warmup:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(REPO))
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "skcrf", "warmup"], env=env,
                                  capture_output=True, text=True, cwd=REPO)
            took = time.perf_counter() - started
            print()
            print(f"skcrf warmup, empty cache: {took:.1f} s (exit {done.returncode})")
            for line in done.stdout.strip().splitlines():
                print(f"    {line}")
        else:
            run_child(structure_code("chain"), cache)
        print()
        print("warm (cache filled above), s")
        imports = []
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(REPO))
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import skcrf"], env=env, check=True,
                           cwd=REPO)
            imports.append(time.perf_counter() - started)
        print(f"    python -c 'import skcrf' (process included), best of 3: "
              f"{min(imports):.2f}")
        warm = run_child(structure_code("chain"), cache)
        print(f"    chain, second process: import {warm['import']:.2f}, fit + predict + "
              f"marginals {warm['fit'] + warm['predict'] + warm['marginals']:.2f}, "
              f"compiled {warm['skcrf']}")


if __name__ == "__main__":
    main()
