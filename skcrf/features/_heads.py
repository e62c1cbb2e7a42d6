"""Features of a token's head: its word, its columns, and the direction and length of the link.

What :class:`TokenFeaturizer` adds when its tokens carry their head
(``head_column``), as one CSR block beside the window features, and the same
features as dict entries for the reference path. Every name starts with
``head:``; a root has the one feature ``head:ROOT``.
"""

import numpy as np
import scipy.sparse as sp

from ._words import _one_hot_group, _word_group, _word_value

HEAD = "head:"

#: Upper ends of the link-length bins and their names; longer links are "9+".
_DISTANCE_BINS = (1, 2, 4, 8)
_DISTANCE_NAMES = ("1", "2", "3-4", "5-8", "9+")


def head_keys(plan):
    """The feature keys the head features may use (for the custom-key clash check)."""
    keys = {HEAD + "ROOT"}
    keys.update(HEAD + key for _, _, key in plan.head_word_keys)
    keys.update(HEAD + name for _, name in plan.head_columns)
    if plan.head_link:
        keys.update((HEAD + "dir", HEAD + "dist"))
    return keys


def head_matrix(plan, tokens):
    """(CSR matrix of shape (n_tokens, n_columns), column names) of the head features.

    Each group (ROOT, one word feature, one column, direction, distance)
    puts at most one entry in a token's row; columns no token uses are
    dropped.
    """
    parents = tokens.parents
    starts = np.repeat(tokens.offsets[:-1], tokens.lengths)
    positions = np.arange(tokens.n_tokens) - starts
    is_root = parents < 0
    heads = np.where(is_root, 0, parents + starts)  # roots read row 0, then masked
    groups = [(np.where(is_root, 0, -1), [HEAD + "ROOT"])]

    def at_heads(codes, table, names):
        column = table[codes[heads]].astype(np.int64)
        column[is_root] = -1
        groups.append((column, [HEAD + name for name in names]))

    if plan.head_word_keys:
        word_ids, words = tokens.column_codes(plan.word_column)
        for feature, length, key in plan.head_word_keys:
            at_heads(word_ids, *_word_group(words, feature, length, key))
    for column, name in plan.head_columns:
        ids, values = tokens.column_codes(column)
        at_heads(ids, *_one_hot_group(name, values))
    if plan.head_link:
        left = np.where(parents < positions, 0, 1)
        left[is_root] = -1
        groups.append((left, [HEAD + "dir=left", HEAD + "dir=right"]))
        distance = np.searchsorted(np.asarray(_DISTANCE_BINS), np.abs(parents - positions))
        distance[is_root] = -1
        groups.append((distance, [f"{HEAD}dist={name}" for name in _DISTANCE_NAMES]))

    widths = [len(names) for _, names in groups]
    starts_of_group = np.cumsum([0] + widths[:-1])
    columns = np.stack([np.where(column >= 0, column + start, -1)
                        for (column, _), start in zip(groups, starts_of_group)], axis=1)
    rows, slots = np.nonzero(columns >= 0)  # row-major: each token's entries in group order
    indices = columns[rows, slots]
    names = [name for _, group_names in groups for name in group_names]
    used = np.zeros(len(names), dtype=bool)
    used[indices] = True
    renumber = np.cumsum(used) - 1
    indptr = np.zeros(tokens.n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=tokens.n_tokens), out=indptr[1:])
    matrix = sp.csr_matrix((np.ones(indices.shape[0]), renumber[indices], indptr),
                           shape=(tokens.n_tokens, int(used.sum())))
    return matrix, [name for name, keep in zip(names, used.tolist()) if keep]


def head_dict(plan, columns, start, i, parent):
    """The head features of token ``i`` (of the sequence starting at ``start``) as a dict."""
    if parent < 0:
        return {HEAD + "ROOT": True}
    features = {}
    word = columns[plan.word_column][start + parent]
    for feature, length, key in plan.head_word_keys:
        value = _word_value(feature, length, word)
        if value is not False:
            features[HEAD + key] = value
    for column, name in plan.head_columns:
        features[HEAD + name] = columns[column][start + parent]
    if plan.head_link:
        features[HEAD + "dir"] = "left" if parent < i else "right"
        bin_ = int(np.searchsorted(np.asarray(_DISTANCE_BINS), abs(parent - i)))
        features[HEAD + "dist"] = _DISTANCE_NAMES[bin_]
    return features
