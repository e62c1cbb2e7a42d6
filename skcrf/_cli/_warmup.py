"""``skcrf warmup``: compile (or load from numba's cache) every kernel ahead of first use."""

import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from .._chain import CRFClassifier
from .._semimarkov import SemiMarkovCRF

#: A toy task every model can fit in one iteration: what runs is the kernels' compilation.
_X = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "wrote"}], [{"w": "in"}, {"w": "Paris"}]]
_Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
#: A fixed tag that fixes a segment boundary: the semi-Markov kernels of fixed boundaries.
_FIXED = [None, [None, "B-LOC"]]

#: (what the user reads, the model): each model's fit and prediction paths.
_MODELS = [
    ("chain", lambda: CRFClassifier(max_iter=1)),
    ("chain, order 2", lambda: CRFClassifier(order=2, max_iter=1)),
    ("chain, transition features", lambda: CRFClassifier(transition_features="all",
                                                         max_iter=1)),
    ("semi-Markov", lambda: SemiMarkovCRF(max_iter=1)),
]


def warmup(args):
    """Fit and apply a toy model of each structure, printing what each took."""
    started = time.perf_counter()
    for name, make in _MODELS:
        begun = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(_X, _Y)
        model.predict(_X)
        model.predict_marginals(_X)
        model.predict_nbest(_X, n=2)
        model.predict_marginals(_X, fixed=_FIXED)
        if not args.quiet:
            print(f"{name}: ready in {time.perf_counter() - begun:.1f} s", flush=True)
    print(f"kernels ready in {time.perf_counter() - started:.1f} s (numba caches them: later "
          f"runs load them in about a second)", flush=True)
    return 0
