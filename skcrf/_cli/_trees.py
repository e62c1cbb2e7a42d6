"""``skcrf train --structure tree`` and the commands that apply its models: CoNLL-U files.

A tree model reads CoNLL-U (``skcrf.datasets.load_conllu``): each sentence's
words with their heads, the label one of their columns (``--label``), the
token columns others (``--token-columns``). What it read is saved with the
model (metadata ``"conllu"``), so that ``evaluate`` and ``tag`` read their
files the same way.
"""

import numpy as np

from ..datasets._conllu import load_conllu
from .._tree import TreeCRF
from ._errors import CommandError

#: The token columns of a tree model by default: the word, and its UPOS unless
#: that is the label.
DEFAULT_TOKEN_COLUMNS = ("form", "upos")


class ConlluLayout:
    """How a tree model's CoNLL-U files are read: token columns, label, DEPREL subtypes."""

    def __init__(self, token_columns, label, deprel_subtypes):
        self.token_columns = list(token_columns)
        self.label = label
        self.deprel_subtypes = deprel_subtypes

    @classmethod
    def of_args(cls, args):
        columns = args.token_columns or [c for c in DEFAULT_TOKEN_COLUMNS if c != args.label]
        if args.label in columns:
            raise CommandError(f"--token-columns holds the label column {args.label!r}")
        return cls(columns, args.label, args.deprel_subtypes)

    @classmethod
    def from_metadata(cls, saved):
        """The CoNLL-U layout ``skcrf train`` saved with a tree model (None for another model)."""
        if not saved:
            return None
        try:
            layout = cls(saved["token_columns"], saved["label"], saved["deprel_subtypes"])
            if not (all(isinstance(c, (str, int)) for c in layout.token_columns)
                    and isinstance(layout.label, (str, int))
                    and isinstance(layout.deprel_subtypes, bool)):
                raise ValueError("columns must be names or numbers")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"its CoNLL-U layout {saved!r:.100} is invalid "
                             f"({type(error).__name__}: {error})") from None
        return layout

    def metadata(self):
        return {"token_columns": self.token_columns, "label": self.label,
                "deprel_subtypes": self.deprel_subtypes}

    def read(self, path, with_labels=True):
        """(X, y) of a CoNLL-U file: tokens of the token columns then the head index."""
        try:
            return load_conllu(path, label=self.label if with_labels else None,
                               columns=self.token_columns,
                               deprel_subtypes=self.deprel_subtypes)
        except FileNotFoundError:
            raise CommandError(f"cannot read {path}: no such file") from None
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise CommandError(" ".join(str(error).split())) from None


def check_tree_options(args):
    """Refuse the options of column files with ``--structure tree``, and the reverse."""
    if args.structure == "tree":
        given = [option for option, value in (
            ("--columns", args.columns), ("--separator", args.separator),
            ("--label-column", args.label_column != -1), ("--order", args.order != 1),
            ("--constraints", args.constraints is not None),
            ("--prune-threshold", args.prune_threshold is not None),
            ("--max-segment-length", args.max_segment_length is not None)) if value]
        if given:
            raise CommandError(f"{' and '.join(given)} do not apply to --structure tree, "
                               f"which reads CoNLL-U (see --label and --token-columns)")
        return
    given = [option for option, value in (
        ("--label", args.label != "deprel"), ("--token-columns", args.token_columns),
        ("--deprel-subtypes", args.deprel_subtypes)) if value]
    if given:
        raise CommandError(f"{' and '.join(given)} apply to --structure tree (CoNLL-U files)")


def tree_estimator(args, common, transition_features):
    return TreeCRF(transition_features=transition_features, **common)


def token_accuracy_report(y_true, y_pred):
    """Token accuracy and per-label precision, recall and F1 of flat label sequences."""
    from ..metrics import flat_accuracy_score, flat_classification_report

    accuracy = flat_accuracy_score(y_true, y_pred)
    report = flat_classification_report(y_true, [list(p) for p in y_pred], digits=4,
                                        zero_division=0)
    return accuracy, report


def n_words(y):
    return int(np.sum([len(labels) for labels in y]))
