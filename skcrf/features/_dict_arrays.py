"""Feature dicts to CSR arrays: the loops behind SequenceVectorizer.

Each sequence's tokens are dicts of feature name to value; these routines
turn them into (data, indices, indptr) arrays against a vocabulary, growing it
when fitting, chunk by chunk so that the Python objects of a large corpus are
freed as they go.
"""

import ctypes
import gc
import numbers
import pickle
from array import array
from collections.abc import Mapping
from contextlib import contextmanager
from itertools import chain, islice, repeat

import numpy as np

from ._columns_by_key import vectorize_by_key
from ._dict_pairs import vectorize_pairs
from ._numbering import factorize
from .sequence_matrix import values_or_none

_ITERABLE_VALUES = (list, tuple, set, frozenset)

# The flat path works through the input in runs of about this many tokens:
# its temporaries take about 40 bytes per feature value, so small runs keep the
# memory peak low (esp.train: 37 MiB with 4096 tokens, 90 MiB with 32768) at
# the same speed (0.8-0.9 s either way).
_CHUNK_TOKENS = 1 << 12

# Inputs of at most this many feature values (a few sentences) take the small
# path: it costs more per value than the flat path but has a fraction of its
# fixed cost, most of a one-sentence prediction.
_SMALL_VALUES = 1 << 12

# np.iinfo is Python code: once here, not on every one-sentence transform
_INT32_MAX = int(np.iinfo(np.int32).max)

# The flat path numbers (key, value) pairs with a dense lookup table over all
# key ids x value ids when that table has at most this many entries more than
# twice the number of feature values; beyond it, it sorts the pair codes.
_MAX_EXTRA_TABLE_SIZE = 1 << 20


class FeatureValueError(TypeError):
    """A feature value breaks the value rules; it knows where it was found.

    ``sequence``, ``token`` and ``key`` locate the value, so a caller that
    vectorized something other than the user's own sequences (such as
    :class:`TokenFeaturizer` with the dicts of its ``custom`` callable) can
    re-raise the error at the user's position with :meth:`relocated`.
    """

    def __init__(self, sequence, token, key, value, why):
        self.sequence = sequence
        self.token = token
        self.key = key
        self.value = value
        self.why = why
        super().__init__(
            f"Sequence {sequence}, token {token}, feature {key!r}: {why} "
            f"(got {type(value).__name__} {value!r:.60}). Feature values must be str, "
            f"a real number, a bool, or a list/tuple/set of str.")

    def relocated(self, sequence, token):
        """The same error, reported at another sequence and token."""
        return FeatureValueError(sequence, token, self.key, self.value, self.why)

    def __reduce__(self):
        # pickle rebuilds an exception from its args, the message alone here: a worker
        # process (joblib, Dask) reporting the error would fail to rebuild it. The
        # value goes as it is if it pickles, else as its repr.
        try:
            value = pickle.loads(pickle.dumps(self.value))
        except Exception:  # noqa: BLE001 - any object may be a bad feature value
            value = repr(self.value)
        return (_rebuilt_feature_value_error,
                (str(self), self.sequence, self.token, self.key, value, self.why))


def _rebuilt_feature_value_error(message, sequence, token, key, value, why):
    """A FeatureValueError with the given message and fields, as it was pickled."""
    error = FeatureValueError.__new__(FeatureValueError)
    TypeError.__init__(error, message)
    error.sequence, error.token, error.key, error.value, error.why = (
        sequence, token, key, value, why)
    return error


def _vectorize(X, vocabulary, grow, separator):
    """CSR arrays of ``X`` over all tokens, and the sequence offsets.

    With ``grow`` true, unseen feature names are appended to ``vocabulary`` in
    order of first occurrence; otherwise they are dropped. Zero-valued numeric
    features register their name but store nothing, as an explicit zero would
    change nothing but the cost.

    Plain dicts of scalar values take the flat path (:func:`_vectorize_flat`,
    about 1.5x faster); anything else, errors included, goes through
    :func:`_vectorize_loop`, which defines the output.

    Returns
    -------
    data : ndarray of float64
    indices : ndarray of int64
    indptr : ndarray of int64 of shape (n_tokens + 1,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    """
    data, indices, indptr, offsets = _vectorize_compact(X, vocabulary, grow, separator)
    if data is None:
        data = np.ones(indices.shape[0])
    return data, indices.astype(np.int64), indptr, offsets


