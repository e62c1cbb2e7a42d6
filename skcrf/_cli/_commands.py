"""The subcommands: ``train``, ``tag`` and ``evaluate``.

``tag`` and ``evaluate`` stream: they read, label and write (or count) one
batch of sequences at a time, so their memory does not grow with the file.
``train`` needs every sequence at once to fit.
"""

import os
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline, make_pipeline

from .._estimators import defaults as _defaults
from .._chain import CRFClassifier
from .._semimarkov import SemiMarkovCRF
from .._persistence import load_model, save_model
from ..features.featurizer import TokenFeaturizer
from ..features.vectorizer import SequenceVectorizer
from ..features.sequence_matrix import SequenceMatrix
from ._columns import (ColumnFile, Layout, nbest_text, numbers, numeric_names, output_file,
                       pick, tagged_text)
from ._errors import CommandError, UsageError
from ._scores import StreamingScores
from ._trees import (ConlluLayout, check_tree_options, n_words, token_accuracy_report,
                     tree_estimator)
from ._warmup import warmup


def _say(args, *parts):
    if not getattr(args, "quiet", False):
        print(*parts, flush=True)


def _check_writable(path, option):
    """Fail before a long run rather than after it, when ``path`` cannot be written."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise CommandError(f"cannot write {option} {path}: it is a directory")
    if not folder.is_dir():
        raise CommandError(f"cannot write {option} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CommandError(f"cannot write {option} {path}: permission denied")


def _check_not_an_input(path, option, inputs):
    """Refuse to write ``path`` over one of the ``(what, path)`` files the command reads."""
    for what, other in inputs:
        if other is not None and other != "-" and _same_file(path, other):
            raise CommandError(f"{option} {path} is the {what}: writing it would replace "
                               f"the {what}; choose another path")


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def _require_stdout():
    """Fail in one line when standard output is closed (``skcrf tag ... >&-``)."""
    if sys.stdout is None:
        raise CommandError("standard output is closed; give --output FILE, or redirect it")


# --------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------

def train(args):
    _check_not_an_input(args.model, "--model", [("training file", args.train_file)])
    _check_writable(args.model, "--model")
    _estimator(args)  # option clashes fail before the file is read
    if args.structure == "tree" and args.numeric_columns:
        raise UsageError("--numeric-columns is for column files (chain or semimarkov); "
                         "--structure tree reads CoNLL-U, whose columns are not numbers")
    if args.structure == "tree":
        return _train_tree(args)
    started = time.perf_counter()
    source = ColumnFile(args.train_file, args.separator, args.encoding)
    layout = Layout.resolve(source.n_columns, args.columns, args.label_column,
                            args.separator, args.encoding, args.train_file,
                            args.numeric_columns)
    X, y, values = [], [], []
    for batch in source.batches():
        if layout.numeric_columns:
            values += numbers(batch, layout.numeric_columns, args.train_file, len(X))
        X += pick(batch, layout.token_columns)
        y += pick(batch, [layout.label_column])
    y = partial_labels(y, args.unknown_label, args.label_sets)
    n_tokens = sum(map(len, y))
    n_labels = len({label for sequence in y for label in sequence
                    for label in (label if isinstance(label, frozenset) else [label])
                    if label is not None})
    _say(args, f"read {args.train_file}: {len(X)} sequences, {n_tokens} tokens, "
               f"{n_labels} labels ({source.encoding}; token columns "
               f"{','.join(map(str, layout.token_columns))}, "
               + (f"numeric columns {','.join(map(str, layout.numeric_columns))}, "
                  if layout.numeric_columns else "")
               + f"label column {layout.label_column} of {source.n_columns})")

    saved = asdict(layout)
    if not layout.numeric_columns:  # files without numbers stay as they were
        del saved["numeric_columns"]
    metadata = {"layout": saved, "command": ["skcrf", *args.argv]}
    numeric = (values, numeric_names(layout.numeric_columns)) if values else None
    return _fit_and_save(args, X, y, _featurizer(args), metadata, started, numeric)


def with_numbers(Xt, values, names):
    """The featurized ``Xt`` with the numeric columns' ``values`` as its dense block.

    The numbers stay outside the saved pipeline (its steps read tokens): the
    command line reads them from the same columns when it tags, and gives
    them to the model beside the pipeline's features.
    """
    block = np.concatenate(values) if values else np.empty((0, len(names)))
    return SequenceMatrix(Xt.matrix, Xt.offsets, Xt.feature_names, parents=Xt.parents,
                          dense=block, dense_names=names)


def partial_labels(y, unknown, separator):
    """``y`` with the ``unknown`` marker read as None and values holding ``separator`` as sets."""
    if unknown is None and separator is None:
        return y

    def read(value):
        if value == unknown:
            return None
        if separator is not None and separator in value:
            return frozenset(part for part in value.split(separator) if part)
        return value

    return [[read(value) for value in labels] for labels in y]


def _train_tree(args):
    """``train --structure tree``: a TreeCRF on the dependency trees of a CoNLL-U file."""
    started = time.perf_counter()
    layout = ConlluLayout.of_args(args)
    X, y = layout.read(args.train_file)
    _say(args, f"read {args.train_file}: {len(X)} sentences, {n_words(y)} words, "
               f"{len({label for labels in y for label in labels})} labels of "
               f"{layout.label} (CoNLL-U; token columns "
               f"{','.join(map(str, layout.token_columns))} and the head)")
    metadata = {"conllu": layout.metadata(), "command": ["skcrf", *args.argv]}
    featurizer = _featurizer(args, head_column=len(layout.token_columns))
    return _fit_and_save(args, X, y, featurizer, metadata, started)


def _featurizer(args, head_column=None):
    return TokenFeaturizer(window=args.window, word_features=args.word_features,
                           context_features=args.context_features, prefixes=args.prefixes,
                           suffixes=args.suffixes, bias=not args.no_bias,
                           boundary=not args.no_boundary, head_column=head_column)


def _fit_and_save(args, X, y, featurizer, metadata, started, numeric=None):
    """Fit the pipeline of ``featurizer``, a vectorizer and the CRF; save it with ``metadata``.

    ``numeric`` is ``(values, names)``: the numeric columns, one array per
    sequence, added as a dense block (see :func:`with_numbers`).
    """
    pipe = make_pipeline(featurizer, SequenceVectorizer(min_freq=args.min_freq),
                         _estimator(args))
    # the steps one by one, as Pipeline.fit runs them, to report the feature count
    # before the iterations start
    Xt = pipe[:-1].fit_transform(X)
    if numeric is not None:
        Xt = with_numbers(Xt, *numeric)
    _say(args, f"features: {Xt.n_features + Xt.n_dense} (read and featurized in "
               f"{time.perf_counter() - started:.1f} s)")
    with warnings_as_lines("skcrf train", _convergence_advice(args)):
        pipe[-1].fit(Xt, y)
    crf = pipe[-1]
    # progress was for this run; a user refitting the loaded model asks for it anew
    crf.set_params(verbose=0)
    try:
        save_model(pipe, args.model, metadata=metadata)
    except OSError as error:
        raise CommandError(f"cannot write {args.model}: {error.strerror or error}") from None
    rounds = "iterations" if args.solver == "lbfgs" else "epochs"
    print(f"trained {crf.n_iter_} {rounds} in {time.perf_counter() - started:.1f} s: "
          f"{crf.n_features_in_} features, {len(crf.classes_)} labels; model written to "
          f"{args.model}", flush=True)
    return 0


def _estimator(args):
    """The CRF of ``--structure`` with the model options; a clash of options is an error."""
    alpha, l1_ratio = _regularization(args)
    common = dict(alpha=alpha, l1_ratio=l1_ratio, max_iter=args.max_iter,
                  tol=args.tol, solver=args.solver, random_state=args.random_state,
                  n_jobs=args.n_jobs, verbose=0 if args.quiet else 1)
    check_tree_options(args)
    if args.structure == "tree":
        return tree_estimator(args, common, _transition_features(args.transition_features))
    if args.structure == "semimarkov":
        chain_only = [option for option, given in (
            ("--transition-features", args.transition_features),
            ("--constraints", args.constraints is not None),
            ("--prune-threshold", args.prune_threshold is not None))
            if given]
        if chain_only:
            raise CommandError(f"{' and '.join(chain_only)} apply to --structure chain, not "
                               f"semimarkov")
        return SemiMarkovCRF(max_segment_length=args.max_segment_length, order=args.order,
                             min_pattern_freq=args.min_pattern_freq, **common)
    if args.max_segment_length is not None:
        raise CommandError("--max-segment-length applies to --structure semimarkov")
    if args.prune_threshold is not None and args.order < 2:
        raise CommandError("--prune-threshold applies to --order 2 or more")
    return CRFClassifier(order=args.order, min_pattern_freq=args.min_pattern_freq,
                         prune_threshold=args.prune_threshold,
                         transition_features=_transition_features(args.transition_features),
                         allowed_transitions=args.constraints, **common)


def _regularization(args):
    """(alpha, l1_ratio) from --alpha/--l1-ratio or CRFsuite's --c1/--c2, not both.

    What is not given comes from the estimators' defaults (:mod:`skcrf._estimators.defaults`).
    """
    if args.c1 is None and args.c2 is None:
        return (_defaults.ALPHA if args.alpha is None else args.alpha,
                _defaults.L1_RATIO if args.l1_ratio is None else args.l1_ratio)
    if args.alpha is not None or args.l1_ratio is not None:
        raise CommandError("give --c1/--c2 (CRFsuite's) or --alpha/--l1-ratio, not both")
    default_c1, default_c2 = _defaults.crfsuite_c1_c2()
    c1 = default_c1 if args.c1 is None else args.c1
    c2 = default_c2 if args.c2 is None else args.c2
    alpha = c1 + 2 * c2
    return alpha, (c1 / alpha if alpha > 0 else 0.0)


def _transition_features(prefixes):
    """CRFClassifier's transition_features from the option's list: None, "all" or prefixes."""
    if not prefixes:
        return None
    return "all" if list(prefixes) == ["all"] else list(prefixes)


def _convergence_advice(args):
    if args.solver != "lbfgs":
        return (f"stopped at --max-iter {args.max_iter} epochs before the loss settled; "
                f"the model is saved, raise --max-iter to train longer")
    return (f"stopped at --max-iter {args.max_iter} before the objective settled (relative "
            f"improvement over 10 iterations still above --tol {args.tol:g}); the model "
            f"is saved, raise --max-iter to train longer")


@contextmanager
def warnings_as_lines(prog, convergence_message=None):
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


# --------------------------------------------------------------------------
# Loading a model and labelling with it
# --------------------------------------------------------------------------

def _load(prog, path, allow_pickle=False):
    """The model at ``path`` and its layout (None for a model not from ``skcrf train``).

    ``allow_pickle`` is ``load_model``'s opt-in for pickled (old or foreign) models.

    Any failure to load is one line, ``cannot load model PATH: why``: a model
    file may be truncated, corrupt or written by another program, and what
    goes wrong inside the loader then (a MemoryError for an array that claims
    terabytes, a KeyError, ...) is about the file, not a bug to show a
    traceback for.
    """
    try:
        with warnings_as_lines(prog):
            model, metadata = load_model(path, return_metadata=True,
                                         allow_pickle=allow_pickle)
        layout = (ConlluLayout.from_metadata(metadata["conllu"]) if "conllu" in metadata
                  else Layout.from_metadata(metadata.get("layout")))
    except Exception as error:  # noqa: BLE001 - see the docstring
        raise CommandError(f"cannot load model {path}: {_load_failure(path, error)}") \
            from None
    if not hasattr(model, "predict"):
        raise CommandError(f"{path} holds a {type(model).__name__}, which cannot label "
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


def _open_for(layout, path, need_labels, encoding=None):
    """The column file ``path``, its token columns and its label column (or None).

    ``encoding`` (``--encoding``) overrides the one the model was trained with.
    """
    if layout is None:
        # a model saved from Python: every column is a token column, the last
        # one is the label when one is needed
        source = ColumnFile(path, None, encoding)
        n_columns = source.n_columns
        if need_labels and n_columns < 2:
            raise CommandError(f"{path} has 1 column; evaluating needs a label column")
        token_columns = range(n_columns - 1) if need_labels else range(n_columns)
        label_column = n_columns - 1 if need_labels else None
    else:
        source = ColumnFile(path, layout.separator, encoding or layout.encoding)
        token_columns, label_column = layout.for_file(source.n_columns, path, need_labels)
    return source, list(token_columns), label_column


def _numeric_reader(layout, source, path):
    """``(batch, first) -> (values, names)`` of the layout's numeric columns, or None."""
    columns = () if layout is None else layout.numeric_for_file(source.n_columns)
    names = numeric_names(layout.numeric_columns) if columns else None

    def read(batch, first):
        return (numbers(batch, columns, path, first), names) if columns else None

    return read


