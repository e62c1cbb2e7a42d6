"""The token featurizer's built-in features as one CSR matrix: slots, tables, one kernel call.

A slot is one feature group at one offset (a word feature of the token or a
neighbour, a column's value, a boundary marker): at most one column per
token. :func:`_featurize` lays the slots side by side in name order and fills
every row with one call of :func:`~skcrf.features._kernels.slot_features`;
custom and head features are joined after.
"""

from collections.abc import Mapping
from itertools import chain, compress, repeat
from operator import add, lt
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._utils.validation import _locate
from ._dict_arrays import FeatureValueError, _vectorize
from ._heads import head_matrix
from ._kernels import SLOT_AFTER, SLOT_ALWAYS, SLOT_BEFORE, SLOT_GATHER, slot_features
from ._reference import _check_custom, _offset_prefix
from ._words import _one_hot_group, _word_group
from .sequence_matrix import SequenceMatrix
from ._csr_arrays import _csr
from .vectorizer import SequenceVectorizer


class _Slot(NamedTuple):
    """One feature group at one offset: at most one column per token."""

    kind: int  # SLOT_GATHER, SLOT_ALWAYS, SLOT_BEFORE or SLOT_AFTER
    shift: int  # token offset (gather), distance from the edge (before / after)
    source: int  # the token column a gather slot reads, as a row of the sources
    group: int  # the per-type table a gather slot reads, -1 for none
    names: list  # the names of the slot's columns without the prefix, sorted
    prefix: str  # "", "-1:", "+2:", ...


def _featurize(plan, tokens):
    """The SequenceMatrix of all tokens, its columns sorted by name.

    Slots are laid side by side in name order, so the kernel's rows come out
    sorted and the names need no sort: SequenceVectorizer then takes them as
    they are. Only custom features (or built-in names that interleave, which
    takes unusual column names) go through SequenceVectorizer, which sorts and
    merges all the columns.
    """
    sources, tables, slots = _slots(plan, tokens)
    slots, in_name_order = _name_order(slots)
    widths = [len(slot.names) for slot in slots]
    column_starts = np.zeros(len(slots), dtype=np.int64)
    np.cumsum(widths[:-1], out=column_starts[1:])
    table_starts = np.cumsum([0] + [table.shape[0] for table in tables])
    indices, indptr, used = slot_features(
        sources, tokens.offsets,
        np.array([slot.kind for slot in slots], dtype=np.int64),
        np.array([slot.shift for slot in slots], dtype=np.int64),
        np.array([slot.source for slot in slots], dtype=np.int64),
        np.array([table_starts[slot.group] if slot.group >= 0 else 0 for slot in slots],
                 dtype=np.int64),
        np.concatenate(tables) if tables else np.zeros(0, dtype=np.int32),
        column_starts, sum(widths))
    names = _used_names(slots, used)
    if plan.custom is None and plan.head_column is None and in_name_order:
        # every value is 1: the matrix of ones is built only if someone reads it
        return SequenceMatrix._from_arrays(None, indices, indptr, len(names),
                                           tokens.offsets, names)
    matrix = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr),
                           shape=(tokens.n_tokens, len(names)))
    if plan.custom is not None:
        custom_matrix, custom_names = _custom_features(plan, tokens)
        matrix = sp.hstack([matrix, custom_matrix], format="csr")
        names += custom_names
    if plan.head_column is not None:
        heads, head_names = head_matrix(plan, tokens)
        matrix = sp.hstack([matrix, heads], format="csr")
        names += head_names
    # sorted and merged by name as SequenceVectorizer does: a custom feature
    # spelled like a built-in one adds to its column
    return SequenceVectorizer().fit_transform(
        SequenceMatrix(matrix, tokens.offsets, names, parents=tokens.parents))