def _vectorize_compact(X, vocabulary, grow, separator, tables=None, vectors=None):
    """:func:`_vectorize` in the form that holds the least memory.

    ``data`` is None when every value is 1 (indicator features, the usual
    case) and ``indices`` are int32: 4 bytes per non-zero instead of 16.
    ``tables``, the :class:`~._columns_by_key.ColumnsByKey` of
    ``vocabulary`` if given, let each chunk try
    :func:`~._columns_by_key.vectorize_by_key` before the flat path; with
    ``grow`` the names are then found in no order of occurrence (for a caller
    that sorts them).

    ``vectors``, a :class:`~._vectors.VectorSink`, gathers numpy vector
    values key by key instead (see :func:`~._columns_by_key.vectorize_by_key`);
    then None is returned for any input that route does not take, for the
    caller to fall back on :func:`~._vectors.split_vectors`.
    """
    n_known = len(vocabulary)
    with _collector_paused():
        arrays = _vectorize_chunks(X, vocabulary, grow, separator, tables, vectors)
    if arrays is None and vectors is not None:
        return None
    if arrays is None:
        # forget the names a partial flat pass added, then start over
        for name in list(islice(vocabulary, n_known, None)):
            del vocabulary[name]
        data, indices, indptr, offsets = _vectorize_loop(X, vocabulary, grow, separator)
        arrays = (values_or_none(data), indices.astype(np.int32), indptr, offsets)
    if len(vocabulary) > _INT32_MAX:  # pragma: no cover (100+ GB of names)
        raise ValueError(f"{len(vocabulary)} feature names do not fit int32 indices.")
    return arrays


