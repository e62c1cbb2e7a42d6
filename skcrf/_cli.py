"""The ``skcrf`` command line: train, tag and evaluate on CoNLL-style column files.

``main(argv)`` parses the arguments and runs one subcommand. Errors users can
cause (a missing file, a bad column spec, a file that is not a model, a model
from an incompatible version, a data file with ragged columns) end in one line
on stderr, ``skcrf <command>: error: <what and where>``, and a non-zero status:
2 for usage errors, as argparse does, 1 for the others.
"""

import argparse
import math
import os
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from operator import itemgetter
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline, make_pipeline

from ._chain import CRFClassifier
from ._persistence import load_model, save_model
from .features.featurizer import _WORD_FEATURES, TokenFeaturizer
from .features.vectorizer import SequenceVectorizer
from .datasets import load_conll
from .metrics import flat_accuracy_score, flat_classification_report, span_classification_report

# the option defaults come from the estimators, so the two cannot drift apart
_FEATURIZER = TokenFeaturizer().get_params()
_CRF = CRFClassifier().get_params()
_SCHEMES = ("IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain")


class _CommandError(Exception):
    """A failure to report as one line with exit status 1."""


class _UsageError(_CommandError):
    """Options that contradict each other or the data: exit status 2."""


# --------------------------------------------------------------------------
# Argument parsing
# --------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump before it)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's line breaks and shows every meaningful default."""

    def _get_help_string(self, action):
        help_text = action.help or ""
        default = action.default
        if (action.option_strings and "(default" not in help_text
                and default is not None and default is not False
                and default is not argparse.SUPPRESS):
            help_text += " (default: %(default)s)"
        return help_text


def _split(text):
    return [] if not text.strip() else [part.strip() for part in text.split(",")]


def _column_list(text):
    """'0,1' -> [0, 1]: the token columns."""
    try:
        columns = [int(part) for part in _split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of column numbers, such as 0,1"
        ) from None
    if not columns:
        raise argparse.ArgumentTypeError("give at least one token column, such as 0")
    if len(set(columns)) != len(columns):
        raise argparse.ArgumentTypeError(f"{text!r} names a column twice")
    return columns


def _length_list(text):
    """'2,3' -> (2, 3): prefix or suffix lengths, each at least 1."""
    try:
        lengths = tuple(int(part) for part in _split(text))
    except ValueError:
        lengths = None
    if lengths is None or any(k < 1 for k in lengths) or len(set(lengths)) != len(lengths):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of distinct lengths >= 1, such as 2,3")
    return lengths


def _feature_list(text):
    """'lower,suffix' -> ('lower', 'suffix'): word feature names."""
    names = tuple(_split(text))
    unknown = [name for name in names if name not in _WORD_FEATURES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown feature(s) {', '.join(unknown)}; choose from {','.join(_WORD_FEATURES)}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r} names a feature twice")
    return names


def _bounded(kind, low, high=None, name="a number"):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if (value is None or not math.isfinite(value) or value < low
                or (high is not None and value > high)):
            bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"{text!r} is not {name} {bounds}")
        return value
    return parse


def _separator(text):
    # a literal tab is awkward to type in a shell, so accept the escape too
    return "\t" if text in ("\\t", "tab") else text


def _build_parser():
    parser = _Parser(
        prog="skcrf", formatter_class=_HelpFormatter,
        description="Train, apply and evaluate linear-chain CRFs on CoNLL-style column "
                    "files:\none token per line, columns separated by whitespace, a blank "
                    "line between sequences.",
        epilog="examples:\n"
               "  skcrf train esp.train --model ner.skcrf\n"
               "  skcrf tag --model ner.skcrf esp.testb > tagged.txt\n"
               "  skcrf evaluate --model ner.skcrf esp.testb\n\n"
               "Run 'skcrf COMMAND --help' for the options of each command.")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"skcrf {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_train(commands)
    _add_tag(commands)
    _add_evaluate(commands)
    return parser


_LAYOUT_HELP = """\
The file has one token per line and a blank line between sequences; -DOCSTART-
lines are skipped. By default the first column is the word, the last one the
label, and the columns between are extra token columns (such as POS), so
CoNLL-2000 and CoNLL-2002 files need no layout options."""


