"""TokenFeaturizer: window features straight from raw token sequences.

The fast path builds no per-token dict. It numbers the distinct values of each
token column once (a few tens of thousands of words for a few hundred thousand
tokens), computes every feature once per distinct value into a small table,
and lets one kernel gather the table entries of all tokens: a context offset
is a shift within each sequence. Columns come out sorted by name, so
SequenceVectorizer has nothing to reorder. A few sentences (tagging one at a
time) take a path of plain lists instead (``_small.py``), with the same output:
there the fixed cost of the numpy calls would be most of the time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from numbers import Integral
from typing import Any, Optional

import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._estimators.fitted_state import FittedState, IfPresent, Integer, _Spec, saved_as
from .._utils.parallel import kernel_exceptions
from .._utils.tags import sequence_tags
from .._utils.type_aliases import LabelSequences, TokenSequences
from .._utils.validation import check_sequences
from ._segments import (adds_features, check_gazetteer_entries, check_segment_params,
                        fitted_gazetteer_entries, gazetteer_token_dicts,
                        with_segment_features)
from ._plan import checked_plan
from ._small import transform_small
from ._template import template_dicts, template_features, template_lines
from ._tokens import _Tokens
from ._reference import _token_dict
from ._words import _WORD_FEATURES
from ._output import SequenceOutputMixin
from .sequence_matrix import SequenceMatrix
from ._slot_matrix import _featurize


#: The widest context window (``window`` and each of ``columns``) a featurizer takes.
MAX_WINDOW = 100


class _GazetteerEntries(_Spec):
    """A gazetteer's entries as fit read them: a dict of phrase to a tuple of types."""

    def check(self, value, label, dims):
        check_gazetteer_entries(value, label)


