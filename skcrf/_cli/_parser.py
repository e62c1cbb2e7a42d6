"""The command line's arguments: the parser, its option types and its help texts."""

import argparse
import math
from fractions import Fraction

from .._estimators import defaults as _defaults
from .._estimators.base import SOLVERS
from .._chain import CRFClassifier
from ..features.featurizer import _WORD_FEATURES, MAX_WINDOW, TokenFeaturizer

# the option defaults come from the estimators, so the two cannot drift apart
_FEATURIZER = TokenFeaturizer().get_params()
_CRF = CRFClassifier().get_params()
SCHEMES = ("IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain")


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


def _token_columns(text, columns, example):
    """``columns`` parsed from ``text``: at least one, none twice."""
    if not columns:
        raise argparse.ArgumentTypeError(f"give at least one token column, such as {example}")
    if len(set(columns)) != len(columns):
        raise argparse.ArgumentTypeError(f"{text!r} names a column twice")
    return columns


def _column_list(text):
    """'0,1' -> [0, 1]: the token columns."""
    try:
        columns = [int(part) for part in _split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of column numbers, such as 0,1"
        ) from None
    return _token_columns(text, columns, "0")


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


def _conllu_column(text):
    """A CoNLL-U column: a name (deprel) or a number (7)."""
    text = text.strip()
    return int(text) if text.isdigit() else text


def _conllu_columns(text):
    """'form,upos' -> ['form', 'upos']: CoNLL-U columns by name or number."""
    return _token_columns(text, [_conllu_column(part) for part in _split(text)], "form")


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


def _fraction(value):
    """1/3 for 0.333...: how the help shows a default that is a simple fraction."""
    fraction = Fraction(value).limit_denominator(12)
    return str(fraction) if abs(float(fraction) - value) < 1e-12 else f"{value:g}"


def _separator(text):
    # a literal tab is awkward to type in a shell, so accept the escape too
    return "\t" if text in ("\\t", "tab") else text


