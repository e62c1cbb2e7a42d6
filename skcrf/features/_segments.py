"""Features of candidate segments, and a gazetteer's token features, for TokenFeaturizer.

A semi-Markov CRF scores whole segments, so features of a segment can look at
all its words at once (Sarawagi and Cohen 2004): its words joined, its shape
pattern, its length, its first and last word, the words just outside it, and
whether it is a gazetteer entry. :func:`segment_matrix` computes them for
every candidate segment of up to ``max_segment_length`` tokens: a
:class:`~skcrf.features.SequenceMatrix` whose sequence ``q`` has
``max_segment_length`` rows per token, row ``t * L + d - 1`` (``t`` counted
within the batch) holding the features of the segment of ``d`` tokens from
token ``t``, empty where that segment would cross the sequence's end. It
travels with the token features as :attr:`SequenceMatrix.segments`: sequences
split and taken together, a vectorizer maps its columns to a vocabulary of
their own. Its columns are in no particular order.

Each kind is computed once per distinct value (a word, a word's shape, an n-gram
of them numbered level by level with numpy), never by a Python loop over
segments, but for a user's callable, which is called once per candidate
segment.
"""

from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._dict_arrays import FeatureValueError, _vectorize
from ._numbering import factorize
from ._words import word_shape
from .gazetteer import FEATURE_PREFIXES, MATCH_KINDS, Gazetteer, token_features

#: The built-in kinds of segment features, and what ``segment_features=True`` takes.
SEGMENT_KINDS = ("words", "shape", "length", "first", "last", "before", "after", "gazetteer")

#: The gazetteer of each parameter value already read (by its repr), most recent last.
_GAZETTEERS = {}
_REMEMBERED = 4


def check_segment_params(featurizer):
    """Raise if ``segment_features``, ``max_segment_length`` or ``gazetteer`` is invalid."""
    chosen = featurizer.segment_features
    if not (isinstance(chosen, bool) or callable(chosen)):
        if not isinstance(chosen, (list, tuple)) or not chosen:
            raise ValueError(
                f"segment_features must be a bool, a non-empty list of the built-in kinds "
                f"{list(SEGMENT_KINDS)} or a callable (tokens, start, stop) -> dict; got "
                f"{chosen!r}.")
        unknown = [kind for kind in chosen if kind not in SEGMENT_KINDS]
        if unknown:
            raise ValueError(f"segment_features holds unknown kind(s) {unknown}; choose from "
                             f"{list(SEGMENT_KINDS)}.")
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"segment_features names a kind twice: {chosen!r}.")
        if "gazetteer" in chosen and featurizer.gazetteer is None:
            raise ValueError("segment_features asks for 'gazetteer' matches, but no "
                             "gazetteer= is given.")
    length = featurizer.max_segment_length
    if isinstance(length, bool) or not isinstance(length, Integral) or length < 1:
        raise ValueError(f"max_segment_length must be an int >= 1; got {length!r}.")
    if featurizer.gazetteer is not None:
        gazetteer_of(featurizer)


def segment_kinds(featurizer):
    """The built-in kinds of segment features a featurizer emits (empty for none)."""
    chosen = featurizer.segment_features
    if chosen is True:
        return tuple(kind for kind in SEGMENT_KINDS
                     if kind != "gazetteer" or featurizer.gazetteer is not None)
    if chosen is False or callable(chosen):
        return ()
    return tuple(chosen)


def adds_features(featurizer):
    """Whether a featurizer emits segment features or a gazetteer's token features."""
    return bool(featurizer.segment_features) or featurizer.gazetteer is not None


def gazetteer_of(featurizer):
    """The :class:`Gazetteer` of ``featurizer.gazetteer``, read once per distinct value."""
    spec = featurizer.gazetteer
    key = (type(spec), repr(spec))
    found = _GAZETTEERS.get(key)
    if found is None:
        found = Gazetteer.of(spec)
        if len(_GAZETTEERS) >= _REMEMBERED:
            _GAZETTEERS.pop(next(iter(_GAZETTEERS)))
        _GAZETTEERS[key] = found
    return found