def _add_train(commands):
    train = commands.add_parser(
        "train", formatter_class=_HelpFormatter,
        help="train a CRF on a labelled column file and save it",
        description="Train a CRF (TokenFeaturizer -> SequenceVectorizer -> CRFClassifier) "
                    "on a labelled\nCoNLL-style column file and save it with its column "
                    "layout.\n\n" + _LAYOUT_HELP,
        epilog="examples:\n"
               "  skcrf train conll2000/train.txt --model chunker.skcrf\n"
               "  skcrf train esp.train --model ner.skcrf --alpha 0.1 --max-iter 200 "
               "--window 2\n"
               "  skcrf train data.tsv --model pos.skcrf --separator '\\t' --columns 0,2 "
               "--label-column 1")
    train.add_argument("train_file", metavar="TRAIN_FILE", help="labelled column file")
    train.add_argument("--model", required=True, metavar="MODEL",
                       help="where to write the model (created or overwritten)")
    train.add_argument("--quiet", action="store_true",
                       help="print no progress, only warnings and the summary line")

    layout = train.add_argument_group("column layout")
    layout.add_argument("--columns", type=_column_list, metavar="COLS",
                        help="comma-separated columns that form a token, the word first, "
                             "such as 0,1 (default: every column but the label)")
    layout.add_argument("--label-column", type=int, default=-1, metavar="N",
                        help="column of the label; negative counts from the end")
    layout.add_argument("--separator", type=_separator, metavar="SEP",
                        help="column separator, '\\t' for a tab (default: any run of "
                             "whitespace)")
    layout.add_argument("--encoding", metavar="ENC",
                        help="text encoding (default: UTF-8, or Latin-1 for a file that "
                             "is not valid UTF-8, such as the original CoNLL-2002 release)")

    features = train.add_argument_group("features (TokenFeaturizer, SequenceVectorizer)")
    features.add_argument("--window", type=_bounded(int, 0, name="an integer"),
                          default=_FEATURIZER["window"], metavar="K",
                          help="context size: features of the words up to K tokens away, "
                               "and of the other token columns within K")
    features.add_argument("--word-features", type=_feature_list, metavar="NAMES",
                          default=",".join(_FEATURIZER["word_features"]),
                          help="comma-separated features of the token's own word, from "
                               + ", ".join(_WORD_FEATURES))
    features.add_argument("--context-features", type=_feature_list, metavar="NAMES",
                          default=",".join(_FEATURIZER["context_features"]),
                          help="the same choices, for the words in the window; '' for "
                               "none")
    features.add_argument("--prefixes", type=_length_list, metavar="LENGTHS",
                          default=",".join(map(str, _FEATURIZER["prefixes"])),
                          help="lengths of the 'prefix' word features")
    features.add_argument("--suffixes", type=_length_list, metavar="LENGTHS",
                          default=",".join(map(str, _FEATURIZER["suffixes"])),
                          help="lengths of the 'suffix' word features")
    features.add_argument("--min-freq", type=_bounded(int, 1, name="an integer"),
                          default=1, metavar="N",
                          help="keep the features seen in at least N training tokens")
    features.add_argument("--no-bias", action="store_true",
                          help="leave out the constant 'bias' feature")
    features.add_argument("--no-boundary", action="store_true",
                          help="leave out the BOS/EOS features of the first/last token")

    model = train.add_argument_group("model (CRFClassifier)")
    model.add_argument("--alpha", type=_bounded(float, 0.0), default=0.3, metavar="A",
                       help="regularization strength: L1 weight alpha*l1_ratio, L2 weight "
                            "alpha*(1-l1_ratio)/2. With --l1-ratio these defaults equal "
                            "CRFsuite's c1=0.1, c2=0.1 (default: 0.3)")
    model.add_argument("--l1-ratio", type=_bounded(float, 0.0, 1.0), default=1 / 3,
                       metavar="R",
                       help="share of L1 in the penalty: 0 is pure L2, 1 pure L1 "
                            "(default: 1/3)")
    model.add_argument("--max-iter", type=_bounded(int, 1, name="an integer"),
                       default=_CRF["max_iter"], metavar="N",
                       help="most L-BFGS / OWL-QN iterations")
    model.add_argument("--tol", type=_bounded(float, 0.0), default=_CRF["tol"], metavar="T",
                       help="stop once the objective improved by less than T (relative) "
                            "over 10 iterations")
    model.add_argument("--order", type=int, choices=(1, 2), default=_CRF["order"],
                       metavar="{1,2}",
                       help="Markov order of the labels: 2 adds label-trigram weights, "
                            "about as many times slower as there are labels")
    model.add_argument("--transition-features", type=_split, metavar="PREFIXES",
                       help="comma-separated feature-name prefixes (e.g. 'pos=,shape=') "
                            "whose features also weight the transitions into their token; "
                            "'all' for every feature (order 1 only)")
    model.add_argument("--n-jobs", type=int, metavar="N",
                       help="threads for the kernels; -1 all cores, -2 all but one "
                            "(default: all cores)")
    train.set_defaults(run=_train)