def _malloc_trim():
    """glibc's ``malloc_trim``, or None elsewhere."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


_MALLOC_TRIM = _malloc_trim()


def _release_freed_memory():
    """Give the heap pages freed by the vectorizer's temporaries back to the OS.

    Each chunk's temporaries are freed, but glibc keeps the heap pages they
    leave between live blocks: about 10 MiB on esp.train, a sixth of the
    memory a fit needs, that nothing else reuses. ``malloc_trim`` returns them
    (it is what Dask calls for the same reason); elsewhere this does nothing.
    """
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _vectorize_chunks(X, vocabulary, grow, separator, tables=None, vectors=None):
    """:func:`_vectorize_flat` over runs of about ``_CHUNK_TOKENS`` tokens.

    The flat path makes several passes over lists of every value; on chunks,
    those lists stay in cache (esp.train: 1.3 s instead of 2.4 s in one piece)
    and its temporaries stay small.
    Chunks run in order, so a growing vocabulary still numbers names in order
    of first occurrence (unless growing ``tables`` find them key by key). Each chunk is copied into arrays allocated once for
    all, with room for one entry per feature value (the flat path stores at
    most that), then trimmed in place: no concatenation holding every entry
    twice. The float values are kept only once one differs from 1. Returns
    None if a chunk needs the loop, in the form of :func:`_vectorize_compact`
    otherwise. ``tables`` is as in :func:`_vectorize_compact`.
    """
    lengths = np.fromiter(map(len, X), dtype=np.int64, count=len(X))
    offsets = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    try:
        capacity = sum(map(len, chain.from_iterable(X)))
    except TypeError:
        return None  # a token without len() is no dict: the loop names it
    if capacity <= _SMALL_VALUES:
        if vectors is not None:
            return None  # few tokens: split_vectors' copies cost nothing
        small = None if tables is None or tables.grow else vectorize_pairs(X, tables)
        if small is None:
            small = _vectorize_small(X, vocabulary, grow, separator,
                                     None if tables is None or tables.grow else tables)
        return None if small is None else (*small, offsets)
    ends = np.searchsorted(offsets[1:], np.arange(_CHUNK_TOKENS, offsets[-1], _CHUNK_TOKENS))
    bounds = np.unique(np.concatenate([[0], ends + 1, [len(X)]]).clip(0, len(X)))
    indices = np.empty(capacity, dtype=np.int32)
    data = None
    indptr = np.zeros(offsets[-1] + 1, dtype=np.int64)
    sequences = iter(X)
    nnz = 0
    for first, last in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        chunk = list(islice(sequences, last - first))
        if vectors is not None:
            vectors.row0 = int(offsets[first])
        if tables is None:
            part = None
        elif vectors is None:
            part = vectorize_by_key(chunk, tables)
        else:
            part = vectorize_by_key(chunk, tables, vectors)
        if part is None and vectors is not None:
            return None  # the flat path does not take vectors
        if part is None:
            part = _vectorize_flat(chunk, vocabulary, grow, separator)
        if part is None:
            return None
        part_data, part_indices, part_indptr, _ = part
        size = part_indices.shape[0]
        indices[nnz:nnz + size] = part_indices
        if data is None and not np.all(part_data == 1.0):
            data = np.empty(capacity)
            data[:nnz] = 1.0
        if data is not None:
            data[nnz:nnz + size] = part_data
        indptr[offsets[first] + 1:offsets[last] + 1] = part_indptr[1:] + nnz
        nnz += size
    return _trimmed(data, nnz), _trimmed(indices, nnz), indptr, offsets


def _vectorize_small(X, vocabulary, grow, separator, tables=None):
    """:func:`_vectorize_compact`'s arrays for a few tokens, or None.

    Plain dicts of str keys and values of exactly str, float, int or bool,
    one value at a time; anything else returns None, and the caller
    undoes the names added and leaves the input to the loop. On a few
    hundred values this beats :func:`_vectorize_flat`, whose fixed cost is
    dozens of numpy calls and whose several passes each find the values
    out of cache again. With ``tables``, the
    :class:`~._columns_by_key.ColumnsByKey` of a fixed vocabulary, a str
    value is looked up in its key's table, without building a name, if a
    larger input has built that table: building one reads all the key's
    names, more than a model's first sentence would (a model just loaded
    predicts it in the time it did before the tables).
    """
    get = vocabulary.get
    # key -> (key + separator, the key's built table or None), checked once per key
    heads = {}
    indices = []
    add_index = indices.append
    ends = []
    add_end = ends.append
    # (position, value) of the values that are not 1, usually none
    others = []
    for sequence in X:
        for token in sequence:
            if type(token) is not dict:
                return None
            for key, value in token.items():
                kind = type(value)
                if kind is str:
                    try:
                        head, table = heads[key]
                    except KeyError:
                        if type(key) is not str:
                            return None
                        head, table = heads[key] = (
                            key + separator, None if tables is None else tables.built(key))
                    if table is not None:
                        idx = table.get(value)
                        if idx is None:
                            continue
                    else:
                        idx = get(head + value)
                        if idx is None:
                            if not grow:
                                continue
                            idx = vocabulary[head + value] = len(vocabulary)
                    add_index(idx)
                elif kind is float or kind is int or kind is bool:
                    if type(key) is not str:
                        return None
                    idx = get(key)
                    if idx is None:
                        if not grow:
                            continue
                        idx = vocabulary[key] = len(vocabulary)
                    if value:
                        if value != 1:
                            others.append((len(indices), value))
                        add_index(idx)
                else:
                    return None
            add_end(len(indices))
    indptr = np.zeros(len(ends) + 1, dtype=np.int64)
    indptr[1:] = ends
    data = None
    if others:
        data = np.ones(len(indices))
        positions, numbers = zip(*others)
        data[list(positions)] = numbers
    return data, np.array(indices, dtype=np.int32), indptr


def _trimmed(array_, size):
    """``array_[:size]`` without a copy: the allocation shrinks in place."""
    if array_ is None:
        return None
    # we made it and hold its only reference, so resize may skip that check
    array_.resize(size, refcheck=False)
    return array_


@contextmanager
def _collector_paused():
    """Pause the cyclic garbage collector, restoring its state afterwards.

    The flat path allocates one small tuple per token while the caller holds
    hundreds of thousands of feature dicts; every collection those allocations
    trigger would traverse all of the caller's dicts, for nothing (tuples of
    str form no cycles). On esp.train this was a third of the flat path's time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _vectorize_loop(X, vocabulary, grow, separator):
    """The reference implementation of :func:`_vectorize`, one value at a time.

    It handles every input, raises the errors that name the sequence, token and
    key, and defines the output :func:`_vectorize_flat` must reproduce.
    """
    indices = array("q")
    values = array("d")
    indptr = array("q", [0])
    offsets = array("q", [0])
    n_tokens = 0
    get = vocabulary.get
    for seq_idx, sequence in enumerate(X):
        for tok_idx, token in enumerate(sequence):
            if not isinstance(token, Mapping):
                raise TypeError(
                    f"Sequence {seq_idx}, token {tok_idx} is a {type(token).__name__}; "
                    f"expected a mapping of feature names to values.")
            for key, value in token.items():
                if type(key) is not str:
                    key = str(key)  # the key rule, see SequenceVectorizer
                kind = type(value)
                if kind is str:
                    name = f"{key}{separator}{value}"
                    number = 1.0
                elif kind is float or kind is int or kind is bool:
                    name = key
                    number = value
                elif kind in _ITERABLE_VALUES:
                    for item in value:
                        if not isinstance(item, str):
                            raise FeatureValueError(
                                seq_idx, tok_idx, key, value,
                                "a list/tuple/set value may hold only str (a vector of "
                                "numbers is a 1-D numpy array: np.asarray(values))")
                        name = f"{key}{separator}{item}"
                        idx = get(name)
                        if idx is None:
                            if not grow:
                                continue
                            idx = vocabulary[name] = len(vocabulary)
                        indices.append(idx)
                        values.append(1.0)
                    continue
                else:
                    name, number = _scalar_feature(seq_idx, tok_idx, key, value, separator)
                idx = get(name)
                if idx is None:
                    if not grow:
                        continue
                    idx = vocabulary[name] = len(vocabulary)
                if number:
                    indices.append(idx)
                    values.append(number)
            indptr.append(len(indices))
            n_tokens += 1
        offsets.append(n_tokens)
    return (np.frombuffer(values, dtype=np.float64), np.frombuffer(indices, dtype=np.int64),
            np.frombuffer(indptr, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64))