class _Labeller:
    """Labels batches of tokens with a model: predicted labels, and their probabilities."""

    def __init__(self, model, model_path, marginals):
        if isinstance(model, Pipeline):
            self.features, self.crf = model[:-1], model[-1]
        else:
            self.features, self.crf = None, model
        if marginals and not hasattr(self.crf, "predict_marginals"):
            raise CommandError(f"{model_path}: a {type(self.crf).__name__} gives no "
                               f"marginals")
        self.model_path = model_path
        self.marginals = marginals

    def _features(self, X, numeric):
        """The model's input: the pipeline's features, and the numeric columns if any."""
        Xt = self.features.transform(X) if self.features is not None else X
        if numeric is not None:
            Xt = with_numbers(Xt, *numeric)
        return Xt

    def nbest(self, X, n, numeric=None):
        """The n best labellings of each sequence, and their tokens' marginals if asked."""
        if not hasattr(self.crf, "predict_nbest"):
            raise CommandError(f"{self.model_path}: a {type(self.crf).__name__} gives no "
                               f"n-best labellings")
        try:
            Xt = self._features(X, numeric)
            nbest = self.crf.predict_nbest(Xt, n=n)
            if not self.marginals:
                return nbest, None
            classes = self.crf.classes_
            probabilities = [[p[np.arange(len(labels)), classes.searchsorted(labels)]
                              for labels, _ in labellings]
                             for p, labellings in zip(self.crf.predict_marginals(Xt), nbest)]
        except (TypeError, ValueError, NotImplementedError) as error:
            raise CommandError(f"{self.model_path} cannot label these tokens: {error}") \
                from None
        return nbest, probabilities

    def __call__(self, X, numeric=None):
        try:
            Xt = self._features(X, numeric)
            y_pred = self.crf.predict(Xt)
            if not self.marginals:
                return y_pred, None
            classes = self.crf.classes_
            probabilities = [p[np.arange(len(labels)), classes.searchsorted(labels)]
                             for p, labels in zip(self.crf.predict_marginals(Xt), y_pred)]
        except (TypeError, ValueError) as error:
            raise CommandError(f"{self.model_path} cannot label these tokens: {error}") \
                from None
        return y_pred, probabilities