def _add_tag(commands):
    tag = commands.add_parser(
        "tag", formatter_class=_HelpFormatter,
        help="label the tokens of a column file with a trained model",
        description="Label the sequences of a column file with a trained model. FILE has "
                    "the columns of\nthe training file, with or without its label column. "
                    "The output repeats the input\ncolumns and adds the predicted label as "
                    "the last one (and, with --marginals, its\nprobability after it), a "
                    "blank line between sequences: ready for conlleval.",
        epilog="examples:\n"
               "  skcrf tag --model ner.skcrf esp.testb > tagged.txt\n"
               "  skcrf tag --model ner.skcrf unlabelled.txt --output tagged.txt "
               "--marginals")
    tag.add_argument("file", metavar="FILE", help="column file to label")
    tag.add_argument("--model", required=True, metavar="MODEL",
                     help="model written by 'skcrf train'")
    tag.add_argument("--output", metavar="OUT",
                     help="where to write the labelled file (default: standard output)")
    tag.add_argument("--marginals", action="store_true",
                     help="add the probability of each predicted label (%%.4f) as a "
                          "last column")
    tag.set_defaults(run=_tag)


def _add_evaluate(commands):
    evaluate = commands.add_parser(
        "evaluate", formatter_class=_HelpFormatter,
        help="score a trained model on a labelled column file",
        description="Label a labelled column file with a trained model and compare: token "
                    "accuracy,\nthe span-level (conlleval) report and the token-level "
                    "report.",
        epilog="examples:\n"
               "  skcrf evaluate --model ner.skcrf esp.testb\n"
               "  skcrf evaluate --model pos.skcrf test.tsv --scheme plain")
    evaluate.add_argument("test_file", metavar="TEST_FILE",
                          help="labelled column file, laid out as the training file")
    evaluate.add_argument("--model", required=True, metavar="MODEL",
                          help="model written by 'skcrf train'")
    evaluate.add_argument("--scheme", choices=_SCHEMES, default="IOB2",
                          help="tagging scheme of the labels, for the span report; "
                               "'plain' for labels without B-/I- prefixes")
    evaluate.set_defaults(run=_evaluate)


# --------------------------------------------------------------------------
# Column layout
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Layout:
    """Where tokens and labels are in a labelled line; saved with the model."""

    n_columns: int
    token_columns: tuple
    label_column: int
    separator: str = None
    encoding: str = None

    @classmethod
    def resolve(cls, n_columns, columns, label_column, separator, encoding, path):
        """The layout the train options give for a file of ``n_columns`` columns."""
        def check(index, option):
            if not -n_columns <= index < n_columns:
                raise _UsageError(
                    f"{option} {index}: {path} has {n_columns} column(s), numbered 0 to "
                    f"{n_columns - 1} (or -{n_columns} to -1 from the end)")
            return index % n_columns

        label = check(label_column, "--label-column")
        if columns is None:
            tokens = tuple(c for c in range(n_columns) if c != label)
        else:
            tokens = tuple(check(c, "--columns") for c in columns)
        if label in tokens:
            raise _UsageError(f"column {label} is both a token column (--columns) and the "
                              f"label column (--label-column)")
        if len(set(tokens)) != len(tokens):
            raise _UsageError(f"--columns names a column twice: {list(columns)}")
        if not tokens:
            raise _UsageError(f"{path} has {n_columns} column(s) and column {label} is the "
                              f"label: no token columns left")
        return cls(n_columns, tokens, label, separator, encoding)

    @classmethod
    def from_metadata(cls, saved):
        """The layout ``skcrf train`` saved with a model (None if it saved none)."""
        if not saved:
            return None
        try:
            layout = cls(**{**saved, "token_columns": tuple(saved["token_columns"])})
            columns = (layout.label_column, *layout.token_columns)
            if not (type(layout.n_columns) is int and all(
                    type(c) is int and 0 <= c < layout.n_columns for c in columns)):
                raise ValueError("column numbers must be integers below n_columns")
            for text in (layout.separator, layout.encoding):
                if text is not None and not isinstance(text, str):
                    raise ValueError("separator and encoding must be str or null")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"its column layout {saved!r:.100} is invalid "
                             f"({type(error).__name__}: {error})") from None
        return layout

    def for_file(self, n_columns, path, need_labels):
        """(token columns, label column or None) of a file with ``n_columns`` columns.

        A file with the training layout's columns has its labels where training
        read them; one with a column fewer is that layout without the label.
        """
        if n_columns == self.n_columns:
            return self.token_columns, self.label_column
        if n_columns == self.n_columns - 1 and not need_labels:
            return tuple(c - (c > self.label_column) for c in self.token_columns), None
        columns = ",".join(map(str, self.token_columns))
        expected = (f"{self.n_columns}" if need_labels
                    else f"{self.n_columns}, or {self.n_columns - 1} without the label")
        raise _CommandError(
            f"{path} has {n_columns} column(s) per token line, but the model was trained "
            f"on {self.n_columns} (token columns {columns}, label column "
            f"{self.label_column}): expected {expected}")


