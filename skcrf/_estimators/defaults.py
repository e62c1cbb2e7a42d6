"""The training defaults every CRF estimator and the command line share.

One place, so that ``CRFClassifier()``, ``SemiMarkovCRF()`` and ``skcrf train``
(and any estimator added later) start from the same model. :mod:`skcrf.compat`
keeps sklearn-crfsuite's own defaults instead (CRFsuite's ``c1=0``, ``c2=1``,
no iteration limit): code written for it must run as it did there.

The values were chosen by fitting the examples' pipelines
(``TokenFeaturizer``, ``SequenceVectorizer``, ``CRFClassifier``) on CoNLL-2002
Spanish NER and CoNLL-2000 chunking; the user guide's regularization page
gives the numbers. CRFsuite's usual ``c1=0.1, c2=0.1`` was at least as
accurate as a pure L2 ``alpha=1`` (entity F1 0.786 against 0.784, chunk F1
0.930 against 0.930) and got there in far fewer iterations. Neither meets a
relative tolerance of 1e-5 in 100 iterations: the objective keeps creeping
down (OWL-QN's tail runs past 1,000 iterations) long after the test scores
stopped moving, so every fit warned. ``tol=1e-3`` stops once 10 iterations
gain less than 0.1% of the objective: after 131 (NER) and 163 (chunking)
iterations, and 217 for ``alpha=0.03`` with a window of 2, the slowest
setting of the README's grid search, with the scores of a far longer run.
"""

#: Regularization strength: with :data:`L1_RATIO`, CRFsuite's usual ``c1=0.1,
#: c2=0.1`` (``alpha = c1 + 2 * c2``).
ALPHA = 0.3

#: Share of L1 in the penalty (``l1_ratio = c1 / (c1 + 2 * c2)``).
L1_RATIO = 1 / 3

#: Most solver iterations; reaching it emits a ConvergenceWarning. Above the
#: iterations :data:`TOL` needs on the CoNLL corpora with ``alpha`` from 0.03
#: to 3 (the README's grid search), with room to spare.
MAX_ITER = 300

#: Stop once the objective improved by less than this (relative) over the last
#: 10 iterations.
TOL = 1e-3


def crfsuite_c1_c2(alpha=ALPHA, l1_ratio=L1_RATIO):
    """CRFsuite's ``(c1, c2)`` for ``alpha`` and ``l1_ratio``."""
    return alpha * l1_ratio, 0.5 * alpha * (1.0 - l1_ratio)
