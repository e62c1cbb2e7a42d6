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

import os
from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._dict_arrays import FeatureValueError, _vectorize
from ._numbering import factorize
from ._words import word_shape
from .gazetteer import (FEATURE_PREFIXES, MATCH_KINDS, Gazetteer, read_entries,
                        token_features)

#: The built-in kinds of segment features, and what ``segment_features=True`` takes.
SEGMENT_KINDS = ("words", "shape", "columns", "length", "first", "last", "before", "after",
                 "gazetteer")

#: Gazetteers already built, most recent last: of a file by its path and state on
#: disk (a changed file is read again), of a fitted featurizer's entries by
#: identity (the cache holds the entries, so their id is not reused), of a
#: mapping by its repr.
_GAZETTEERS = {}
_REMEMBERED = 4


def check_segment_params(featurizer, read_files=True):
    """Raise if ``segment_features``, ``max_segment_length`` or ``gazetteer`` is invalid.

    With ``read_files=False`` (a model file being loaded) a gazetteer path is
    not opened: the model must carry the entries it was fitted with
    (``gazetteer_entries_``), which are checked instead.
    """
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
        if read_files or not is_gazetteer_path(featurizer.gazetteer):
            gazetteer_of(featurizer)
        elif "gazetteer_entries_" not in vars(featurizer):
            raise ValueError(
                f"gazetteer names the file {os.fspath(featurizer.gazetteer)!r}, but the model "
                f"carries no gazetteer_entries_; a model file is never allowed to make skcrf "
                f"open a file it names. Fit the featurizer before saving it, so that it "
                f"carries the entries.")


def is_gazetteer_path(spec):
    """Whether a ``gazetteer`` parameter is a file's path (not a mapping)."""
    return isinstance(spec, (str, os.PathLike))


def check_gazetteer_entries(entries, label="gazetteer_entries_"):
    """Raise a ValueError naming the entry unless ``entries`` maps phrases to tuples of types."""
    if type(entries) is not dict:
        raise ValueError(f"{label} is a {type(entries).__name__}; expected a dict")
    for phrase, types in entries.items():
        if type(types) is not tuple:
            raise ValueError(f"{label}[{phrase!r}] is a {type(types).__name__}; expected a "
                             f"tuple of str")
    Gazetteer.of(entries, name=label)