def _read_rows(path, separator, encoding):
    """Every column of every token of ``path``: (sequences of tuples, n_columns, encoding).

    With ``encoding`` None, UTF-8 and, failing that, Latin-1, the encoding of
    the original CoNLL-2002 release (every byte string is valid Latin-1).
    """
    for candidate in [encoding] if encoding else ["utf-8", "latin-1"]:
        try:
            rows, _ = load_conll(path, label_column=None, separator=separator,
                                 encoding=candidate)
            break
        except UnicodeDecodeError as error:
            if encoding is None:
                continue
            raise _CommandError(
                f"{path} is not valid {encoding} text ({error.reason} at byte "
                f"0x{error.object[error.start]:02x}); it must be in the --encoding given "
                f"to 'skcrf train'") from None
        except LookupError:
            raise _UsageError(f"--encoding {encoding}: unknown encoding") from None
        except OSError as error:
            raise _CommandError(f"cannot read {path}: {error.strerror or error}") from None
    else:  # pragma: no cover - Latin-1 decodes any byte string
        raise AssertionError("unreachable")
    if not rows:
        raise _CommandError(f"{path} holds no token lines")
    first = rows[0][0]
    # load_conll gives a str for one-column lines and a tuple otherwise
    n_columns = len(first) if isinstance(first, tuple) else 1
    if n_columns == 1:
        rows = [[(token,) for token in sequence] for sequence in rows]
    return rows, n_columns, candidate


def _pick(rows, columns):
    """Tokens made of ``columns``: a str for one column, a tuple for several."""
    getter = itemgetter(*columns)
    return [list(map(getter, sequence)) for sequence in rows]


# --------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------

def _say(args, *parts):
    if not getattr(args, "quiet", False):
        print(*parts, flush=True)


