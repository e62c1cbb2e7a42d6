"""sklearn-crfsuite's ``scorers`` module: the same two scorers, on skcrf's metrics.

``flat_accuracy`` and ``sequence_accuracy`` plug into ``cross_val_score``,
``GridSearchCV`` and ``RandomizedSearchCV`` as sklearn-crfsuite's do. For
other metrics, ``make_scorer(metrics.flat_f1_score, average="weighted")``
works as in sklearn-crfsuite's tutorial, and :mod:`skcrf.metrics` has span
(entity) scorers such as :data:`~skcrf.metrics.span_f1_scorer`.
"""

from sklearn.metrics import make_scorer

from . import metrics

__all__ = ["flat_accuracy", "sequence_accuracy"]

#: Token accuracy over all sequences, as a scorer.
flat_accuracy = make_scorer(metrics.flat_accuracy_score)
#: The fraction of sequences whose every label is right, as a scorer.
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