# --------------------------------------------------------------------------
# tag and evaluate
# --------------------------------------------------------------------------

def tag(args):
    if args.output is not None:
        _check_not_an_input(args.output, "--output", [("model", args.model),
                                                       ("file to label", args.file)])
        _check_writable(args.output, "--output")
    else:
        _require_stdout()
    model, layout = _load("skcrf tag", args.model, args.allow_pickle)
    labeller = _Labeller(model, args.model, args.marginals)
    if isinstance(layout, ConlluLayout):
        return _tag_trees(args, layout, labeller)
    source, token_columns, _ = _open_for(layout, args.file, need_labels=False,
                                         encoding=args.encoding)
    separator = layout.separator if layout is not None and layout.separator else " "
    numeric = _numeric_reader(layout, source, args.file)
    with output_file(args.output, source.encoding) as output:
        read = 0
        for batch in source.batches():
            tokens = pick(batch, token_columns)
            values = numeric(batch, read)
            read += len(batch)
            if args.nbest is not None:
                nbest, probabilities = labeller.nbest(tokens, args.nbest, values)
                output.write(nbest_text(batch, nbest, probabilities, separator))
                continue
            y_pred, probabilities = labeller(tokens, values)
            output.write(tagged_text(batch, y_pred, probabilities, separator))
    return 0