def _scalar_feature(seq_idx, tok_idx, key, value, separator):
    """(name, number) of a value whose type is not exactly str, float, int or bool."""
    if isinstance(value, str):
        return f"{key}{separator}{value}", 1.0
    if isinstance(value, (numbers.Real, np.bool_)):
        return key, float(value)
    if isinstance(value, Mapping):
        raise FeatureValueError(seq_idx, tok_idx, key, value,
                                "nested mappings are not supported; flatten them")
    raise FeatureValueError(seq_idx, tok_idx, key, value, "unsupported type")


def _is_scalar_type(kind):
    """Whether :func:`_vectorize_loop` maps every value of this type to one feature."""
    return issubclass(kind, (str, numbers.Real, np.bool_))


def _vectorize_flat(X, vocabulary, grow, separator):
    """:func:`_vectorize` for plain dicts of scalars, or None for anything else.

    The per-value work is a handful of C-level passes (flatten keys and values,
    number them with dicts); Python code runs once per distinct (key, value)
    pair, not once per value. Lists, sets, non-dict tokens and invalid values
    return None, leaving them (and their error messages) to the loop.
    """
    tokens = list(chain.from_iterable(X))
    if not tokens:
        offsets = np.zeros(len(X) + 1, dtype=np.int64)
        return (np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                offsets)
    if set(map(type, tokens)) != {dict}:
        return None
    values = list(chain.from_iterable(map(dict.values, tokens)))
    # every value type must be a scalar, so that values that compare equal
    # (1, 1.0 and True) may share a number without changing the result
    if not all(map(_is_scalar_type, set(map(type, values)))):
        return None
    key_ids, distinct_keys, items_per_token = _key_ids(tokens)
    # keys are numbered by equality, which merges 1, True and 1.0 (and the
    # layouts that differ only there); their names differ, "1", "True" and
    # "1.0", so any key that is not a str goes through the loop
    if set(map(type, distinct_keys)) - {str}:
        return None
    value_ids, distinct_values = factorize(values)
    n_values = len(distinct_values)
    pair_codes, pair_ids = _number_pairs(key_ids * n_values + value_ids,
                                         len(distinct_keys) * n_values)

    # the distinct pairs, in order of first occurrence so a growing
    # vocabulary numbers names exactly as the loop does
    order = _first_occurrence_order(pair_ids, pair_codes.shape[0]) if grow else None
    pair_keys = (pair_codes // n_values).tolist()
    pair_values = (pair_codes % n_values).tolist()
    names = []
    numbers_ = np.empty(pair_codes.shape[0], dtype=np.float64)
    for j, (k, v) in enumerate(zip(pair_keys, pair_values)):
        key, value = distinct_keys[k], distinct_values[v]
        kind = type(value)
        if kind is str:
            names.append(f"{key}{separator}{value}")
            numbers_[j] = 1.0
        elif kind is float or kind is int or kind is bool:
            names.append(key)
            numbers_[j] = value
        else:
            name, numbers_[j] = _scalar_feature(None, None, key, value, separator)
            names.append(name)
    columns = _name_columns(names, order, vocabulary, grow)

    indices = columns[pair_ids]
    data = numbers_[pair_ids]
    kept = (indices >= 0) & (data != 0)
    kept_before = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    token_starts = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(items_per_token, out=token_starts[1:])
    offsets = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, X), dtype=np.int64, count=len(X)), out=offsets[1:])
    return data[kept], indices[kept], kept_before[token_starts], offsets


