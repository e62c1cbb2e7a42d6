"""A model's prediction kernels compiled in a second process while its first fit compiles.

numba compiles under a process-wide lock: a fresh install's first ``fit``,
``predict`` and ``predict_marginals`` compile their kernels one after the
other, on one core, while the machine usually has more. When the first fit
of a chain (order 1, no transition features), a semi-Markov CRF (order 1)
or a tree CRF (no link features) finds numba's cache without that
structure's prediction kernels, it starts ``python -m skcrf._compile_ahead
KIND`` in the background, which compiles the kernels that fit reaches last
and prediction needs (the structure's Viterbi and forward-backward, whose
core the chain's training kernel shares, the unary scores, the L-BFGS
steps) and saves them in the same cache. The fit goes on meanwhile; a
kernel it reaches after the other process saved it is loaded instead of
compiled.

Nothing waits for the other process and nothing depends on it: if it fails,
or is slower, every kernel compiles here as before (a kernel both compile
is saved twice, under the cache's lock). It is not started with a single
usable CPU (it would only compete), without a writable cache (it could
hand nothing over), inside ``skcrf warmup`` (which runs its own worker
processes), or when the environment sets ``SKCRF_COMPILE_AHEAD=0``; at most
one is started per kind and process, and it runs at a lower priority, behind
the fit on a busy machine.
"""

import os
import subprocess
import sys
import threading

#: Set to "0" to never start the process (it is also set in the process itself).
ENVIRONMENT_SWITCH = "SKCRF_COMPILE_AHEAD"

#: The kinds of model, each with the module and name of a kernel only its
#: prediction compiles: its cache index is absent while the kernels are.
KINDS = {"chain": ("skcrf.inference.chain", "_lane_chunks"),
         "semi-markov": ("skcrf.inference.semimarkov", "_viterbi_chunks"),
         "tree": ("skcrf.inference.tree", "_tree_viterbi_chunks")}

#: The kinds whose compiling process this process has considered (once each).
_started = set()
_lock = threading.Lock()
#: The process started, if any (a benchmark waits for it before its next measurement).
process = None