def evaluate(args):
    _require_stdout()
    prog = "skcrf evaluate"
    model, layout = _load(prog, args.model, args.allow_pickle)
    labeller = _Labeller(model, args.model, marginals=False)
    if isinstance(layout, ConlluLayout):
        return _evaluate_trees(args, layout, labeller)
    source, token_columns, label_column = _open_for(layout, args.test_file, need_labels=True,
                                                    encoding=args.encoding)
    scores = StreamingScores(args.scheme)
    numeric = _numeric_reader(layout, source, args.test_file)
    read = 0
    for batch in source.batches():
        y_pred, _ = labeller(pick(batch, token_columns), numeric(batch, read))
        read += len(batch)
        try:
            scores.add(pick(batch, [label_column]), y_pred)
        except ValueError as error:  # a tag outside the scheme
            raise CommandError(f"{args.test_file}: {error}") from None
    if not scores.n_tokens:
        raise CommandError(f"{args.test_file}: no token to evaluate (the file holds no "
                           f"sentence)")
    _warn_unknown_gold_labels(prog, model, args.test_file, scores)
    try:
        with warnings_as_lines(prog):
            span_report = scores.span_report(digits=4)
            token_report = scores.token_report(digits=4)
    except ValueError as error:  # no span at all
        raise CommandError(f"{args.test_file}: {error}") from None
    print(f"{args.test_file}: {scores.n_sequences} sequences, {scores.n_tokens} tokens")
    print(f"token accuracy: {scores.accuracy():.4f}\n")
    print(f"Spans (conlleval, exact span and type match, scheme {args.scheme}):")
    # zero_division=0: a type never predicted scores 0, as in conlleval, rather
    # than a warning per report
    print(span_report)
    labels = {true for true, _ in scores.label_pairs} - {"O"}
    print("Tokens" + (" (labels other than O):" if labels else ":"))
    print(token_report, flush=True)
    return 0


