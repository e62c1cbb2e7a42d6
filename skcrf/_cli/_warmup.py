"""``skcrf warmup``: compile (or load from numba's cache) the kernels ahead of first use.

Each kind of model is warmed by fitting and applying a toy model of it: its
fit, its prediction paths and its queries, plus the exact log-space routes,
which a sequence with one huge feature value forces. The kinds run in
parallel worker processes (numba compiles under a process-wide lock, so
threads would not help); each process writes what it compiled into the
shared cache, whose saves skcrf serializes across processes
(``inference._cache._locked``).
"""

import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

from .._estimators.compile_ahead import ENVIRONMENT_SWITCH
from ._errors import CommandError

#: A toy task every model can fit in one iteration: what runs is the kernels' compilation.
_X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
      [{"w": "in"}, {"w": "Paris", "title": True}]]
_Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
#: A fixed tag that fixes a segment boundary: the semi-Markov kernels of fixed boundaries.
_FIXED = [None, [None, "B-LOC"]]
#: The same tokens as trees: each token's head ("__parent__"), -1 for the root.
_HEADS = [[1, 2, -1], [1, -1]]
#: One feature value large enough that the scaled passes give up on its
#: sequence: the exact log-space routes then compile too.
_HUGE = {"w": "in", "scale": 1e6}

#: The training set is the toy task this many times: binary feature pairs held
#: by that many tokens are merged (structures/_merged_slots.py), whose kernels
#: then compile too.
_REPEATS = 8


def _trees(X):
    return [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
            for tokens, heads in zip(X, _HEADS)]


def _chain(**params):
    from .._chain import CRFClassifier
    return CRFClassifier(max_iter=2, **params)


def _semi_markov(**params):
    from .._semimarkov import SemiMarkovCRF
    return SemiMarkovCRF(max_iter=2, **params)


def _tree():
    from .._tree import TreeCRF
    return TreeCRF(max_iter=2)


#: name -> (what the user reads, the model or a tuple of models, whether X holds
#: trees, whether they offer predict_nbest)
KINDS = {
    "chain": ("chain", lambda: _chain(), False, True),
    # every label triple: the dense order-2 kernels; order 3: the pattern automaton's,
    # and with prune_threshold the pruned lattice's (any order >= 2)
    "order2": ("chain, order 2", lambda: _chain(order=2, all_possible_transitions=True),
               False, True),
    "order3": ("chain, order 3", (lambda: _chain(order=3),
                                  lambda: _chain(order=3, prune_threshold=1e-3)), False, True),
    "transition-features": ("chain, transition features",
                            lambda: _chain(transition_features="all"), False, True),
    # order 2 runs the same inference kernels over automaton states; it adds the
    # unfused training path's (token products, the exact posterior pass)
    "semi-markov": ("semi-Markov", (_semi_markov, lambda: _semi_markov(order=2)), False, True),
    "tree": ("tree", _tree, True, False),
    "online": ("online solvers (chain, semi-Markov, tree)", None, False, False),
    "featurizer": ("TokenFeaturizer (raw tokens)", None, False, False),
}

#: The online solvers, each run on every structure by the "online" kind.
_ONLINE_SOLVERS = ("sgd", "perceptron", "passive_aggressive", "arow")


def _warm_online():
    """Fit each structure once with each online solver; the seconds it took."""
    from sklearn.exceptions import ConvergenceWarning

    from .._chain import CRFClassifier
    from .._semimarkov import SemiMarkovCRF
    from .._tree import TreeCRF

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for estimator, X in ((CRFClassifier, _X), (SemiMarkovCRF, _X),
                             (TreeCRF, _trees(_X))):
            for solver in _ONLINE_SOLVERS:
                # SGD with L1 and averaging reaches every update of the kernels
                estimator(solver=solver, max_iter=1, l1_ratio=0.5, average=True,
                          eta0=0.1).fit(X * _REPEATS, _Y * _REPEATS)
    return time.perf_counter() - started


