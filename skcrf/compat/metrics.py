"""sklearn-crfsuite's ``metrics`` module: the same names, from :mod:`skcrf.metrics`.

Each takes lists of label sequences, as sklearn-crfsuite's do, and passes
keyword arguments (``average``, ``labels``, ``digits``, ...) on to
scikit-learn's metric of the same name.
"""

from ..metrics import (
    flat_accuracy_score,
    flat_classification_report,
    flat_f1_score,
    flat_fbeta_score,
    flat_precision_score,
    flat_recall_score,
    sequence_accuracy_score,
)

__all__ = ["flat_accuracy_score", "flat_classification_report", "flat_f1_score",
           "flat_fbeta_score", "flat_precision_score", "flat_recall_score",
           "sequence_accuracy_score"]
