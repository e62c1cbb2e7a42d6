"""``skcrf warmup``: compile (or load from numba's cache) every kernel ahead of first use."""

import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from .._chain import CRFClassifier
from .._semimarkov import SemiMarkovCRF
from .._tree import TreeCRF

#: A toy task every model can fit in one iteration: what runs is the kernels' compilation.
_X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
      [{"w": "in"}, {"w": "Paris", "title": True}]]
_Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
#: A fixed tag that fixes a segment boundary: the semi-Markov kernels of fixed boundaries.
_FIXED = [None, [None, "B-LOC"]]
#: The same tokens as trees: each token's head ("__parent__"), -1 for the root.
_TREES = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
          for tokens, heads in zip(_X, [[1, 2, -1], [1, -1]])]

#: The training set is the toy task this many times: binary feature pairs held
#: by that many tokens are merged (structures/_merged_slots.py), whose kernels
#: then compile too.
_REPEATS = 8

#: (what the user reads, the model, its X, whether it offers predict_nbest): each
#: model's fit and prediction paths.
_MODELS = [
    ("chain", lambda: CRFClassifier(max_iter=1), _X, True),
    # every label triple: the dense order-2 kernels; order 3: the pattern automaton's
    ("chain, order 2", lambda: CRFClassifier(order=2, all_possible_transitions=True,
                                             max_iter=1), _X, True),
    ("chain, order 3", lambda: CRFClassifier(order=3, max_iter=1), _X, True),
    ("chain, transition features", lambda: CRFClassifier(transition_features="all",
                                                         max_iter=1), _X, True),
    ("semi-Markov", lambda: SemiMarkovCRF(max_iter=1), _X, True),
    ("tree", lambda: TreeCRF(max_iter=1), _TREES, False),
]


def warmup(args):
    """Fit and apply a toy model of each structure, printing what each took."""
    started = time.perf_counter()
    for name, make, X, nbest in _MODELS:
        begun = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X * _REPEATS, _Y * _REPEATS)
        model.predict(X)
        model.predict_marginals(X)
        model.predict_marginals(X, fixed=_FIXED)
        if nbest:
            model.predict_nbest(X, n=2)
        if not args.quiet:
            print(f"{name}: ready in {time.perf_counter() - begun:.1f} s", flush=True)
    print(f"kernels ready in {time.perf_counter() - started:.1f} s (numba caches them: later "
          f"runs load them in about a second)", flush=True)
    return 0