def with_segment_features(featurizer, tokens, features):
    """The featurizer's output ``features`` with the gazetteer's token columns and the segments.

    The gazetteer's BIO token columns are merged in by name, as the
    featurizer's ``custom`` columns are (columns sorted by name); the
    features of candidate segments become ``features.segments``.
    """
    from .sequence_matrix import SequenceMatrix
    from .vectorizer import SequenceVectorizer

    if featurizer.gazetteer is not None and tokens.n_tokens:
        word_ids, words = tokens.column_codes(featurizer.word_column)
        rows, columns, names = token_features(gazetteer_of(featurizer), words, word_ids,
                                              tokens.offsets)
        if names:
            n_columns = len(names)
            codes = np.unique(rows * n_columns + columns)  # overlapping matches: one entry
            extra = sp.csr_matrix(
                (np.ones(codes.shape[0]), (codes // n_columns, codes % n_columns)),
                shape=(tokens.n_tokens, n_columns))
            features = SequenceVectorizer().fit_transform(SequenceMatrix(
                sp.hstack([features.matrix, extra], format="csr"), tokens.offsets,
                list(features.feature_names) + names, parents=features.parents))
    if featurizer.segment_features:
        features.segments = segment_matrix(featurizer, tokens)
    return features


def gazetteer_token_dicts(featurizer, tokens):
    """Per token, the gazetteer's BIO flags ``{"gaz:B-LOC": True, ...}`` (for transform_dicts)."""
    word_ids, words = tokens.column_codes(featurizer.word_column)
    rows, columns, names = token_features(gazetteer_of(featurizer), words, word_ids,
                                          tokens.offsets)
    flags = [{} for _ in range(tokens.n_tokens)]
    for row, column in zip(rows.tolist(), columns.tolist()):
        flags[row][names[column]] = True
    return flags


def segment_matrix(featurizer, tokens):
    """The SequenceMatrix of the features of every candidate segment (see the module docstring).

    Parameters
    ----------
    featurizer : TokenFeaturizer
    tokens : _Tokens
        The checked tokens of the batch.
    """
    from .sequence_matrix import SequenceMatrix
    from .vectorizer import SequenceVectorizer

    L = int(featurizer.max_segment_length)
    offsets = tokens.offsets
    n_tokens = tokens.n_tokens
    n_rows = n_tokens * L
    word_ids, words = tokens.column_codes(featurizer.word_column)
    lower_of_word, lowers = factorize([word.lower() for word in words])
    lower_ids = lower_of_word[word_ids] if n_tokens else np.zeros(0, dtype=np.int64)
    room = np.repeat(offsets[1:], np.diff(offsets)) - np.arange(n_tokens)
    kinds = segment_kinds(featurizer)
    blocks = []  # (rows, columns, names) of each kind
    if "words" in kinds:
        blocks.append(_ngrams(lower_ids, lowers, room, L, "words="))
    if "shape" in kinds:
        shape_of_word, shapes = factorize([word_shape(word) for word in words])
        shape_ids = shape_of_word[word_ids] if n_tokens else np.zeros(0, dtype=np.int64)
        blocks.append(_ngrams(shape_ids, shapes, room, L, "shape="))
    starts, lengths = _candidates(room, L)
    rows = starts * L + lengths - 1
    if "length" in kinds:
        blocks.append(_compact(rows, lengths - 1, [f"length={d}" for d in range(1, L + 1)]))
    if "first" in kinds:
        blocks.append(_compact(rows, lower_ids[starts], ["first=" + w for w in lowers]))
    if "last" in kinds:
        blocks.append(_compact(rows, lower_ids[starts + lengths - 1],
                               ["last=" + w for w in lowers]))
    if "before" in kinds:
        opens = starts == np.repeat(offsets[:-1], np.diff(offsets))[starts]
        before = np.where(opens, len(lowers), lower_ids[np.maximum(starts - 1, 0)])
        blocks.append(_compact(rows, before, ["before=" + w for w in lowers] + ["BOS"]))
    if "after" in kinds:
        closes = lengths == room[starts]
        stops = np.minimum(starts + lengths, max(n_tokens - 1, 0))
        after = np.where(closes, len(lowers), lower_ids[stops])
        blocks.append(_compact(rows, after, ["after=" + w for w in lowers] + ["EOS"]))
    if "gazetteer" in kinds:
        gazetteer = gazetteer_of(featurizer)
        for kind in MATCH_KINDS:
            found = gazetteer.matches(words, word_ids, offsets, kind)
            short = found.lengths <= L
            prefix = FEATURE_PREFIXES[kind]
            blocks.append(_compact(found.starts[short] * L + found.lengths[short] - 1,
                                   found.type_ids[short],
                                   [f"{prefix}={t}" for t in gazetteer.types]))
    matrix, names = _stacked(blocks, n_rows)
    segment_offsets = offsets * L
    custom = featurizer.segment_features
    if callable(custom) and not isinstance(custom, bool):
        custom_matrix, custom_names = _custom_segment_features(custom, tokens, starts, lengths,
                                                               rows, n_rows)
        matrix = sp.hstack([matrix, custom_matrix], format="csr")
        # sorted and merged by name: a callable's feature named like a built-in one
        # adds to its column
        return SequenceVectorizer().fit_transform(
            SequenceMatrix(matrix, segment_offsets, names + custom_names))
    return SequenceMatrix._from_arrays(None, matrix.indices.astype(np.int32, copy=False),
                                       matrix.indptr.astype(np.int64, copy=False),
                                       len(names), segment_offsets, names)


def _candidates(room, L):
    """(first token, length) of every candidate segment, by first token then length.

    ``room[t]`` is the number of tokens from t to its sequence's end.
    """
    counts = np.minimum(room, L)
    starts = np.repeat(np.arange(room.shape[0], dtype=np.int64), counts)
    lengths = np.arange(starts.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    return starts, lengths.astype(np.int64)


def _ngrams(ids, values, room, L, prefix):
    """The n-grams of ``values`` (one id per token) of up to L tokens, joined by spaces.

    Numbered a length at a time: the n-gram of d tokens from t is the pair
    (n-gram of d - 1 tokens from t, value of token t + d - 1), numbered with
    ``np.unique``, so that each distinct n-gram's name is built once.
    """
    n_tokens = ids.shape[0]
    rows, columns, names = [], [], []
    codes = ids.copy()
    level_names = list(values)
    n_values = max(len(values), 1)
    for d in range(1, L + 1):
        fits = np.flatnonzero(room >= d)
        if not fits.size:
            break
        if d > 1:
            pairs = codes[fits] * n_values + ids[fits + d - 1]
            distinct, inverse = np.unique(pairs, return_inverse=True)
            previous, last = np.divmod(distinct, n_values)
            level_names = [level_names[p] + " " + values[w]
                           for p, w in zip(previous.tolist(), last.tolist())]
            codes = np.full(n_tokens, -1, dtype=np.int64)
            codes[fits] = inverse.reshape(-1)
        else:
            distinct_ids, inverse = np.unique(ids, return_inverse=True)
            level_names = [values[w] for w in distinct_ids.tolist()]
            codes = inverse.reshape(-1).astype(np.int64)
        rows.append(fits * L + d - 1)
        columns.append(len(names) + codes[fits])
        names += [prefix + name for name in level_names]
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    return np.concatenate(rows), np.concatenate(columns), names


def _compact(rows, columns, names):
    """``(rows, columns, names)`` keeping only the names some entry uses."""
    used, local = np.unique(columns, return_inverse=True)
    return rows, local.reshape(-1), [names[k] for k in used.tolist()]


def _stacked(blocks, n_rows):
    """One CSR matrix (n_rows, all names) of the kinds' entries, and its column names."""
    rows, columns, names = [], [], []
    for block_rows, block_columns, block_names in blocks:
        rows.append(block_rows)
        columns.append(block_columns + len(names))
        names += block_names
    if not rows:
        return sp.csr_matrix((n_rows, 0)), []
    rows = np.concatenate(rows)
    columns = np.concatenate(columns)
    matrix = sp.csr_matrix((np.ones(rows.shape[0]), (rows, columns)),
                           shape=(n_rows, len(names)))
    matrix.sum_duplicates()  # sorts the rows' columns; each kind has one entry per cell
    return matrix, names


def _custom_segment_features(function, tokens, starts, lengths, rows, n_rows):
    """Features of ``function(sequence_tokens, start, stop)`` for every candidate segment."""
    owner = np.searchsorted(tokens.offsets, starts, side="right") - 1
    sequence_starts = tokens.offsets[owner]
    sequences = [tokens.tokens[lo:hi]
                 for lo, hi in zip(tokens.offsets[:-1].tolist(), tokens.offsets[1:].tolist())]
    dicts = []
    for q, a, d in zip(owner.tolist(), (starts - sequence_starts).tolist(), lengths.tolist()):
        features = function(sequences[q], a, a + d)
        if not isinstance(features, Mapping):
            raise TypeError(
                f"segment_features({a}:{a + d} of sequence {q}) returned a "
                f"{type(features).__name__}; it must return a dict of features.")
        dicts.append(features)
    vocabulary = {}
    try:
        data, indices, indptr, _ = _vectorize([dicts], vocabulary, True, "=")
    except FeatureValueError as error:
        k = error.token
        a = int(starts[k] - sequence_starts[k])
        raise TypeError(
            f"segment_features(tokens, {a}, {a + int(lengths[k])}) of sequence "
            f"{int(owner[k])}, feature {error.key!r}: {error.why} (got "
            f"{type(error.value).__name__} {error.value!r:.60}). Feature values must be "
            f"str, a real number, a bool, or a list/tuple/set of str.") from None
    table = sp.csr_matrix((data, indices, indptr), shape=(len(dicts), len(vocabulary)))
    # spread the candidates' rows over the segment rows
    expanded = sp.csr_matrix((np.ones(rows.shape[0]), (rows, np.arange(rows.shape[0]))),
                             shape=(n_rows, rows.shape[0]))
    return (expanded @ table).tocsr(), list(vocabulary)
