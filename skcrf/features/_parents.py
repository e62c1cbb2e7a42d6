"""Parent links of tree-structured sequences: checking them once, before any kernel reads them.

Each token's parent is an index within its own sequence, -1 for a root; a
sequence may hold several trees (a forest). The inference kernels assume
exactly that and never check: a parent out of range would read another
sequence's memory, and a cycle would leave nodes unvisited.
"""

import numpy as np

from ..inference._runtime.batch import compiled
from ..inference.tree.passes import tree_layout

#: The key of a token dict that gives the token's parent in its sequence's
#: tree (for :class:`~skcrf.TreeCRF`): an index within the sequence, -1 or None
#: for a root. SequenceVectorizer takes it out of the features.
PARENT_KEY = "__parent__"

#: What is wrong with a parent link, as _first_bad_parent reports it.
_OUT_OF_RANGE, _SELF, _CYCLE = 1, 2, 3


@compiled()
def _first_bad_parent(parents, offsets):
    """(what, sequence, token) of the first bad parent link, or (0, -1, -1).

    ``what`` is _OUT_OF_RANGE (not -1 and not within the sequence), _SELF (a
    token its own parent) or _CYCLE (``token`` lies on or below a cycle, so no
    path leads from it to a root).
    """
    n_sequences = offsets.shape[0] - 1
    longest = 1
    for q in range(n_sequences):
        longest = max(longest, offsets[q + 1] - offsets[q])
    child_ptr = np.empty(longest + 1, np.int64)
    children = np.empty(longest, np.int64)
    order = np.empty(longest, np.int64)
    cursor = np.empty(longest, np.int64)
    seen = np.zeros(longest, np.bool_)
    for q in range(n_sequences):
        lo = offsets[q]
        n = offsets[q + 1] - lo
        for v in range(n):
            p = parents[lo + v]
            if p < -1 or p >= n:
                return _OUT_OF_RANGE, q, v
            if p == v:
                return _SELF, q, v
        reached = tree_layout(parents, lo, lo + n, child_ptr, children, order, cursor)
        if reached < n:
            for v in range(n):
                seen[v] = False
            for m in range(reached):  # order holds only the tokens a root reaches
                seen[order[m]] = True
            # an unreached token hangs from a cycle: walk up n steps to land on it
            v = 0
            while seen[v]:
                v += 1
            for _ in range(n):
                v = parents[lo + v]
            return _CYCLE, q, v
    return 0, -1, -1


def checked_parents(parents, offsets):
    """``parents`` as a new read-only int64 array, or raise saying which token is wrong.

    Parameters
    ----------
    parents : array-like of int of shape (n_tokens,)
        Each token's parent within its sequence, -1 for a root.
    offsets : ndarray of int64 of shape (n_sequences + 1,)

    Returns
    -------
    parents : ndarray of int64 of shape (n_tokens,), read-only
    """
    raw = np.asarray(parents)
    n_tokens = int(offsets[-1])
    if raw.ndim != 1 or raw.shape[0] != n_tokens:
        raise ValueError(
            f"parents must hold one parent index per token ({n_tokens}); got an array "
            f"of shape {raw.shape}.")
    if raw.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(raw) | (raw != np.round(raw)))
        if bad.size:
            q, v = _locate_token(offsets, bad[0])
            raise ValueError(
                f"parents must be integers; sequence {q}, token {v} has {raw[bad[0]]}.")
    elif raw.dtype.kind not in "iu" and n_tokens:
        raise TypeError(f"parents must be integers; got an array of dtype {raw.dtype}.")
    if raw.size and (raw.max() >= 2 ** 62 or raw.min() < -1):
        bad = int(np.flatnonzero((raw >= 2 ** 62) | (raw < -1))[0])
        q, v = _locate_token(offsets, bad)
        raise ValueError(
            f"Sequence {q}, token {v}: parent {raw[bad]} is neither -1 (a root) nor a "
            f"token of the sequence (0 to {offsets[q + 1] - offsets[q] - 1}).")
    result = raw.astype(np.int64)  # a copy: later changes to the caller's array stay out
    # read-only before the check: the tree kernels get read-only parents, and numba
    # compiles tree_layout once per writability
    result.setflags(write=False)
    what, q, v = _first_bad_parent(result, np.asarray(offsets, dtype=np.int64))
    if what == _OUT_OF_RANGE:
        raise ValueError(
            f"Sequence {q}, token {v}: parent {result[offsets[q] + v]} is neither -1 (a "
            f"root) nor a token of the sequence (0 to {offsets[q + 1] - offsets[q] - 1}).")
    if what == _SELF:
        raise ValueError(f"Sequence {q}, token {v} is its own parent.")
    if what == _CYCLE:
        cycle = [v]
        u = result[offsets[q] + v]
        while u != v:
            cycle.append(int(u))
            u = result[offsets[q] + u]
        path = " -> ".join(map(str, cycle + [v]))
        raise ValueError(
            f"Sequence {q}: the parent links form a cycle ({path}), so these tokens have "
            f"no root.")
    return result


def _locate_token(offsets, index):
    q = int(np.searchsorted(offsets, index, side="right") - 1)
    return q, int(index - offsets[q])