def _key_ids(tokens):
    """Key id of every value of every token, the distinct keys, and the value counts.

    Tokens mostly share a few layouts (the same keys in the same order), so the
    keys are numbered once per distinct layout and spread to the tokens with
    numpy, instead of hashing every key of every token.
    """
    layout_ids, layouts = factorize(list(map(tuple, tokens)))
    layout_key_ids, distinct_keys = factorize(list(chain.from_iterable(layouts)))
    layout_lengths = np.fromiter(map(len, layouts), dtype=np.int64, count=len(layouts))
    layout_starts = np.cumsum(layout_lengths) - layout_lengths
    items_per_token = layout_lengths[layout_ids]
    token_starts = np.cumsum(items_per_token) - items_per_token
    # value j of token t is key layout_key_ids[layout_starts[layout of t] + j - token_starts[t]]
    shift = np.repeat(layout_starts[layout_ids] - token_starts, items_per_token)
    key_ids = layout_key_ids[np.arange(shift.shape[0]) + shift]
    return key_ids, distinct_keys, items_per_token


def _number_pairs(codes, n_codes):
    """Distinct codes (sorted) and the index of each code among them."""
    if n_codes <= 2 * codes.shape[0] + _MAX_EXTRA_TABLE_SIZE:
        used = np.zeros(n_codes, dtype=bool)
        used[codes] = True
        distinct = np.flatnonzero(used)
        index = np.empty(n_codes, dtype=np.int64)
        index[distinct] = np.arange(distinct.shape[0])
        return distinct, index[codes]
    return np.unique(codes, return_inverse=True)


def _first_occurrence_order(ids, n_ids):
    """The ids ``0..n_ids-1`` ordered by their first position in ``ids``."""
    first = np.full(n_ids, ids.shape[0], dtype=np.int64)
    np.minimum.at(first, ids, np.arange(ids.shape[0]))
    return np.argsort(first, kind="stable")


def _name_columns(names, order, vocabulary, grow):
    """Column of each name (-1 if unknown and not ``grow``), growing ``vocabulary``."""
    get = vocabulary.get
    columns = np.empty(len(names), dtype=np.int64)
    if grow:
        for j in order.tolist():
            name = names[j]
            idx = get(name)
            if idx is None:
                idx = vocabulary[name] = len(vocabulary)
            columns[j] = idx
    else:
        columns[:] = np.fromiter(map(get, names, repeat(-1)), dtype=np.int64,
                                 count=len(names))
    return columns