def compile_ahead(kind):
    """Start the background compilation of ``kind``'s prediction kernels, once per process.

    Parameters
    ----------
    kind : {"chain", "semi-markov", "tree"}

    Returns
    -------
    process : subprocess.Popen or None
        None when it was not needed or not wanted (see the module docstring).
    """
    global process
    with _lock:
        if kind in _started or os.environ.get(ENVIRONMENT_SWITCH) == "0":
            return None
        _started.add(kind)
    if _usable_cpus() < 2 or not _prediction_kernels_missing(kind):
        return None
    environment = dict(os.environ, **{ENVIRONMENT_SWITCH: "0"})
    try:
        process = subprocess.Popen([sys.executable, "-m", "skcrf._compile_ahead", kind],
                                   env=environment, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no interpreter to start (an embedded Python): compile here
        return None
    return process


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _prediction_kernels_missing(kind):
    """Whether numba's cache lacks ``kind``'s prediction kernels, and could take them.

    The cache index of its sentinel kernel (:data:`KINDS`) is absent from a
    cache that never held it; without a writable cache, or with a numba
    whose cache is laid out otherwise, this says no (nothing to hand over,
    or no way to tell).
    """
    import importlib

    from .inference import _cache

    module, name = KINDS[kind]
    kernel = getattr(importlib.import_module(module), name)
    if _cache.cache_unavailable():
        return False
    index = _cache.index_path(kernel)
    return index is not None and not os.path.exists(index)


#: A toy task, as dicts: what the toy models predict.
_X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
      [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
#: The toy task's trees: each token's head ("__parent__"), -1 for the root.
_HEADS = [[1, 2, -1], [1, -1]] * 8


def compile_kernels(kind):
    """Compile (or load) what ``kind``'s first ``predict`` and ``predict_marginals`` run.

    The chain's lanes of forward-backward first (the fit's training kernel
    calls the same core), then the L-BFGS steps, then a toy model's
    ``predict_marginals`` and ``predict`` for the rest (its Viterbi, the
    unary scores, the vectorizer's transform). The toy model's weights are
    set, not fitted: fitting would compile what the first process is
    compiling.
    """
    import warnings

    import numpy as np

    from .learning.lbfgs import lbfgs

    rng = np.random.default_rng(0)
    if kind == "chain":
        _chain_lanes(rng)
    # a quadratic: the solver's steps, with the L1 part OWL-QN adds
    lbfgs(lambda w: (float(w @ w), 2 * w), np.ones(3), l1=0.1, max_iter=3)
    model, X = _TOY_MODELS[kind](rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.predict_marginals(X)
        model.predict(X)


def _chain_lanes(rng):
    """Forward-backward's lanes and Viterbi, on arrays of the types prediction passes."""
    import numpy as np

    from .inference.chain import forward_backward, viterbi

    n_classes = 4
    offsets = np.arange(0, 25, 3, dtype=np.int64)  # eight sequences of three tokens: lanes
    # read-only, as a SequenceMatrix's: numba compiles another kernel for writable arrays
    offsets.flags.writeable = False
    unary = rng.normal(size=(offsets[-1], n_classes))
    transitions = rng.normal(size=(n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    forward_backward(unary, transitions, start, end, offsets, False)
    viterbi(unary, transitions, start, end, offsets)


def _fitted(model, X, rng, n_classes, **attributes):
    """``model`` with the weights of a fit on ``X`` set at random: a model to predict with."""
    from .features import SequenceVectorizer

    vectorizer = SequenceVectorizer().fit(X)
    n_features = len(vectorizer.feature_names_)
    model.__dict__.update(
        coef_=rng.normal(size=(n_classes, n_features)), vectorizer_=vectorizer,
        feature_names_=list(vectorizer.feature_names_), n_features_in_=n_features,
        n_iter_=1, loss_curve_=[1.0], **attributes)
    return model


def _toy_chain(rng):
    import numpy as np

    from ._chain import CRFClassifier

    n = 4
    return _fitted(CRFClassifier(), _X, rng, n,
                   classes_=np.array(["B-LOC", "B-PER", "I-PER", "O"], dtype=object),
                   transition_coef_=rng.normal(size=(n, n)), start_coef_=rng.normal(size=n),
                   end_coef_=rng.normal(size=n),
                   allowed_transitions_=np.ones((n, n), bool)), _X


def _toy_semi_markov(rng):
    import numpy as np

    from ._segment_tags import _SegmentTags
    from ._semimarkov import SemiMarkovCRF

    codec = _SegmentTags.of_labels("IOB2", ["LOC", "PER"])
    n, n_lengths = len(codec.segment_classes), 2
    model = _fitted(SemiMarkovCRF(), _X, rng, n,
                    classes_=codec.classes, segment_classes_=codec.segment_classes,
                    scheme_="IOB2", max_segment_length_=n_lengths,
                    allowed_transitions_=np.ones((n, n), bool),
                    length_coef_=rng.normal(size=(n, n_lengths)),
                    transition_coef_=rng.normal(size=(n, n)), start_coef_=rng.normal(size=n),
                    end_coef_=rng.normal(size=n))
    model.first_coef_ = rng.normal(size=model.coef_.shape)
    model.last_coef_ = rng.normal(size=model.coef_.shape)
    return model, _X


def _toy_tree(rng):
    import numpy as np

    from ._tree import TreeCRF

    X = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
         for tokens, heads in zip(_X, _HEADS)]
    n = 4
    return _fitted(TreeCRF(), X, rng, n,
                   classes_=np.array(["B-LOC", "B-PER", "I-PER", "O"], dtype=object),
                   transition_coef_=rng.normal(size=(n, n)),
                   root_coef_=rng.normal(size=n)), X


_TOY_MODELS = {"chain": _toy_chain, "semi-markov": _toy_semi_markov, "tree": _toy_tree}


if __name__ == "__main__":
    try:  # behind the fit that started it, on a machine busy with more
        os.nice(10)
    except (AttributeError, OSError):
        pass
    compile_kernels(sys.argv[1] if len(sys.argv) > 1 else "chain")