def fitted_gazetteer_entries(featurizer):
    """The entries of ``featurizer.gazetteer`` read now, to carry as ``gazetteer_entries_``.

    None unless the gazetteer is a file: a mapping is a parameter, saved as
    such. The file is read on every fit, never from a cache.
    """
    spec = featurizer.gazetteer
    if not is_gazetteer_path(spec):
        return None
    return read_entries(spec, "gazetteer")


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
    """The :class:`Gazetteer` of a featurizer: its fitted entries, else its parameter.

    A fitted featurizer whose gazetteer is a file uses the entries it read
    at fit (``gazetteer_entries_``), as a loaded model does: the file is not
    read again, whatever became of it. An unfitted one reads the file, again
    whenever its size or modification time changed.
    """
    spec = featurizer.gazetteer
    entries = vars(featurizer).get("gazetteer_entries_")
    if entries is not None and is_gazetteer_path(spec):
        key, build = ("entries", id(entries)), lambda: Gazetteer.of(entries)
    elif is_gazetteer_path(spec):
        try:
            stat = os.stat(spec)
            key = ("file", os.fspath(spec), stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except OSError:  # let reading it raise the message that names the file
            key = None
        build = lambda: Gazetteer.of(spec)  # noqa: E731
    else:
        key, build = (type(spec), repr(spec)), lambda: Gazetteer.of(spec)
    found = _GAZETTEERS.get(key) if key is not None else None
    if found is None:
        found = (entries, build())
        if key is not None:
            if len(_GAZETTEERS) >= _REMEMBERED:
                _GAZETTEERS.pop(next(iter(_GAZETTEERS)))
            _GAZETTEERS[key] = found
    return found[1]


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
    word_ids, words = tokens.column_codes(featurizer.word_column)
    lower_of_word, lowers = factorize([word.lower() for word in words])
    lower_ids = lower_of_word[word_ids] if n_tokens else np.zeros(0, dtype=np.int64)
    room = np.repeat(offsets[1:], np.diff(offsets)) - np.arange(n_tokens)
    # the candidates, in the order of their rows: by first token, then length
    starts, lengths = _candidates(room, L)
    kinds = segment_kinds(featurizer)
    single = []  # (column of each candidate or -1, names) of the kinds of one feature each
    if "words" in kinds:
        single.append(_ngrams(lower_ids, lowers, starts, lengths, "words="))
    if "shape" in kinds:
        shape_of_word, shapes = factorize([word_shape(word) for word in words])
        shape_ids = shape_of_word[word_ids] if n_tokens else np.zeros(0, dtype=np.int64)
        single.append(_ngrams(shape_ids, shapes, starts, lengths, "shape="))
    if "columns" in kinds:
        # the values of the other token columns joined: a segment's POS pattern
        for column, name in _other_columns(featurizer, tokens.n_columns):
            ids, values = tokens.column_codes(column)
            single.append(_ngrams(ids, values, starts, lengths, f"{name}="))
    if "length" in kinds:
        single.append((lengths - 1, [f"length={d}" for d in range(1, L + 1)]))
    # a segment of one token is its own first and last word: "words" says it
    longer = lengths > 1 if "words" in kinds else np.ones(starts.shape[0], dtype=bool)
    if "first" in kinds:
        single.append((np.where(longer, lower_ids[starts], -1), ["first=" + w for w in lowers]))
    if "last" in kinds:
        single.append((np.where(longer, lower_ids[starts + lengths - 1], -1),
                       ["last=" + w for w in lowers]))
    if "before" in kinds:
        opens = room[starts] == np.repeat(np.diff(offsets), np.diff(offsets))[starts]
        before = np.where(opens, len(lowers), lower_ids[np.maximum(starts - 1, 0)])
        single.append((before, ["before=" + w for w in lowers] + ["BOS"]))
    if "after" in kinds:
        closes = lengths == room[starts]
        stops = np.minimum(starts + lengths, max(n_tokens - 1, 0))
        single.append((np.where(closes, len(lowers), lower_ids[stops]),
                       ["after=" + w for w in lowers] + ["EOS"]))
    extra = []  # (candidate, column, names) of the kinds of several features each
    if "gazetteer" in kinds:
        gazetteer = gazetteer_of(featurizer)
        for kind in MATCH_KINDS:
            found = gazetteer.matches(words, word_ids, offsets, kind)
            short = found.lengths <= L
            # the candidate of (start, length): its row's rank among the candidate rows
            candidate = (np.cumsum(np.minimum(room, L)) - np.minimum(room, L))[
                found.starts[short]] + found.lengths[short] - 1
            prefix = FEATURE_PREFIXES[kind]
            extra.append((candidate, found.type_ids[short],
                          [f"{prefix}={t}" for t in gazetteer.types]))
    indices, candidate_ptr, names = _candidate_entries(single, extra, starts.shape[0])
    # spread the candidates' entries over all rows (empty past a sequence's end)
    counts = np.zeros(n_tokens * L, dtype=np.int64)
    counts[starts * L + lengths - 1] = np.diff(candidate_ptr)
    indptr = np.zeros(n_tokens * L + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    segment_offsets = offsets * L
    custom = featurizer.segment_features
    if callable(custom) and not isinstance(custom, bool):
        built_in = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr),
                                 shape=(n_tokens * L, len(names)))
        custom_matrix, custom_names = _custom_segment_features(
            custom, tokens, starts, lengths, starts * L + lengths - 1, n_tokens * L)
        # sorted and merged by name: a callable's feature named like a built-in one
        # adds to its column
        return SequenceVectorizer().fit_transform(SequenceMatrix(
            sp.hstack([built_in, custom_matrix], format="csr"), segment_offsets,
            names + custom_names))
    return SequenceMatrix._from_arrays(None, indices, indptr, len(names), segment_offsets,
                                       names)


def _other_columns(featurizer, n_columns):
    """(column, name) of the token columns other than the word (and head) the featurizer uses.

    Those of its ``columns`` parameter, named as in its token features.
    """
    f = featurizer
    if f.columns == "auto":
        columns = [c for c in range(n_columns) if c not in (f.word_column, f.head_column)]
    else:
        columns = sorted(f.columns or {})
    names = (list(f.column_names) if f.column_names is not None
             else [f"col{c}" for c in range(n_columns)])
    return [(c, names[c]) for c in columns if c < n_columns]