@saved_as("skcrf.TokenFeaturizer")
class TokenFeaturizer(SequenceOutputMixin, TransformerMixin, BaseEstimator,
                      auto_wrap_output_keys=None):
    """Window features of raw tokens, with no hand-written ``word2features``.

    A token is a ``str`` (the word) or a tuple of str columns such as
    ``(word, POS)`` as :func:`skcrf.datasets.load_conll` returns them. For each
    token it emits:

    - ``bias``, and ``BOS`` / ``EOS`` on the first / last token of a sequence;
    - features of its word (``word_features``): the word as is (``word=The``),
      lowercased (``word.lower=the``), prefixes (``word[:2]=Th``), suffixes
      (``word[-3:]=The``), shape (``word.shape=Xx``) and flags
      (``word.isupper``, ``word.istitle``, ``word.isdigit``, ``word.hyphen``, ...);
    - features of the words up to ``window`` tokens away
      (``context_features``), named with the offset: ``-1:word.lower=the``;
    - the values of the other columns and their prefixes within their own
      window (``columns``): ``col1=NC``, ``col1[:2]=NC``, ``+1:col1=VMI``;
    - with ``boundary``, ``-2:BOS`` and ``+2:EOS`` style markers for context
      offsets beyond 1 that fall outside the sequence, where they tell its
      tokens apart (not ``-k:BOS`` in a sequence of ``k`` tokens or fewer,
      where every token would have it);
    - the features ``custom(token)`` returns.

    With the defaults and ``(word, POS)`` tokens this is the feature set of the
    sklearn-crfsuite tutorial. Features are computed once per distinct word or
    column value and gathered for all tokens by a compiled kernel, so
    featurizing costs a small fraction of what building per-token dicts in
    Python does (esp.train: about 0.15 s against 1.5 s).

    The output is a :class:`SequenceMatrix` whose ``feature_names`` name its
    columns, sorted by name; those columns are local to each call, so put a
    :class:`SequenceVectorizer` after this step to map them to a fixed
    vocabulary learned in ``fit``. Its values are all 1 unless ``custom``
    says otherwise. For up to a few thousand plain tokens (a sentence, a
    server's batch) the output is built when first read: a fitted
    :class:`SequenceVectorizer` given it unread reads the tokens' columns
    straight from its vocabulary, with no feature name built, which is
    what makes tagging one sentence through a pipeline fast.

    Parameters
    ----------
    window : int, default=1
        Context size: ``context_features`` of the words at offsets ``-window``
        to ``window``, and the default window of the other columns. At most
        100.
    word_features : tuple of str, default=("lower", "suffix", "isupper", \
"istitle", "isdigit")
        Features of a token's own word, any of ``"word"`` (as is), ``"lower"``,
        ``"prefix"``, ``"suffix"``, ``"shape"`` (upper case letters become
        ``X``, other letters ``x``, digits ``d``, runs shrink to one:
        ``McDonald's`` gives ``XxXx'x``, ``1990s`` gives ``dx``), ``"isupper"``,
        ``"islower"``, ``"istitle"``, ``"isdigit"``, ``"isalpha"`` (the ``str``
        methods), ``"hasdigit"`` and ``"hyphen"``.
        Flags are emitted only when true.
    context_features : tuple of str, default=("lower", "isupper", "istitle")
        The same choices, for the words at the context offsets.
    prefixes : tuple of int, default=(2, 3)
        Lengths of the ``"prefix"`` features.
    suffixes : tuple of int, default=(2, 3)
        Lengths of the ``"suffix"`` features.
    word_column : int, default=0
        Which column of a tuple token holds the word.
    columns : "auto", dict of int to int, or None, default="auto"
        The other token columns to use, each with its window: ``{1: 1}`` uses
        column 1 (POS) at offsets -1, 0 and 1. ``"auto"`` uses every column
        but the word with ``window``; None uses none.
    column_prefixes : tuple of int, default=(2,)
        Lengths of the prefixes of the other columns' values also emitted
        (``col1[:2]``: coarse POS tags).
    column_names : tuple of str, default=None
        Names of the token columns in feature names. None names the word column
        ``"word"`` and column ``i`` ``"col{i}"``.
    bias : bool, default=True
        Emit the constant feature ``bias``, giving each label a bias weight.
    boundary : bool, default=True
        Emit ``BOS`` on the first token, ``EOS`` on the last, and the markers
        of context offsets beyond the sequence.
    head_column : int, default=None
        For tokens that carry their head (a dependency tree, as
        :func:`skcrf.datasets.load_conllu` returns them): the column holding
        the int index of the token's parent within its sentence, -1 for a
        root. The output then carries the trees (``parents``, which
        :class:`TreeCRF` needs), and each token gets the ``head_features``.
    head_features : tuple of str, default=("lower", "columns", "link")
        With ``head_column``, features of each token's head, named
        ``head:...``: any word feature of ``word_features`` (of the head's
        word: ``head:word.lower=dogs``), ``"columns"`` (the head's values of
        the columns in use: ``head:col1=NOUN``) and ``"link"`` (the head's
        side, ``head:dir=left|right``, and the link's length,
        ``head:dist=1|2|3-4|5-8|9+``). A root gets ``head:ROOT`` instead.
    custom : callable, default=None
        ``custom(token)`` returns a dict of extra features of that token (value
        and key rules as in :class:`SequenceVectorizer`: a key that is not a
        str stands for ``str(key)``, which must differ from the built-in
        keys). It is called once per distinct token, so it must depend on the
        token only. Tokens made of lists are passed as tuples.
    segment_features : bool, list of str or callable, default=False
        Also emit features of candidate segments, for :class:`SemiMarkovCRF`
        (which scores a segment by them; other estimators ignore them): every
        run of up to ``max_segment_length`` tokens within a sequence gets
        features of the whole run, carried by the output's
        :attr:`~SequenceMatrix.segments`. True emits every built-in kind
        (``"gazetteer"`` when a gazetteer is given): ``"words"`` (its words
        lowercased and joined, ``words=nueva york``), ``"shape"`` (its words'
        shapes joined, ``shape=Xx Xx``), ``"columns"`` (the values of the
        other token columns in use joined, named as their token features:
        ``col1=DT JJ NN``, a segment's POS pattern), ``"length"`` (``length=2``),
        ``"first"`` and ``"last"`` (its first and last word, lowercased),
        ``"before"`` and ``"after"`` (the words just outside it, or ``BOS`` /
        ``EOS`` at the sequence's edges) and ``"gazetteer"`` (its matches of
        ``gazetteer``: ``gaz=LOC``, ``gaz.lower=LOC``, ``gaz~=LOC``); a list
        emits the kinds it names; a callable ``f(tokens, start, stop)``
        returns a dict of features (value rules as for ``custom``) of the
        segment ``tokens[start:stop]`` of the sequence ``tokens``, called once
        per candidate segment.
    max_segment_length : int, default=6
        Longest candidate segment that gets segment features. Longer
        segments may still be labelled by a :class:`SemiMarkovCRF` (scored
        by their tokens, length and boundaries), without segment features.
    gazetteer : dict or path, default=None
        Phrases with their types: a mapping from a phrase (words separated
        by spaces) to a type or a list of types (``{"Nueva York": "LOC"}``),
        or the path of a UTF-8 file of ``phrase<TAB>type`` lines (a phrase
        may have several lines). Matched on whole runs of tokens, exactly,
        case-folded, and fuzzily (each word equal once case-folded and
        stripped of accents, or one edit away for words of 4 characters or
        more, as the soft dictionary matches of Sarawagi and Cohen), a match
        gives each token BIO-style features (``gaz:B-LOC`` on its first
        token, ``gaz:I-LOC`` on the others; ``gaz.lower:`` and ``gaz~:`` for
        the weaker kinds), and with ``segment_features`` the matching
        segment the features of the ``"gazetteer"`` kind. Every kind that
        holds is emitted: an exact match is also a case-folded and a fuzzy
        one. A file is read by :meth:`fit` (and :meth:`fit_transform`),
        which keeps its entries in ``gazetteer_entries_``: a fitted
        featurizer, and a model file that holds one, uses those and never
        opens the path again. An unfitted featurizer reads the file on
        :meth:`transform`, again whenever the file changed.
    template : str or path-like, default=None
        A CRF++ feature template (its text, or the path of a UTF-8 file), which
        then makes all the features, instead of the parameters above: each
        ``U`` line (``U01:%x[-1,0]/%x[0,0]``) gives every token one feature,
        the line with each ``%x[row,col]`` macro replaced by column ``col``
        of the token ``row`` places away (``_B-1``, ``_B-2``, ... before the
        sequence, ``_B+1``, ... after it), valued 1 and named by that text
        (``U01:the/cat``); ``#`` lines are comments. A bare ``B`` line is the
        label-to-label transitions, which every chain has; a ``B`` line with
        macros makes the features of its text likewise (``B01:cat``), which
        :class:`CRFClassifier` turns into observation-conditioned
        transitions with ``transition_features=["B"]`` (they then weigh the
        labels too, where CRF++'s weigh the transitions only). Token columns
        are the tuple's (a str token is column 0). Only CRF++'s ``%x``
        macros are read; ``custom``, ``head_column``, ``segment_features``
        and ``gazetteer`` cannot be combined with it. See
        :ref:`crfpp-templates`.

    Attributes
    ----------
    n_columns_ : int
        Set by ``fit`` (and ``fit_transform``) on tokens: how many columns
        each token had (1 for bare words). ``transform`` then refuses tokens
        of another width, which would otherwise be featurized silently and
        tag worse (bare words for a model trained on ``(word, POS)``).
    gazetteer_entries_ : dict of str to tuple of str
        The entries of the gazetteer file, phrase to types, as :meth:`fit`
        read them. Only when ``gazetteer`` is a path.

    See Also
    --------
    SequenceVectorizer : Maps these features to fixed columns; put it next.
    skcrf.datasets.load_conll : Reads tokens in this form from CoNLL files.

    Examples
    --------
    >>> from skcrf import TokenFeaturizer
    >>> X = [[("The", "DT"), ("cat", "NN")]]
    >>> featurizer = TokenFeaturizer(word_features=("lower",),
    ...                              context_features=(), column_prefixes=())
    >>> featurizer.transform_dicts(X)[0][0]
    {'bias': 1.0, 'BOS': True, 'word.lower': 'the', 'col1': 'DT', '+1:col1': 'NN'}
    >>> Xt = featurizer.fit_transform(X)
    >>> Xt
    SequenceMatrix(n_sequences=1, n_tokens=2, n_features=9, nnz=10)
    >>> sorted(Xt.feature_names[Xt[0][0].indices])
    ['+1:col1=NN', 'BOS', 'bias', 'col1=DT', 'word.lower=the']

    In a pipeline, with the vocabulary learned by :class:`SequenceVectorizer`:

    >>> from sklearn.pipeline import make_pipeline
    >>> from skcrf import CRFClassifier, SequenceVectorizer
    >>> pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
    ...                      CRFClassifier(alpha=0.1))
    >>> y = [["DET", "NOUN"]]
    >>> [labels.tolist() for labels in pipe.fit(X, y).predict(X)]
    [['DET', 'NOUN']]
    """

    _parameter_constraints = {
        "window": [Interval(Integral, 0, None, closed="left")],
        "word_features": [tuple, list],
        "context_features": [tuple, list],
        "prefixes": [tuple, list],
        "suffixes": [tuple, list],
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "columns": [StrOptions({"auto"}), dict, None],
        "column_prefixes": [tuple, list],
        "column_names": [tuple, list, None],
        "bias": ["boolean"],
        "boundary": ["boolean"],
        "head_column": [Interval(Integral, 0, None, closed="left"), None],
        "head_features": [tuple, list],
        "custom": [callable, None],
        "segment_features": ["boolean", list, tuple, callable],
        "max_segment_length": [Interval(Integral, 1, None, closed="left")],
        "gazetteer": [None, Mapping, str, os.PathLike],
        "template": [None, str, os.PathLike],
    }

    # it learns nothing: its parameters are its whole state
    _fitted_state = FittedState(
        # the entries of a gazetteer file, read at fit: a model file carries them, and
        # loading one never opens the path it names
        {"n_columns_": IfPresent(Integer(1)),
         "gazetteer_entries_": IfPresent(_GazetteerEntries())},
        check_params=lambda featurizer: featurizer._check_params(read_files=False))

    def __init__(self, *, window=1,
                 word_features=("lower", "suffix", "isupper", "istitle", "isdigit"),
                 context_features=("lower", "isupper", "istitle"), prefixes=(2, 3),
                 suffixes=(2, 3), word_column=0, columns="auto", column_prefixes=(2,),
                 column_names=None, bias=True, boundary=True, head_column=None,
                 head_features=("lower", "columns", "link"), custom=None,
                 segment_features=False, max_segment_length=6, gazetteer=None,
                 template=None):
        self.window = window
        self.word_features = word_features
        self.context_features = context_features
        self.prefixes = prefixes
        self.suffixes = suffixes
        self.word_column = word_column
        self.columns = columns
        self.column_prefixes = column_prefixes
        self.column_names = column_names
        self.bias = bias
        self.boundary = boundary
        self.head_column = head_column
        self.head_features = head_features
        self.custom = custom
        self.segment_features = segment_features
        self.max_segment_length = max_segment_length
        self.gazetteer = gazetteer
        self.template = template

    def fit(self, X: TokenSequences,
            y: Optional[LabelSequences] = None) -> TokenFeaturizer:
        """Check the parameters and read a gazetteer file; nothing is learned from data.

        Parameters
        ----------
        X : list of sequences of tokens
            Only the width of its tokens is kept (``n_columns_``).
        y : None
            Ignored.

        Returns
        -------
        self : TokenFeaturizer
            The featurizer.
        """
        self._check_params()
        n_columns = _token_width(X)
        if n_columns is not None:
            self.n_columns_ = n_columns
        entries = fitted_gazetteer_entries(self)
        if entries is not None:
            self.gazetteer_entries_ = entries
        else:
            vars(self).pop("gazetteer_entries_", None)
        return self

    def _check_width(self, X):
        """Raise if ``X``'s tokens have another number of columns than at ``fit``."""
        expected = vars(self).get("n_columns_")
        given = None if expected is None else _token_width(X)
        if given is not None and given != expected:
            def said(n):
                return "bare words (1 column)" if n == 1 else f"tuples of {n} columns"
            raise ValueError(
                f"X's tokens are {said(given)}, but this TokenFeaturizer was fitted on "
                f"{said(expected)} (e.g. (word, POS)): give the tokens the columns they had "
                f"in training, in the same order.")

    def transform(self, X: TokenSequences) -> SequenceMatrix:
        """Features of every token of every sequence, as one sparse matrix.

        Parameters
        ----------
        X : list of sequences of tokens
            A token is a str (the word) or a tuple of str columns, the same
            form for every token.

        Returns
        -------
        Xt : SequenceMatrix
            One row per token; ``feature_names`` names the columns, which are
            the features present in ``X`` (a vocabulary local to this call).
        """
        plan = self._checked_plan
        if self.template is not None:
            return template_features(self.template, X)
        X = check_sequences(X, tokens="str tokens or tuples of str", matrix_ok=False)
        self._check_width(X)
        if (self.head_column is None and not isinstance(X, SequenceMatrix)
                and not adds_features(self)):
            # a sentence or a few: the same output without the general path's
            # numpy calls, whose fixed cost is most of one sentence's time
            small = transform_small(plan, X)
            if small is not None:
                return small
        # a Ctrl-C while a kernel runs comes out as KeyboardInterrupt, not as the
        # SystemError numba wraps it in
        with kernel_exceptions():
            tokens = _Tokens(X, self.head_column)
            if tokens.n_tokens == 0:
                features = SequenceMatrix(sp.csr_matrix((0, 0)), tokens.offsets, [],
                                          parents=tokens.parents)
            else:
                features = _featurize(plan(tokens.n_columns), tokens)
            if adds_features(self):
                # segment features and the gazetteer's token features (see _segments.py)
                features = with_segment_features(self, tokens, features)
        return features

    def fit_transform(self, X: TokenSequences,
                      y: Optional[LabelSequences] = None) -> SequenceMatrix:
        """Fit (check the parameters, read a gazetteer file) and return the features of ``X``.

        Parameters
        ----------
        X : list of sequences of tokens
            See :meth:`transform`.
        y : None
            Ignored.

        Returns
        -------
        Xt : SequenceMatrix
            See :meth:`transform`.
        """
        X = check_sequences(X, tokens="str tokens or tuples of str", matrix_ok=False)
        return self.fit(X).transform(X)

    def transform_dicts(self, X: TokenSequences) -> list[list[dict[str, Any]]]:
        """The features of :meth:`transform` as per-token dicts, for inspection.

        ``SequenceVectorizer().fit_transform(featurizer.transform_dicts(X))``
        equals ``SequenceVectorizer().fit_transform(featurizer.transform(X))``.
        This builds one dict per token in Python: use it to look at features,
        not to train.

        Parameters
        ----------
        X : list of sequences of tokens
            See :meth:`transform`.

        Returns
        -------
        dicts : list of list of dict
            One dict per token: str values are one-hot features, True flags
            and the bias (1.0) real-valued ones.
        """
        plan = self._checked_plan
        if self.template is not None:
            return template_dicts(self.template, X)
        with kernel_exceptions():  # the trees' check is a kernel
            tokens = _Tokens(X, self.head_column)
        if tokens.n_tokens == 0:
            return [[] for _ in range(len(tokens.offsets) - 1)]
        plan = plan(tokens.n_columns)
        columns = [tokens.column(c) for c in range(tokens.n_columns)]
        offsets = tokens.offsets.tolist()
        dicts = [[_token_dict(plan, tokens.tokens, columns, sequence, start, stop, position,
                              tokens.parents)
                  for position in range(stop - start)]
                 for sequence, (start, stop) in enumerate(zip(offsets[:-1], offsets[1:]))]
        if self.gazetteer is not None:
            # the gazetteer's token features (segment features are not per token)
            flags = iter(gazetteer_token_dicts(self, tokens))
            for sequence in dicts:
                for token in sequence:
                    token.update(next(flags))
        return dicts

    @property
    def _checked_plan(self):
        """``n_columns -> _Plan`` of the current parameters, checked (raises if invalid)."""
        return checked_plan(self)

    def _check_params(self, read_files=True):
        self._validate_params()
        windows = [("window", self.window)] + (
            [(f"columns[{column!r}]", window) for column, window in self.columns.items()]
            if isinstance(self.columns, dict) else [])
        for name, window in windows:
            if isinstance(window, Integral) and window > MAX_WINDOW:
                raise ValueError(
                    f"TokenFeaturizer({name}={window}): a window of more than {MAX_WINDOW} "
                    f"tokens on either side is refused; each token gets the features of "
                    f"every neighbour in it, so memory grows with the window times the "
                    f"tokens (a CRF gains little beyond a few tokens).")
        for name in ("word_features", "context_features"):
            features = getattr(self, name)
            unknown = [f for f in features if f not in _WORD_FEATURES]
            if unknown:
                raise ValueError(
                    f"{name} holds unknown feature(s) {unknown}; choose from "
                    f"{list(_WORD_FEATURES)}.")
            if len(set(features)) != len(features):
                raise ValueError(f"{name} names a feature twice: {features!r}.")
        for name in ("prefixes", "suffixes", "column_prefixes"):
            lengths = getattr(self, name)
            if (not all(isinstance(k, Integral) and not isinstance(k, bool) and k >= 1
                        for k in lengths) or len(set(lengths)) != len(lengths)):
                raise ValueError(
                    f"{name} must hold distinct positive ints; got {lengths!r}.")
        if isinstance(self.columns, dict):
            for column, window in self.columns.items():
                if not (isinstance(column, Integral) and column >= 0
                        and isinstance(window, Integral) and window >= 0):
                    raise ValueError(
                        f"columns maps column indices to windows, both ints >= 0; got "
                        f"{column!r}: {window!r}.")
                if column == self.word_column:
                    raise ValueError(
                        f"columns holds the word column {column}; its features are "
                        f"set by word_features and context_features.")
        unknown = [h for h in self.head_features
                   if h not in _WORD_FEATURES and h not in ("columns", "link")]
        if unknown:
            raise ValueError(
                f"head_features holds unknown feature(s) {unknown}; choose from "
                f"{list(_WORD_FEATURES) + ['columns', 'link']}.")
        if self.head_column is not None and self.head_column == self.word_column:
            raise ValueError(
                f"head_column and word_column are both {self.word_column}; the head "
                f"column holds parent indices, not words.")
        if self.column_names is not None and (
                not all(isinstance(name, str) for name in self.column_names)
                or len(set(self.column_names)) != len(self.column_names)):
            raise ValueError(
                f"column_names must be distinct str; got {self.column_names!r}.")
        check_segment_params(self, read_files=read_files)
        if self.template is not None:
            template_lines(self.template)  # raises if malformed
            combined = [name for name, default in (
                ("custom", None), ("head_column", None), ("segment_features", False),
                ("gazetteer", None)) if getattr(self, name) is not default]
            if combined:
                raise ValueError(f"template makes all the features; {combined[0]} cannot "
                                 f"be combined with it.")

    def __sklearn_tags__(self):
        tags = sequence_tags(super().__sklearn_tags__(), "string")
        tags.requires_fit = False
        tags.transformer_tags.preserves_dtype = []
        return tags


def _token_width(X):
    """The number of columns of ``X``'s first token (1 for a str), None without tokens."""
    if X is None or isinstance(X, SequenceMatrix) or not hasattr(X, "__len__"):
        return None  # an iterator: not read twice
    for sequence in X:
        for token in sequence:
            return 1 if isinstance(token, str) else len(token) if isinstance(
                token, (tuple, list)) else None
    return None