def _warm_featurizer():
    """Featurize raw tokens both ways a pipeline does; the seconds it took.

    A vectorizer reads a sentence's columns from its tokens (``slot_columns``)
    and, fitted on more than a few sentences, the built features
    (``slot_features``, the vectorizer's sort and remap): a service that tags
    raw tokens meets both on its first requests.
    """
    from ..features import SequenceVectorizer, TokenFeaturizer
    from ..features._small import SMALL_TOKENS

    started = time.perf_counter()
    featurizer = TokenFeaturizer()
    tokens = [[("Ada", "NP"), ("Lovelace", "NP"), ("wrote", "VMI")]] * (SMALL_TOKENS // 3 + 1)
    vectorizer = SequenceVectorizer().fit(featurizer.fit_transform(tokens))
    vectorizer.transform(featurizer.transform(tokens[:1]))
    return time.perf_counter() - started


def warm(kind):
    """Fit and apply the toy model(s) of ``kind``; the seconds it took."""
    if kind == "online":
        return _warm_online()
    if kind == "featurizer":
        return _warm_featurizer()
    started = time.perf_counter()
    _, makes, trees, nbest = KINDS[kind]
    for make in makes if isinstance(makes, tuple) else (makes,):
        _fit_and_apply(make, trees, nbest)
    return time.perf_counter() - started


def _fit_and_apply(make, trees, nbest):
    """Fit the toy model ``make()`` makes, with the exact routes, and run every query."""
    from sklearn.exceptions import ConvergenceWarning

    X = _trees(_X) if trees else _X
    huge = [[_HUGE, _HUGE] if not trees else
            [{**_HUGE, "__parent__": 1}, {**_HUGE, "__parent__": -1}]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        model = make().fit(X * _REPEATS, _Y * _REPEATS)
        try:
            # the exact routes of training: a fit whose weights meet the huge value
            make().fit(X * _REPEATS + huge, _Y * _REPEATS + [["O", "O"]])
        except ValueError:
            pass  # the solver may refuse such a value: its kernels ran all the same
    model.predict(X)
    model.predict_marginals(X)
    model.predict_marginals(X, fixed=_FIXED)
    model.predict_marginals(huge)
    if nbest:
        model.predict_nbest(X, n=2)


def warm_kinds(kinds):
    """Warm ``kinds`` one after the other (in one process); the seconds it took."""
    started = time.perf_counter()
    for kind in kinds:
        warm(kind)
    return time.perf_counter() - started


def _warm_in_worker(kind):
    """:func:`warm` in a worker process, its notes on the skcrf logger silenced."""
    import logging
    logging.getLogger("skcrf").setLevel(logging.ERROR)
    return warm(kind)


def warmup(args):
    """Warm the kinds of ``args.only`` (all by default), ``args.jobs`` at a time."""
    kinds = list(KINDS) if not args.only else [kind.strip() for kind in args.only.split(",")]
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown kind {unknown[0]!r} for --only; choose among "
                         f"{', '.join(KINDS)}.")
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(kinds)))
    # the kinds run side by side already: no fit starts a compiling process of its own
    os.environ[ENVIRONMENT_SWITCH] = "0"
    started = time.perf_counter()
    if jobs == 1:
        seconds = (warm(kind) for kind in kinds)
        for kind, took in zip(kinds, seconds):
            _report(args, kind, took)
    else:
        # spawn: a fork would copy this process's numba and thread state
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_warm_in_worker, kind) for kind in kinds]
            for kind, future in zip(kinds, futures):
                try:
                    took = future.result()
                except BrokenProcessPool:
                    # a worker killed (out of memory, a signal): the pool's traceback
                    # names neither the kind nor what to do
                    raise CommandError(
                        f"the worker process compiling {kind!r} ended abruptly (killed, or "
                        f"out of memory); run 'skcrf warmup --jobs 1' to compile in this "
                        f"process, or '--only {kind}' to retry that kind") from None
                _report(args, kind, took)
    print(f"kernels ready in {time.perf_counter() - started:.1f} s (numba caches them: later "
          f"runs load them in about a second)", flush=True)
    return 0


def _report(args, kind, seconds):
    if not args.quiet:
        print(f"{KINDS[kind][0]}: ready in {seconds:.1f} s", flush=True)
