"""Token, sequence and span (CoNLL) metrics for label sequences, and scorers.

Every metric takes ``y_true`` and ``y_pred`` as lists of label sequences: lists,
tuples or 1-D arrays in any mix (``CRFClassifier.predict`` returns a list of
arrays, corpora are usually lists of lists), of different lengths ("ragged").
Both must hold the same number of sequences and each pair of sequences the same
number of labels; anything else is a :class:`ValueError` naming the sequence,
never a silent truncation.

Three families:

- token level (``flat_*``): scikit-learn's metric, with its signature, on all
  tokens of all sequences;
- sequence level (:func:`sequence_accuracy_score`): a sequence counts only if
  every label is right;
- span level (``span_*``): entities or chunks decoded from the tags exactly as
  the CoNLL ``conlleval`` script decodes them, counted right only when type,
  start and end all match.

The scorers (:data:`span_f1_scorer`, :data:`flat_f1_scorer`,
:data:`sequence_accuracy_scorer`, :func:`make_sequence_scorer`) plug into
``GridSearchCV(scoring=...)`` and ``cross_validate``, where scikit-learn's string
scorers fail on ragged ``y``.
"""

from ..tags import Span, get_spans
from ._calibration import (
    ReliabilityCurve,
    expected_calibration_error,
    reliability_curve,
    span_confidences,
    token_confidences,
)
from ._scorer import (
    flat_f1_scorer,
    make_sequence_scorer,
    sequence_accuracy_scorer,
    span_f1_scorer,
)
from ._sequence import sequence_accuracy_score
from ._span import (
    span_classification_report,
    span_f1_score,
    span_precision_recall_fscore_support,
    span_precision_score,
    span_recall_score,
)
from ._token import (
    flat_accuracy_score,
    flat_classification_report,
    flat_f1_score,
    flat_fbeta_score,
    flat_precision_score,
    flat_recall_score,
)

__all__ = [
    "ReliabilityCurve",
    "Span",
    "expected_calibration_error",
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_scorer",
    "get_spans",
    "make_sequence_scorer",
    "reliability_curve",
    "sequence_accuracy_score",
    "sequence_accuracy_scorer",
    "span_classification_report",
    "span_confidences",
    "span_f1_score",
    "span_f1_scorer",
    "span_precision_recall_fscore_support",
    "span_precision_score",
    "span_recall_score",
    "token_confidences",
]