def build_parser():
    parser = _Parser(
        prog="skcrf", formatter_class=_HelpFormatter,
        description="Train, apply and evaluate CRFs (linear chains, semi-Markov and tree "
                    "CRFs: --structure) on\nCoNLL-style column files: one token per line, "
                    "columns separated by spaces or tabs,\na blank line between sequences "
                    "(CoNLL-U for trees).",
        epilog="examples:\n"
               "  skcrf train esp.train --model ner.skcrf\n"
               "  skcrf tag --model ner.skcrf esp.testb > tagged.txt\n"
               "  skcrf evaluate --model ner.skcrf esp.testb\n\n"
               "Run 'skcrf COMMAND --help' for the options of each command.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"skcrf {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_train(commands)
    _add_tag(commands)
    _add_evaluate(commands)
    _add_warmup(commands)
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
    train.add_argument("-m", "--model", required=True, metavar="MODEL",
                       help="where to write the model (created or overwritten)")
    _add_quiet(train, "print no progress or notes, only the summary line (and warnings "
                      "or errors)")

    layout = train.add_argument_group("column layout")
    layout.add_argument("--columns", type=_column_list, metavar="COLS",
                        help="comma-separated columns that form a token, the word first, "
                             "such as 0,1 (default: every column but the label)")
    layout.add_argument("--numeric-columns", type=_column_list, metavar="COLS",
                        help="chain or semimarkov: comma-separated columns read as numbers "
                             "(such as sensor readings or a word's vector), given to the "
                             "model as dense features named colN (default: none; they are "
                             "then not token columns)")
    layout.add_argument("--label-column", type=int, default=-1, metavar="N",
                        help="column of the label; negative counts from the end")
    layout.add_argument("--separator", type=_separator, metavar="SEP",
                        help="column separator, '\\t' for a tab (default: any run of "
                             "spaces and tabs)")
    _add_encoding(layout, "")
    layout.add_argument("--unknown-label", metavar="MARK",
                        help="chain: a label value that means 'unknown' (any label), such "
                             "as _; such tokens train on every labelling consistent with "
                             "the rest (default: none, every value is a label)")
    layout.add_argument("--label-sets", metavar="SEP",
                        help="chain: split label values at SEP into a set of possible "
                             "labels, such as | for B-PER|B-ORG (default: no sets)")

    features = train.add_argument_group("features (TokenFeaturizer, SequenceVectorizer)")
    features.add_argument("--window", type=_bounded(int, 0, MAX_WINDOW, name="an integer"),
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

    trees = train.add_argument_group("CoNLL-U (--structure tree)")
    trees.add_argument("--label", type=_conllu_column, default="deprel", metavar="COLUMN",
                       help="the CoNLL-U column to learn: deprel, upos, xpos, feats, ... "
                            "or its number (default: deprel)")
    trees.add_argument("--token-columns", type=_conllu_columns, metavar="COLUMNS",
                       help="comma-separated CoNLL-U columns that form a token, the word "
                            "first (default: form,upos without the label); the head makes "
                            "the tree and gives each token features of its head")
    trees.add_argument("--deprel-subtypes", action="store_true",
                       help="keep DEPREL's subtypes (nmod:poss); by default only the "
                            "universal relation (nmod) is kept")

    model = train.add_argument_group("model (CRFClassifier, SemiMarkovCRF or TreeCRF)")
    model.add_argument("--structure", choices=("chain", "semimarkov", "tree"), default="chain",
                       help="chain: a label per token (CRFClassifier); semimarkov: labelled "
                            "segments of tokens (SemiMarkovCRF), for B-/I- (or other scheme) "
                            "tags or runs of plain labels; tree: a label per word of the "
                            "dependency trees of a CoNLL-U file (TreeCRF) (default: chain)")
    model.add_argument("--max-segment-length", type=_bounded(int, 1, 1000, name="an integer"),
                       metavar="L",
                       help="semimarkov: longest segment of any label (default: each "
                            "label's longest in the training file)")
    c1, c2 = _defaults.crfsuite_c1_c2()
    model.add_argument("--alpha", type=_bounded(float, 0.0), metavar="A",
                       help="regularization strength: L1 weight alpha*l1_ratio, L2 weight "
                            "alpha*(1-l1_ratio)/2. With --l1-ratio these defaults, the "
                            f"estimators' own, equal CRFsuite's c1={c1:g}, c2={c2:g} "
                            f"(default: {_defaults.ALPHA:g})")
    model.add_argument("--l1-ratio", type=_bounded(float, 0.0, 1.0), metavar="R",
                       help="share of L1 in the penalty: 0 is pure L2, 1 pure L1 "
                            f"(default: {_fraction(_defaults.L1_RATIO)})")
    model.add_argument("--c1", type=_bounded(float, 0.0), metavar="C1",
                       help="CRFsuite's L1 coefficient, instead of --alpha/--l1-ratio "
                            f"(alpha = c1 + 2*c2, l1_ratio = c1/alpha; default: {c1:g})")
    model.add_argument("--c2", type=_bounded(float, 0.0), metavar="C2",
                       help=f"CRFsuite's L2 coefficient, with --c1 (default: {c2:g})")
    model.add_argument("--solver", choices=SOLVERS, default="lbfgs",
                       help="lbfgs: L-BFGS (OWL-QN with L1) over all the data; the others "
                            "take one step per sequence, as CRFsuite's l2sgd, ap, pa and "
                            "arow: sgd minimises the same objective, perceptron (averaged), "
                            "passive_aggressive (PA-I) and arow ignore --alpha "
                            "(default: lbfgs)")
    model.add_argument("--random-state", type=int, metavar="SEED",
                       help="online solvers: seed of the order the sequences are visited in "
                            "(and of SGD's calibration sample)")
    model.add_argument("--max-iter", type=_bounded(int, 1, name="an integer"),
                       default=_CRF["max_iter"], metavar="N",
                       help="most L-BFGS / OWL-QN iterations, or epochs of an online solver")
    model.add_argument("--tol", type=_bounded(float, 0.0), default=_CRF["tol"], metavar="T",
                       help="stop once the objective improved by less than T (relative) "
                            "over 10 iterations")
    model.add_argument("--order", type=_bounded(int, 1, name="an integer"),
                       default=_CRF["order"], metavar="D",
                       help="Markov order of the labels (semimarkov: of consecutive "
                            "segments' labels): D >= 2 adds weights for the label n-grams of "
                            "3 to D + 1 labels seen in training (slower about in proportion "
                            "to their number)")
    model.add_argument("--min-pattern-freq", type=_bounded(int, 1, name="an integer"),
                       default=_CRF["min_pattern_freq"], metavar="N",
                       help="with --order 2 or more: the fewest times a label n-gram must "
                            "occur in training to get a weight (default: %(default)s)")
    model.add_argument("--prune-threshold", type=_bounded(float, 0.0, 1.0), metavar="P",
                       help="chain, with --order 2 or more: train and predict on the labels "
                            "whose marginal under an order-1 chain fitted first is at least P "
                            "(e.g. 1e-3; much faster with many labels)")
    model.add_argument("--transition-features", type=_split, metavar="PREFIXES",
                       help="comma-separated feature-name prefixes (e.g. 'pos=,shape=') "
                            "whose features also weight the transitions into their token "
                            "(tree: the link to its head); 'all' for every feature (order 1 "
                            "only)")
    model.add_argument("--constraints", choices=("bio", "bioes", "auto"),
                       help="chain: forbid the transitions the tagging scheme forbids (bio: "
                            "no I-X after O or another type, none first; bioes: also the "
                            "E-/S- rules; auto: the scheme of the training tags), in "
                            "training and tagging, so that every predicted span is "
                            "well-formed (CRFClassifier's allowed_transitions)")
    model.add_argument("--n-jobs", type=int, metavar="N",
                       help="threads for the kernels; -1 all cores, -2 all but one "
                            "(default: all cores)")


def _warmup_kinds():
    # the list is warmup's own: a kind added there is listed here
    from ._warmup import KINDS
    return list(KINDS)


def _add_warmup(commands):
    warmup = commands.add_parser(
        "warmup", formatter_class=_HelpFormatter,
        help="compile the kernels ahead of first use",
        description="Compile every numba kernel (chains of orders 1 to 3, transition "
                    "features,\nsemi-Markov, trees) by fitting and applying a toy model of "
                    "each. Otherwise the first\nfit of each kind of model after an install "
                    "pays it (and says so); numba keeps\nthe compiled kernels on disk, so "
                    "this is needed once per install. The kinds compile\nin parallel "
                    "processes, one per core.")
    warmup.add_argument("--only", metavar="KINDS",
                        help="comma-separated kinds to compile: "
                             f"{', '.join(_warmup_kinds())} (default: all)")
    warmup.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="worker processes (default: one per core)")
    _add_quiet(warmup, "print only the summary line (and warnings or errors)")


def _add_quiet(command, help_text):
    """--quiet: results, warnings and errors only (no progress, no notes)."""
    command.add_argument("-q", "--quiet", action="store_true", help=help_text)


def _add_encoding(command, default):
    command.add_argument(
        "--encoding", metavar="ENC",
        help=f"text encoding (default: {default}UTF-8, or Latin-1 for 8-bit text with no "
             f"UTF-8 character, such as the original CoNLL-2002 release; a file of UTF-8 "
             f"with a stray byte is an error naming its line)")


def _add_model_options(command):
    """--model and --allow-pickle, the options of the commands that load a model."""
    command.add_argument("-m", "--model", required=True, metavar="MODEL",
                         help="model written by 'skcrf train'")
    command.add_argument("--allow-pickle", action="store_true",
                         help="also load models stored as pickles (files of skcrf 0.1, or "
                              "saved with allow_pickle=True): loading a pickle can run any "
                              "code in it, so only for files you trust")


def _add_tag(commands):
    tag = commands.add_parser(
        "tag", formatter_class=_HelpFormatter,
        help="label the tokens of a column file with a trained model",
        description="Label the sequences of a column file with a trained model. FILE has "
                    "the columns of\nthe training file, with or without its label column. "
                    "The output repeats the input\ncolumns and adds the predicted label as "
                    "the last one (and, with --marginals, its\nprobability after it), a "
                    "blank line between sequences: ready for conlleval. Files of any\n"
                    "size: the sequences are read, labelled and written a batch at a "
                    "time.",
        epilog="examples:\n"
               "  skcrf tag --model ner.skcrf esp.testb > tagged.txt\n"
               "  skcrf tag --model ner.skcrf unlabelled.txt --output tagged.txt "
               "--marginals\n"
               "  skcrf tag --model ner.skcrf unlabelled.txt --nbest 3")
    tag.add_argument("file", metavar="FILE", help="column file to label")
    _add_model_options(tag)
    tag.add_argument("--output", metavar="OUT",
                     help="where to write the labelled file (default: standard output); "
                          "not the input or the model")
    _add_encoding(tag, "the training file's if given to 'skcrf train', else ")
    tag.add_argument("--marginals", action="store_true",
                     help="add the probability of each predicted label (%%.4f) as a "
                          "last column")
    tag.add_argument("--nbest", type=_bounded(int, 1, name="an integer"), metavar="N",
                     help="write the N most likely labellings of each sequence, each "
                          "after a line '# RANK PROBABILITY' (rank from 0, probability "
                          "%%.6f), as CRF++'s -n does; --nbest 1 gives the best labelling "
                          "with its probability")
    _add_quiet(tag, "print only the labelled file (and warnings or errors), no notes")


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
    _add_model_options(evaluate)
    _add_encoding(evaluate, "the training file's if given to 'skcrf train', else ")
    evaluate.add_argument("--scheme", choices=SCHEMES, default="IOB2",
                          help="tagging scheme of the labels, for the span report; "
                               "'plain' for labels without B-/I- prefixes")
    _add_quiet(evaluate, "print only the reports (and warnings or errors), no notes")