def _tag_trees(args, layout, labeller):
    """``tag`` with a tree model: one line per word of the CoNLL-U file, a blank line
    between sentences: its token columns, its HEAD (1-based, 0 for a root) and the
    predicted label (and its probability with ``--marginals``), tab-separated."""
    if args.nbest is not None:
        raise CommandError(f"{args.model}: a TreeCRF gives no n-best labellings")
    X, _ = layout.read(args.file, with_labels=False)
    y_pred, probabilities = labeller(X)
    lines = []
    for q, (tokens, labels) in enumerate(zip(X, y_pred)):
        for i, (token, label) in enumerate(zip(tokens, labels)):
            fields = [*token[:-1], str(token[-1] + 1), str(label)]
            if probabilities is not None:
                fields.append(f"{probabilities[q][i]:.4f}")
            lines.append("\t".join(fields))
        lines.append("")
    with output_file(args.output, "utf-8") as output:
        output.write("\n".join(lines) + ("\n" if lines else ""))
    return 0


def _evaluate_trees(args, layout, labeller):
    """``evaluate`` with a tree model: token accuracy and the per-label report."""
    X, y = layout.read(args.test_file)
    if not n_words(y):
        # scikit-learn's message about an empty array would name neither
        raise CommandError(f"{args.test_file}: no word to evaluate (the file holds no "
                           f"sentence)")
    y_pred, _ = labeller(X)
    accuracy, report = token_accuracy_report(y, y_pred)
    print(f"{args.test_file}: {len(X)} sentences, {n_words(y)} words ({layout.label})")
    print(f"token accuracy: {accuracy:.4f}\n")
    print(report, flush=True)
    return 0


def _warn_unknown_gold_labels(prog, model, path, scores):
    """Say so when no gold label is one the model can predict.

    That is a model of another task, or the wrong label column: the scores
    would be near 0 without saying why. Some unknown labels (a type the
    training data lacked) only score 0, as in conlleval, without a warning.
    """
    final = model[-1] if isinstance(model, Pipeline) else model
    known = sorted(set(map(str, getattr(final, "classes_", []))))
    gold = sorted({str(true) for true, _ in scores.label_pairs})
    if not gold or set(gold) & set(known):
        return

    def listed(labels):
        return ", ".join(labels[:5]) + (", ..." if len(labels) > 5 else "")

    print(f"{prog}: warning: none of the gold labels of {path} ({listed(gold)}) is a label "
          f"of the model ({listed(known)}): it was trained for another task, or the label "
          f"column is not the one it was trained on", file=sys.stderr, flush=True)


COMMANDS = {"train": train, "tag": tag, "evaluate": evaluate, "warmup": warmup}
