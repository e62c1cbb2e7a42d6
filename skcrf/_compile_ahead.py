"""A chain's prediction kernels compiled in a second process while its first fit compiles.

numba compiles under a process-wide lock: a fresh install's first ``fit``,
``predict`` and ``predict_marginals`` compile their kernels one after the
other, on one core, while the machine usually has more. When the first fit
of a plain chain (order 1, no transition features) finds numba's cache
without the prediction kernels, it starts ``python -m skcrf._compile_ahead``
in the background, which compiles the kernels that fit reaches last and
prediction needs: forward-backward's lanes (their core is shared with the
fit's training kernel), Viterbi, the unary scores and the L-BFGS steps, and
saves them in the same cache. The fit goes on meanwhile; a kernel it
reaches after the other process saved it is loaded instead of compiled.

Nothing waits for the other process and nothing depends on it: if it fails,
or is slower, every kernel compiles here as before (a kernel both compile
is saved twice, under the cache's lock). It is not started with a single
usable CPU (it would only compete), without a writable cache (it could
hand nothing over), inside ``skcrf warmup`` (which runs its own worker
processes), or when the environment sets ``SKCRF_COMPILE_AHEAD=0``.
"""

import os
import subprocess
import sys
import threading

#: Set to "0" to never start the process (it is also set in the process itself).
ENVIRONMENT_SWITCH = "SKCRF_COMPILE_AHEAD"

_started = False
_lock = threading.Lock()
#: The process started, if any (a benchmark waits for it before its next measurement).
process = None


def compile_chain_ahead():
    """Start the background compilation of a chain's prediction kernels, once per process.

    Returns the :class:`subprocess.Popen` started, or None when it was not
    needed or not wanted (see the module docstring).
    """
    global _started
    with _lock:
        if _started or os.environ.get(ENVIRONMENT_SWITCH) == "0":
            return None
        _started = True
    if _usable_cpus() < 2 or not _prediction_kernels_missing():
        return None
    global process
    environment = dict(os.environ, **{ENVIRONMENT_SWITCH: "0"})
    try:
        process = subprocess.Popen([sys.executable, "-m", "skcrf._compile_ahead"],
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


def _prediction_kernels_missing():
    """Whether numba's cache lacks the chain's forward-backward lanes, and could take them.

    Their cache index is absent from a cache that never held them; without a
    writable cache, or with a numba whose cache is laid out otherwise, this
    says no (nothing to hand over, or no way to tell).
    """
    from .inference import _cache
    from .inference.chain import _lane_chunks

    if _cache.cache_unavailable():
        return False
    try:
        index = _lane_chunks._cache._cache_file._index_path
    except AttributeError:
        return False
    return not os.path.exists(index)


def compile_chain_kernels():
    """Compile (or load) what a chain's first ``predict`` and ``predict_marginals`` run.

    In the order the first fit reaches them last: the lanes of
    forward-backward first (the fit's training kernel calls the same core),
    Viterbi, the L-BFGS steps, then a toy model's ``predict_marginals`` and
    ``predict`` for the rest (the unary scores, the vectorizer's transform).
    The toy model's weights are set, not fitted: fitting would compile what
    the first process is compiling.
    """
    import warnings

    import numpy as np

    from ._chain import CRFClassifier
    from .features import SequenceVectorizer
    from .inference.chain import forward_backward, viterbi
    from .learning.lbfgs import lbfgs

    rng = np.random.default_rng(0)
    n_classes = 4
    offsets = np.arange(0, 25, 3, dtype=np.int64)  # eight sequences of three tokens: lanes
    # read-only, as a SequenceMatrix's: numba compiles another kernel for writable arrays
    offsets.flags.writeable = False
    unary = rng.normal(size=(offsets[-1], n_classes))
    transitions = rng.normal(size=(n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    forward_backward(unary, transitions, start, end, offsets, False)
    viterbi(unary, transitions, start, end, offsets)
    # a quadratic: the solver's steps, with the L1 part OWL-QN adds
    lbfgs(lambda w: (float(w @ w), 2 * w), np.ones(3), l1=0.1, max_iter=3)

    X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
         [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
    vectorizer = SequenceVectorizer().fit(X)
    n_features = len(vectorizer.feature_names_)
    model = CRFClassifier()
    model.__dict__.update(
        classes_=np.array(["B-LOC", "B-PER", "I-PER", "O"], dtype=object),
        coef_=rng.normal(size=(n_classes, n_features)), transition_coef_=transitions,
        start_coef_=start, end_coef_=end,
        allowed_transitions_=np.ones((n_classes, n_classes), bool), vectorizer_=vectorizer,
        feature_names_=list(vectorizer.feature_names_), n_features_in_=n_features,
        n_iter_=1, loss_curve_=[1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.predict_marginals(X)
        model.predict(X)


if __name__ == "__main__":
    compile_chain_kernels()
