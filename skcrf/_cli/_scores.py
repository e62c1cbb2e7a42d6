"""``skcrf evaluate``'s scores, counted a batch at a time.

The reports are those :func:`~skcrf.metrics.span_classification_report` and
:func:`~skcrf.metrics.flat_classification_report` print for the whole file,
but made from counts: (true, predicted) label pairs and spans per type, whose
number does not grow with the file. Each count becomes one item weighted by
it, so scikit-learn computes every score with its own formulas; only the
table is formatted here, as scikit-learn formats it, with integer supports.
"""

import re
from collections import Counter

import numpy as np
from sklearn.metrics import precision_recall_fscore_support

from ..metrics._checks import _check_label_sequences
from ..tags import _spans, check_scheme

_HEADERS = ("precision", "recall", "f1-score", "support")


class StreamingScores:
    """Token and span counts of label sequences given a batch at a time.

    Parameters
    ----------
    scheme : str
        Tagging scheme of the labels, for the spans (see :func:`~skcrf.metrics.get_spans`).
    """

    def __init__(self, scheme):
        self.scheme = check_scheme(scheme)
        self.n_sequences = 0
        self.n_tokens = 0
        self.label_pairs = Counter()  # (true label, predicted label) -> tokens
        self.true_spans = Counter()  # span type -> spans
        self.predicted_spans = Counter()
        self.right_spans = Counter()

    def add(self, y_true, y_pred):
        """Count one batch of true and predicted label sequences.

        Raises
        ------
        ValueError
            For a tag outside the scheme; the message numbers the sequence
            from the first one of the first batch.
        """
        flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
        try:
            found = [_spans(flat, lengths, self.scheme) for flat in (flat_true, flat_pred)]
        except ValueError as error:
            raise ValueError(_renumbered(str(error), self.n_sequences)) from None
        true, predicted = (list(zip(starts.tolist(), stops.tolist(), names.tolist()))
                           for _, starts, stops, names in found)
        # (start, stop, type): spans never cross sequences, so a batch's spans
        # match among themselves only
        true_set = set(true)
        self.right_spans.update(span[2] for span in predicted if span in true_set)
        self.true_spans.update(span[2] for span in true)
        self.predicted_spans.update(span[2] for span in predicted)
        self.label_pairs.update(zip(flat_true, flat_pred))
        self.n_sequences += lengths.shape[0]
        self.n_tokens += len(flat_true)

    def accuracy(self):
        """Fraction of tokens labelled right."""
        right = sum(n for (true, pred), n in self.label_pairs.items() if true == pred)
        return right / self.n_tokens

    def span_report(self, digits):
        """The span report of everything counted, with ``zero_division=0``."""
        types = sorted(self.true_spans.keys() | self.predicted_spans.keys())
        if not types:
            raise ValueError("no span in the true or the predicted labels: nothing to report")
        items = []  # (true type id, predicted type id, spans); -1 is "no span"
        for k, name in enumerate(types):
            right = self.right_spans[name]
            items += [(k, k, right), (k, -1, self.true_spans[name] - right),
                      (-1, k, self.predicted_spans[name] - right)]
        supports = [self.true_spans[name] for name in types]
        return _report(items, list(range(len(types))), types, supports, "micro avg", digits)

    def token_report(self, digits):
        """The token report over the labels other than ``O`` (all labels if only ``O``)."""
        items = [(true, pred, n) for (true, pred), n in self.label_pairs.items()]
        true_labels = {true for true, _, _ in items}
        every_label = true_labels | {pred for _, pred, _ in items}
        # as flat_classification_report(labels=...) with the labels given (or
        # None, then scikit-learn's sorted union), and its micro-average rule
        labels = sorted(true_labels - {"O"}) or sorted(every_label)
        micro = "accuracy" if set(labels) >= every_label else "micro avg"
        supports = [sum(n for true, _, n in items if true == label) for label in labels]
        return _report(items, labels, [str(label) for label in labels], supports, micro,
                       digits)


def _renumbered(message, first_sequence):
    """A tag error's message with its sequence counted from the start of the file."""
    return re.sub(r"\(sequence (\d+),",
                  lambda match: f"(sequence {int(match.group(1)) + first_sequence},",
                  message, count=1)


def _report(items, labels, names, supports, micro_heading, digits):
    """scikit-learn's classification report of weighted (true, predicted, weight) items."""
    items = [item for item in items if item[2] > 0]
    y_true = np.array([true for true, _, _ in items])
    y_pred = np.array([pred for _, pred, _ in items])
    weights = np.array([n for _, _, n in items], dtype=np.float64)
    options = {"labels": labels, "sample_weight": weights, "zero_division": 0.0}
    precision, recall, f1, _ = precision_recall_fscore_support(
        y_true, y_pred, average=None, **options)
    averages = []
    for average in ("micro", "macro", "weighted"):
        scores = precision_recall_fscore_support(y_true, y_pred, average=average, **options)
        heading = micro_heading if average == "micro" else f"{average} avg"
        averages.append((heading, *scores[:3], sum(supports)))
    return _table(list(zip(names, precision, recall, f1, supports)), averages, digits)


def _table(rows, averages, digits):
    """The text of :func:`sklearn.metrics.classification_report`, from its rows."""
    width = max(max(len(row[0]) for row in rows), len("weighted avg"), digits)
    text = ("{:>{width}s} " + " {:>9}" * len(_HEADERS)).format("", *_HEADERS, width=width)
    text += "\n\n"
    row_format = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}\n"
    for row in rows:
        text += row_format.format(*row, width=width, digits=digits)
    text += "\n"
    for heading, precision, recall, f1, support in averages:
        if heading == "accuracy":
            text += ("{:>{width}s} " + " {:>9.{digits}}" * 2 + " {:>9.{digits}f}"
                     + " {:>9}\n").format(heading, "", "", f1, support, width=width,
                                          digits=digits)
        else:
            text += row_format.format(heading, precision, recall, f1, support, width=width,
                                      digits=digits)
    return text