def _candidates(room, L):
    """(first token, length) of every candidate segment, by first token then length.

    ``room[t]`` is the number of tokens from t to its sequence's end.
    """
    counts = np.minimum(room, L)
    starts = np.repeat(np.arange(room.shape[0], dtype=np.int64), counts)
    lengths = np.arange(starts.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    return starts, lengths.astype(np.int64)


def _ngrams(ids, values, starts, lengths, prefix):
    """The n-gram of ``values`` (one id per token) of each candidate, joined by spaces.

    Numbered a length at a time: the n-gram of d tokens from t is the pair
    (n-gram of d - 1 tokens from t, value of token t + d - 1), numbered with
    ``np.unique``, so that each distinct n-gram's name is built once. Returns
    (column of each candidate, names).
    """
    columns = np.zeros(starts.shape[0], dtype=np.int64)
    names = []
    n_values = max(len(values), 1)
    previous_codes = None
    for d in range(1, int(lengths.max(initial=0)) + 1):
        here = np.flatnonzero(lengths == d)
        if d == 1:
            distinct, codes = np.unique(ids[starts[here]], return_inverse=True)
            level_names = [values[w] for w in distinct.tolist()]
        else:
            # the candidates of length d - 1 from the same tokens come just before
            pairs = previous_codes[here - 1] * n_values + ids[starts[here] + d - 1]
            distinct, codes = np.unique(pairs, return_inverse=True)
            before, last = np.divmod(distinct, n_values)
            level_names = [level_names[p] + " " + values[w]
                           for p, w in zip(before.tolist(), last.tolist())]
        codes = codes.reshape(-1)
        columns[here] = len(names) + codes
        names += [prefix + name for name in level_names]
        previous_codes = np.zeros(starts.shape[0], dtype=np.int64)
        previous_codes[here] = codes
    return columns, names


def _candidate_entries(single, extra, n_candidates):
    """CSR arrays over the candidates of the kinds' features, and the names of their columns.

    ``single`` holds, per kind of one feature each, the column of each
    candidate (-1 for none) and the names; ``extra``, per kind of several,
    (candidate, column) entries and the names. Only the names some entry uses
    are kept; columns come in the order of the kinds, so each candidate's
    entries are sorted. Returns (int32 indices, int64 candidate pointers, names).
    """
    names = []
    table = np.full((n_candidates, len(single)), -1, dtype=np.int32)
    for k, (columns, kind_names) in enumerate(single):
        present = columns >= 0
        used, local = np.unique(columns[present], return_inverse=True)
        table[present, k] = len(names) + local.reshape(-1)
        names += [kind_names[j] for j in used.tolist()]
    extra_candidates, extra_columns = [np.zeros(0, dtype=np.int64)], [np.zeros(0, np.int64)]
    for candidates, columns, kind_names in extra:
        used, local = np.unique(columns, return_inverse=True)
        extra_candidates.append(candidates)
        extra_columns.append(len(names) + local.reshape(-1))
        names += [kind_names[j] for j in used.tolist()]
    extra_candidates = np.concatenate(extra_candidates)
    extra_columns = np.concatenate(extra_columns)
    order = np.lexsort((extra_columns, extra_candidates))
    extra_candidates, extra_columns = extra_candidates[order], extra_columns[order]
    present = table >= 0
    single_counts = present.sum(axis=1)
    extra_counts = np.bincount(extra_candidates, minlength=n_candidates)
    candidate_ptr = np.zeros(n_candidates + 1, dtype=np.int64)
    np.cumsum(single_counts + extra_counts, out=candidate_ptr[1:])
    indices = np.empty(candidate_ptr[-1], dtype=np.int32)
    if present.all():
        # every kind for every candidate: the table's rows are the entries
        at = (candidate_ptr[:-1, None] + np.arange(table.shape[1])).ravel()
        indices[at] = table.ravel()
    else:
        owner = np.repeat(np.arange(n_candidates), single_counts)
        rank = np.arange(owner.shape[0]) - np.repeat(np.cumsum(single_counts) - single_counts,
                                                      single_counts)
        indices[candidate_ptr[owner] + rank] = table[present]
    if extra_candidates.shape[0]:
        group = np.cumsum(extra_counts) - extra_counts
        rank = np.arange(extra_candidates.shape[0]) - group[extra_candidates]
        indices[candidate_ptr[extra_candidates] + single_counts[extra_candidates]
                + rank] = extra_columns
    return indices, candidate_ptr, names


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
