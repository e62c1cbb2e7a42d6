"""Models the example pages plot, each trained once per documentation build.

The plot directive runs every snippet in the same Python process, so caching
the fitted pipelines here means the CoNLL-2002 and CoNLL-2000 models are
trained once, however many plots use them. They mirror the example scripts
(``examples/conll2002_ner.py``, ``examples/conll2000_chunking.py``) with
``max_iter=50`` to keep the build short.

Setting ``SKCRF_DOCS_QUICK=1`` trains on the first 300 sentences for 10
iterations instead: the plots are then not worth reading, but every snippet
still runs, which is what ``tests/test_docs.py`` checks.
"""

import os
import warnings
from functools import cache

from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import load_conll2000, load_conll2002

MAX_ITER = 50


def _quick():
    return os.environ.get("SKCRF_DOCS_QUICK", "") not in ("", "0")


def _fit(X, y):
    if _quick():
        X, y, max_iter = X[:300], y[:300], 10
    else:
        max_iter = MAX_ITER
    pipe = make_pipeline(
        TokenFeaturizer(window=1),
        SequenceVectorizer(),
        CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter),
    )
    with warnings.catch_warnings():
        # a fixed iteration budget, as in the example scripts: not an error here
        warnings.simplefilter("ignore", ConvergenceWarning)
        return pipe.fit(X, y)


@cache
def conll2002_pipeline():
    """The NER pipeline of ``examples/conll2002_ner.py``, fitted on ``esp.train``."""
    return _fit(*load_conll2002("train"))


@cache
def conll2000_pipeline():
    """The chunking pipeline of ``examples/conll2000_chunking.py``, fitted on ``train.txt``."""
    return _fit(*load_conll2000("train"))