def _check_writable(path, option):
    """Fail before a long run rather than after it, when ``path`` cannot be written."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise _CommandError(f"cannot write {option} {path}: it is a directory")
    if not folder.is_dir():
        raise _CommandError(f"cannot write {option} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise _CommandError(f"cannot write {option} {path}: permission denied")


def _train(args):
    _check_writable(args.model, "--model")
    started = time.perf_counter()
    rows, n_columns, encoding = _read_rows(args.train_file, args.separator, args.encoding)
    layout = _Layout.resolve(n_columns, args.columns, args.label_column, args.separator,
                             args.encoding, args.train_file)
    X = _pick(rows, layout.token_columns)
    y = [[row[layout.label_column] for row in sequence] for sequence in rows]
    del rows
    n_tokens = sum(map(len, y))
    n_labels = len({label for sequence in y for label in sequence})
    _say(args, f"read {args.train_file}: {len(X)} sequences, {n_tokens} tokens, "
               f"{n_labels} labels ({encoding}; token columns "
               f"{','.join(map(str, layout.token_columns))}, label column "
               f"{layout.label_column} of {n_columns})")

    pipe = make_pipeline(
        TokenFeaturizer(window=args.window, word_features=args.word_features,
                        context_features=args.context_features, prefixes=args.prefixes,
                        suffixes=args.suffixes, bias=not args.no_bias,
                        boundary=not args.no_boundary),
        SequenceVectorizer(min_freq=args.min_freq),
        CRFClassifier(alpha=args.alpha, l1_ratio=args.l1_ratio, max_iter=args.max_iter,
                      tol=args.tol, order=args.order,
                      transition_features=_transition_features(args.transition_features),
                      n_jobs=args.n_jobs, verbose=0 if args.quiet else 1),
    )
    # the steps one by one, as Pipeline.fit runs them, to report the feature count
    # before the iterations start
    Xt = pipe[:-1].fit_transform(X)
    _say(args, f"features: {Xt.n_features} (read and featurized in "
               f"{time.perf_counter() - started:.1f} s)")
    with _warnings_as_lines("skcrf train", _convergence_advice(args)):
        pipe[-1].fit(Xt, y)
    crf = pipe[-1]
    # progress was for this run; a user refitting the loaded model asks for it anew
    crf.set_params(verbose=0)
    metadata = {"layout": asdict(layout), "command": ["skcrf", *args.argv]}
    try:
        save_model(pipe, args.model, metadata=metadata)
    except OSError as error:
        raise _CommandError(f"cannot write {args.model}: {error.strerror or error}") from None
    print(f"trained {crf.n_iter_} iterations in {time.perf_counter() - started:.1f} s: "
          f"{crf.n_features_in_} features, {len(crf.classes_)} labels; model written to "
          f"{args.model}", flush=True)
    return 0


def _transition_features(prefixes):
    """CRFClassifier's transition_features from the option's list: None, "all" or prefixes."""
    if not prefixes:
        return None
    return "all" if list(prefixes) == ["all"] else list(prefixes)


def _convergence_advice(args):
    return (f"stopped at --max-iter {args.max_iter} before the objective settled (relative "
            f"improvement over 10 iterations still above --tol {args.tol:g}); the model "
            f"is saved, raise --max-iter to train longer")


@contextmanager
def _warnings_as_lines(prog, convergence_message=None):
    """Report warnings raised inside as one line each on stderr, not as dumps."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen = set()
    for warning in caught:
        # only the max_iter warning gets the --max-iter advice; a line search that
        # gave up says something else (scale the features), in its own words
        if (issubclass(warning.category, ConvergenceWarning) and convergence_message
                and "did not converge" in str(warning.message)):
            text = convergence_message
        else:
            text = " ".join(str(warning.message).split())
        if text not in seen:
            seen.add(text)
            print(f"{prog}: warning: {text}", file=sys.stderr, flush=True)


def _load(prog, path):
    """The model at ``path`` and its layout (None for a model not from ``skcrf train``).

    Any failure to load is one line, ``cannot load model PATH: why``: a model
    file may be truncated, corrupt or written by another program, and what
    goes wrong inside the loader then (a MemoryError for an array that claims
    terabytes, a KeyError, ...) is about the file, not a bug to show a
    traceback for.
    """
    try:
        with _warnings_as_lines(prog):
            model, metadata = load_model(path, return_metadata=True)
        layout = _Layout.from_metadata(metadata.get("layout"))
    except Exception as error:  # noqa: BLE001 - see the docstring
        raise _CommandError(f"cannot load model {path}: {_load_failure(path, error)}") \
            from None
    if not hasattr(model, "predict"):
        raise _CommandError(f"{path} holds a {type(model).__name__}, which cannot label "
                            f"tokens; train a model with 'skcrf train'")
    return model, layout


def _load_failure(path, error):
    """Why loading ``path`` failed, in one line."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    message = " ".join(str(error).split())
    # the loader's messages start with the file name, which the line has already
    message = message.removeprefix(f"{path}: ")
    if message.startswith(f"{path} "):
        message = "it " + message.removeprefix(f"{path} ")
    if isinstance(error, MemoryError):
        return f"it needs more memory than there is ({message or 'MemoryError'})"
    if not isinstance(error, (ValueError, TypeError)) or not message:
        message = f"{type(error).__name__}: {message}".rstrip(": ")
    return message


def _read_for(layout, path, need_labels):
    """Tokens, labels (or None) and the raw rows of ``path`` in the model's layout."""
    if layout is None:
        # a model saved from Python: every column is a token column, the last
        # one is the label when one is needed
        rows, n_columns, encoding = _read_rows(path, None, None)
        if need_labels and n_columns < 2:
            raise _CommandError(f"{path} has 1 column; evaluating needs a label column")
        token_columns = range(n_columns - 1) if need_labels else range(n_columns)
        label_column = n_columns - 1 if need_labels else None
    else:
        rows, n_columns, encoding = _read_rows(path, layout.separator, layout.encoding)
        token_columns, label_column = layout.for_file(n_columns, path, need_labels)
    X = _pick(rows, list(token_columns))
    y = (None if label_column is None
         else [[row[label_column] for row in sequence] for sequence in rows])
    return X, y, rows, encoding