def _slots(plan, tokens):
    """The plan's slots, the type ids they read and their per-type tables.

    Returns
    -------
    sources : ndarray of shape (n_sources, n_tokens)
        Type id of every token in each token column the slots read.
    tables : list of int32 ndarray
        Per feature group, the column of each type within the group (-1: none).
    slots : list of _Slot
    """
    # offsets that reach past every sequence put nothing in any row: no slot
    # (a window far beyond the longest sequence would otherwise cost its width
    # in slots for every token)
    reach = int(tokens.lengths.max(initial=0))
    slots = [_Slot(SLOT_ALWAYS, 0, 0, -1, ["bias"], "")] if plan.bias else []
    if plan.boundary:
        for k in [1] + [k for k in plan.marker_offsets if k < reach]:
            slots += [_Slot(SLOT_BEFORE, k, 0, -1, [f"{-k:+d}:BOS" if k > 1 else "BOS"], ""),
                      _Slot(SLOT_AFTER, k, 0, -1, [f"{k:+d}:EOS" if k > 1 else "EOS"], "")]
    word_ids, words = tokens.column_codes(plan.word_column)
    sources, tables, group_names = [word_ids], [], []
    # a word feature is computed once, for the token and its context alike
    word_groups = {}
    for offset, word_keys in [(0, plan.word_keys)] + [
            (k, plan.context_keys) for k in plan.context_offsets if abs(k) < reach]:
        for feature, length, key in word_keys:
            if (feature, length) not in word_groups:
                word_groups[feature, length] = len(tables)
                table, names = _word_group(words, feature, length, key)
                tables.append(table)
                group_names.append(names)
            group = word_groups[feature, length]
            slots.append(_Slot(SLOT_GATHER, offset, 0, group, group_names[group],
                               _offset_prefix(offset)))
    for column, window, column_keys in plan.columns:
        ids, values = tokens.column_codes(column)
        sources.append(ids)
        for length, key in column_keys:
            table, names = _one_hot_group(
                key, values if length is None else [value[:length] for value in values])
            tables.append(table)
            slots += [_Slot(SLOT_GATHER, k, len(sources) - 1, len(tables) - 1, names,
                            _offset_prefix(k)) for k in range(-window, window + 1)
                      if abs(k) < reach]
    return np.stack(sources), tables, slots


def _name_order(slots):
    """The slots sorted by name, and whether that puts all their columns in name order.

    Each slot's names share its prefix and key (``-1:word.lower=``), so the
    slots' name ranges only overlap if a name starts with another slot's key
    and ``=``, which takes a column name holding ``=``; then the caller sorts
    every column instead.
    """
    firsts = [slot.prefix + slot.names[0] for slot in slots]
    order = sorted(range(len(slots)), key=firsts.__getitem__)
    slots = [slots[i] for i in order]
    lasts = [slot.prefix + slot.names[-1] for slot in slots]
    return slots, all(map(lt, lasts, [firsts[i] for i in order[1:]]))


def _used_names(slots, used):
    """The names of the columns some token uses, in column order."""
    names = chain.from_iterable(map(add, repeat(slot.prefix), slot.names) if slot.prefix
                                else slot.names for slot in slots)
    return list(compress(names, used.tolist()))


def _custom_features(plan, tokens):
    """Features of ``custom(token)``, called once per distinct token."""

    def where_first(type_index):
        # (sequence, position) of the first token of this type, for errors
        return _locate(tokens.lengths, int(np.argmax(tokens.token_ids == type_index)))

    dicts = list(map(plan.custom, tokens.types))
    for j, features in enumerate(dicts):
        if not isinstance(features, Mapping) or not plan.keys.isdisjoint(map(str, features)):
            _check_custom(features, plan.keys, *where_first(j))
    vocabulary = {}
    try:
        data, indices, indptr, _ = _vectorize([dicts], vocabulary, True, "=")
    except FeatureValueError as error:
        raise error.relocated(*where_first(error.token)) from None
    table = _csr(data, indices, indptr, len(vocabulary), np.float64)
    # every custom name is kept, even one whose values are all zero, as
    # SequenceVectorizer does for the same features given as dicts
    return table[tokens.token_ids], list(vocabulary)
