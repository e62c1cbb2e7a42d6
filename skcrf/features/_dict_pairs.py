"""A few tokens of feature dicts to CSR arrays through remembered (key, value) pairs.

Tagging one sentence at a time meets the same (key, value) pairs again and
again: "bias", "word.istitle()", "postag=NC"... Looking each value up by
name (``key + separator + value``) builds and hashes a new string per value
in a Python loop, most of the time of predicting one sentence. Here each
pair's column is remembered the first time it is met; then a sentence's
columns are one C-level pass of dict lookups on the (key, value) tuples that
``dict.items`` yields anyway, and Python code runs only for pairs not seen
before and numbers other than 0 and 1.

Where the pairs live, and why threads may share them: they belong to the
:class:`~._columns_by_key.ColumnsByKey` kept beside a fitted vectorizer (in
``_columns_by_key._TABLES``, not in its ``__dict__``: no parameter, fitted
attribute, pickle or model file sees them). They are a cache of a pure
function of the fixed vocabulary, ``(key, value) -> column``: whatever it
holds, a lookup gives the column the vocabulary gives, so no result depends
on what other calls remembered. Threads share it safely: each call reads the
dict it found when it started; adding a pair is one dict assignment (atomic
under the GIL, and locked per dict in free-threaded CPython); past the bound
the full dict is replaced by a new one rather than cleared, so a concurrent
call keeps reading the old one whole. A refit replaces the vocabulary, and
with it the tables (``columns_by_key`` checks the vocabulary's identity).
"""

from itertools import accumulate, chain, repeat

import numpy as np

from ._csr_arrays import _canonical
from ._kernels import INSERTION_SORT_MAX, _sort_short_rows, remap_columns

#: At most this many pairs are remembered per fitted vectorizer (about
#: 10 MiB with their strings), forgotten all at once past it.
_REMEMBERED_PAIRS = 1 << 16

# the value types whose every value is one feature: anything else (a list, a
# str subclass, a numpy number) goes the general way, which names any error
_PLAIN_TYPES = frozenset({str, float, int, bool})

_STR = frozenset({str})

_UNSEEN = -2

# remap_columns with no remap keeps the columns, dropping the -1 entries
_KEEP_COLUMNS = np.empty(0, dtype=np.int32)
_NO_VALUES = np.empty(0)


def small_pairs(X, tables, max_values):
    """The canonical CSR arrays of ``X`` (as ``_canonical`` makes them) and its offsets, or None.

    The one-sentence path of :meth:`SequenceVectorizer._plain_arrays
    <skcrf.SequenceVectorizer._plain_arrays>`: ``(data, indices, indptr,
    offsets)``, data None when every value is 1; None for what
    :func:`vectorize_pairs` declines, and when ``X`` holds more than
    ``max_values`` feature values.
    """
    arrays = _pair_arrays(X, tables, max_values)
    if arrays is None:
        return None
    data, indices, indptr, longest = arrays
    # tokens' rows are short: sorted in place by the insertion kernel alone,
    # without the checks of sort_row_indices; _canonical sorts long rows and
    # adds up repeated columns (two keys making one name)
    if longest > INSERTION_SORT_MAX or _sort_short_rows(
            indptr, indices, _NO_VALUES if data is None else data, data is None):
        data, indices, indptr = _canonical(data, indices, indptr, len(tables.vocabulary))
    offsets = np.fromiter(accumulate(map(len, X), initial=0), dtype=np.int64,
                          count=len(X) + 1)
    return data, indices, indptr, offsets


def vectorize_pairs(X, tables, max_values=None):
    """``(data, indices, indptr)`` of ``X`` as :func:`~._dict_arrays._vectorize_small`'s, or None.

    Parameters
    ----------
    X : list of sequences of tokens
    tables : ColumnsByKey
        Of a fixed vocabulary (not growing); its ``pairs`` dict remembers
        ``(key, value) -> column``, -1 for a name not in the vocabulary or
        a zero number (neither stores anything).
    max_values : int, optional
        Return None if ``X`` holds more feature values than this.

    Returns None, before touching the vocabulary, unless every token is a
    plain dict of str keys and str, float, int or bool values.
    """
    arrays = _pair_arrays(X, tables, max_values)
    return None if arrays is None else arrays[:3]


def _pair_arrays(X, tables, max_values):
    """:func:`vectorize_pairs`'s arrays and the longest token's number of values, or None."""
    tokens = list(chain.from_iterable(X))
    if not tokens or set(map(type, tokens)) != {dict}:
        return None
    lengths = list(map(len, tokens))
    token_starts = np.fromiter(accumulate(lengths, initial=0), dtype=np.int64,
                               count=len(tokens) + 1)
    n_items = int(token_starts[-1])
    # counted before the checks below, which read every key and value: a large
    # input (any transform calls this first) is declined without them
    if max_values is not None and n_items > max_values:
        return None
    # a remembered pair's key is a str and its value a str or a number: a
    # key or value equal to it is of that type or of one this check refuses
    # (a str subclass, Decimal), which the general path handles
    if (not set(map(type, chain.from_iterable(tokens))) <= _STR or not set(
            map(type, chain.from_iterable(map(dict.values, tokens)))) <= _PLAIN_TYPES):
        return None
    pairs = tables.pairs
    others = ()  # (position, number) of the numbers other than 0 and 1
    try:
        # dict.items reuses its tuple when nothing keeps it: no allocation per
        # value; an unseen pair's None stops fromiter, and then the pairs are
        # looked up again into a list, where the unseen ones are filled in
        indices = np.fromiter(map(pairs.get, chain.from_iterable(map(dict.items, tokens))),
                              dtype=np.int32, count=n_items)
    except TypeError:
        indices = np.fromiter(map(pairs.get, chain.from_iterable(map(dict.items, tokens)),
                                  repeat(_UNSEEN)), dtype=np.int32, count=n_items)
        others = _remember(tokens, indices, tables)
    if not others:
        _, indices, indptr = remap_columns(_NO_VALUES, indices, token_starts, _KEEP_COLUMNS,
                                           True)
        return None, indices, indptr, max(lengths)
    data = np.ones(n_items)
    positions, numbers = zip(*others)
    data[list(positions)] = numbers
    return (*remap_columns(data, indices, token_starts, _KEEP_COLUMNS, False), max(lengths))


def _remember(tokens, columns, tables):
    """Fill in the ``_UNSEEN`` entries of ``columns`` (an array), remembering their pairs.

    Returns the ``(position, number)`` of the numbers other than 0 and 1,
    whose pairs are not remembered.
    """
    pairs = tables.pairs
    if len(pairs) > _REMEMBERED_PAIRS:
        # a new dict, not clear(): a concurrent call keeps reading its own
        pairs = tables.pairs = {}
    items = list(chain.from_iterable(map(dict.items, tokens)))
    get = tables.vocabulary.get
    separator = tables.separator
    others = []
    for position in np.flatnonzero(columns == _UNSEEN).tolist():
        key, value = items[position]
        if type(value) is str:
            column = pairs[key, value] = get(key + separator + value, -1)
        elif not value:  # zero, False (and -0.0) store nothing
            column = pairs[key, value] = -1
        else:
            column = get(key, -1)
            if value == 1:  # 1, 1.0 and True are equal as dict keys, and store 1
                pairs[key, value] = column
            elif column >= 0:  # other numbers (NaN too) are not remembered
                others.append((position, value))
        columns[position] = column
    return others