def _predict(model, model_path, X, marginals):
    """Predicted labels, and the probability of each with ``marginals``."""
    if isinstance(model, Pipeline):
        features, crf = model[:-1], model[-1]
    else:
        features, crf = None, model
    if marginals and not hasattr(crf, "predict_marginals"):
        raise _CommandError(f"{model_path}: a {type(crf).__name__} gives no marginals")
    try:
        Xt = features.transform(X) if features is not None else X
        y_pred = crf.predict(Xt)
        if not marginals:
            return y_pred, None
        probabilities = [p[np.arange(len(labels)), crf.classes_.searchsorted(labels)]
                         for p, labels in zip(crf.predict_marginals(Xt), y_pred)]
    except (TypeError, ValueError) as error:
        raise _CommandError(f"{model_path} cannot label these tokens: {error}") from None
    return y_pred, probabilities


def _tag(args):
    prog = "skcrf tag"
    if args.output is not None:
        _check_writable(args.output, "--output")
    model, layout = _load(prog, args.model)
    X, _, rows, encoding = _read_for(layout, args.file, need_labels=False)
    y_pred, probabilities = _predict(model, args.model, X, args.marginals)
    separator = layout.separator if layout is not None and layout.separator else " "
    lines = []
    for q, (sequence, labels) in enumerate(zip(rows, y_pred, strict=True)):
        extra = ([f"{p:.4f}" for p in probabilities[q]] if probabilities is not None
                 else None)
        for i, (row, label) in enumerate(zip(sequence, labels, strict=True)):
            fields = [*row, label] + ([extra[i]] if extra is not None else [])
            lines.append(separator.join(fields))
        lines.append("")
    text = "\n".join(lines) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    try:
        with open(args.output, "w", encoding=encoding, newline="\n") as handle:
            handle.write(text)
    except OSError as error:
        raise _CommandError(f"cannot write {args.output}: {error.strerror or error}") from None
    except UnicodeEncodeError as error:  # pragma: no cover - the input decoded with it
        raise _CommandError(f"cannot write {args.output} as {encoding}: {error}") from None
    return 0


def _evaluate(args):
    prog = "skcrf evaluate"
    model, layout = _load(prog, args.model)
    X, y_true, _, _ = _read_for(layout, args.test_file, need_labels=True)
    y_pred, _ = _predict(model, args.model, X, marginals=False)
    n_tokens = sum(map(len, y_true))
    with _warnings_as_lines(prog):
        accuracy = flat_accuracy_score(y_true, y_pred)
        print(f"{args.test_file}: {len(y_true)} sequences, {n_tokens} tokens")
        print(f"token accuracy: {accuracy:.4f}\n")
        print(f"Spans (conlleval, exact span and type match, scheme {args.scheme}):")
        try:
            # zero_division=0.0: a type never predicted scores 0, as in conlleval,
            # rather than a warning per report
            print(span_classification_report(y_true, y_pred, scheme=args.scheme, digits=4,
                                             zero_division=0.0))
        except ValueError as error:
            raise _CommandError(f"{args.test_file}: {error}") from None
        labels = sorted({label for sequence in y_true for label in sequence} - {"O"})
        print("Tokens" + (" (labels other than O):" if labels else ":"))
        print(flat_classification_report(y_true, y_pred, labels=labels or None, digits=4,
                                         zero_division=0.0), flush=True)
    return 0


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

def main(argv=None):
    """Run the ``skcrf`` command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success, 2 for a usage error, 1 for any other error (reported
        as one line on stderr).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    args.argv = argv
    prog = f"skcrf {args.command}"
    try:
        return args.run(args)
    except BrokenPipeError:
        # the reader of our output went away (`skcrf tag ... | head`): not an error
        # worth a traceback; point stdout at devnull so the exit flush stays quiet
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except _UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except (_CommandError, OSError, ValueError, TypeError) as error:
        message = " ".join(str(error).split())
        if isinstance(error, OSError) and error.filename is not None:
            message = f"{error.filename}: {error.strerror}"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
