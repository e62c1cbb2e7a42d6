"""sklearn-crfsuite's interface on skcrf: ``import skcrf.compat as sklearn_crfsuite``.

:class:`CRF` takes sklearn-crfsuite's constructor arguments and offers its
attributes and methods, trained by :class:`~skcrf.CRFClassifier`;
:mod:`skcrf.compat.metrics` has sklearn-crfsuite's metric names and
``skcrf.compat.scorers`` its scorers. Code written for sklearn-crfsuite runs
once its imports change::

    import skcrf.compat as sklearn_crfsuite
    from skcrf.compat import metrics, scorers

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                               all_possible_transitions=True)
    crf.fit(X_train, y_train)
    metrics.flat_f1_score(y_test, crf.predict(X_test), average="weighted")

:func:`load_crfsuite` reads the model files CRFsuite writes (python-crfsuite,
sklearn-crfsuite) into a fitted :class:`CRF`, and :func:`save_crfsuite` writes
an order-1 chain as one, for CRFsuite's tagger and the libraries that read its
format.

See :doc:`/migration` for what maps to what and where the two differ.
"""

from . import metrics, scorers
from ._crf import CRF
from ._crfsuite_files import load_crfsuite, save_crfsuite

__all__ = ["CRF", "load_crfsuite", "metrics", "save_crfsuite", "scorers"]
