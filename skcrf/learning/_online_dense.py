"""A structure with a dense block, as the online solvers step through it.

:class:`~skcrf.structures.chain.dense.DenseChainStructure` (an order-1 chain,
a chain of order >= 2 or a tree, plus dense weights ``W`` of shape
(n_classes, n_dense)) gives L-BFGS its objective; :class:`DenseOnline` gives
the online solvers what they read of a structure (see
:class:`~skcrf.learning._online_problem.OnlineProblem`):

- a plain order-1 chain's layout and where ``W`` starts (:meth:`dense_at`), for
  the epoch kernels of :mod:`._online_chain`, which read the block themselves;
- for every other chain and for trees, each visited sequence's statistics in
  token form: the wrapped structure's own, computed on its unary scores plus
  ``X_q @ W.T``, and the block ``W``'s, the token rows times ``X_q``.

The epoch kernels' dense products are here too (:func:`_dense_token_scores`,
:func:`_dense_step`).
"""

import copy

import numpy as np

from ..inference._runtime.batch import compiled
from ..structures._parameters import ParameterLayout
from ..structures.chain.dense import DenseChainStructure

#: The name of the dense weights' block in :attr:`DenseOnline.layout`.
DENSE_BLOCK = "dense"


def online_structure(structure):
    """``structure`` as the online solvers read it: a dense one wrapped, any other as is."""
    if isinstance(structure, DenseChainStructure):
        return DenseOnline(structure)
    return structure


class DenseOnline:
    """A :class:`DenseChainStructure` behind the online solvers' interface.

    The weights are the wrapped chain's, then ``W`` in C order (the layout
    of :class:`DenseChainStructure`); :attr:`layout` names the last block
    ``"dense"``.

    Parameters
    ----------
    structure : DenseChainStructure
    """

    def __init__(self, structure):
        self.structure = structure
        chain = structure.chain
        self.layout = ParameterLayout(list(chain.layout.shapes.items())
                                      + [(DENSE_BLOCK, (structure.n_classes,
                                                        structure.n_dense))])

    @property
    def chain(self):
        return self.structure.chain

    @property
    def n_classes(self):
        return self.structure.n_classes

    @property
    def n_parameters(self):
        return self.structure.n_parameters

    @property
    def dense_at(self):
        """Where ``W`` starts in ``w``."""
        return self.chain.n_parameters

    # a chain of order >= 2's label patterns: partial_fit adds a batch's to them
    @property
    def patterns(self):
        return self.chain.patterns

    @patterns.setter
    def patterns(self, patterns):
        self.chain.patterns = patterns

    def gold_statistics(self, features, offsets, label_ids):
        return self.structure.gold_statistics(features, offsets, label_ids)

    def coefficients(self, w):
        return self.structure.coefficients(w)

    def weights(self, named):
        return self.structure.weights(named)

    def scores(self, features, w):
        """The wrapped chain's scores under ``w``, ``X @ W.T`` added to their unary block."""
        return self.structure.scores(features, w)

    # --- the epoch kernels' route (a plain order-1 chain) ------------------------------

    def plain_layout(self):
        plain = getattr(self.chain, "plain_layout", None)
        return None if plain is None else plain()

    # --- the token-form route -------------------------------------------------------

    def pair_blocks(self):
        return self.chain.pair_blocks()

    def with_pairs(self, pairs):
        """The same structure with other pairs for the chain's blocks (``partial_fit``)."""
        return DenseOnline(DenseChainStructure(self.chain.with_pairs(pairs),
                                               self.structure.n_dense))

    def _token_form(self):
        """A shallow copy of the chain whose scores are :meth:`scores` (this object's:
        a masked copy's, :func:`~skcrf.learning.partial.masked_structure`, add its mask)."""
        chain = copy.copy(self.chain)
        chain.scores = self.scores
        return chain

    def statistics_rows(self, features, offsets, label_ids):
        statistics = self.chain.statistics_rows(features, offsets, label_ids)
        return _with_dense_block(statistics, features)

    def expected_rows(self, features, offsets, w, scale=1.0):
        log_z, statistics = self._token_form().expected_rows(features, offsets, w, scale)
        return log_z, _with_dense_block(statistics, features)

    def decode_targets(self, features, offsets, w):
        return self._token_form().decode_targets(features, offsets, w)


def _with_dense_block(statistics, features):
    """``statistics`` with the dense weights' block: each label's token rows times ``X``.

    Read in float64, as the CSR columns of the same values would be.
    """
    rows = statistics.rows["state"]  # (n_tokens, n_classes): one-hot or marginals
    statistics.dense[DENSE_BLOCK] = rows.T @ features.dense.astype(np.float64, copy=False)
    return statistics


# --- the epoch kernels' dense products ---------------------------------------------
#
# Without a dense block the epoch kernels get ``dense=None``: numba then prunes
# every ``dense is None`` branch when it compiles them, so a sparse fit
# compiles no BLAS product (np.dot's machinery is some forty specializations
# of cold compile time) and runs the sparse loops alone.

@compiled()
def _dense_scratch(longest, n_classes, dense):
    """The dense route's per-visit buffers: the visit's rows in float64, each token's
    coefficient per label (SGD's step), both for sequences up to ``longest``; empty
    without a dense block."""
    if dense is None:
        return np.empty((0, 0)), np.empty((0, 0))
    size = max(longest, 1)
    return np.empty((size, dense.shape[1])), np.empty((size, n_classes))


@compiled(inline=True)
def _dense_width(dense):
    """The dense block's number of columns (0 without one)."""
    if dense is None:
        return 0
    return dense.shape[1]


@compiled(inline=True)
def _dense_token_scores(w, dense, dense_at, lo, hi, rows, unary):
    """``unary[r] += X[t] @ W.T`` for tokens lo..hi-1 (nothing without a dense block).

    One BLAS product per visit, on the visit's rows copied into ``rows`` as
    float64 (as the CSR columns of a float32 block hold them), which
    :func:`_dense_step` reads again.
    """
    if dense is None:
        return
    n_dense = dense.shape[1]
    if n_dense == 0 or hi == lo:
        return
    n_classes = unary.shape[1]
    n = hi - lo
    x = rows[:n]
    for r in range(n):
        for d in range(n_dense):
            x[r, d] = dense[lo + r, d]
    W = w[dense_at:dense_at + n_classes * n_dense].reshape((n_classes, n_dense))
    scores = np.dot(x, W.T)
    for r in range(n):
        for j in range(n_classes):
            unary[r, j] += scores[r, j]


@compiled(inline=True)
def _dense_step(w, n, dense, rows, coefficient_rows, dense_at, average_sum, average_scale,
                averaging):
    """``W += coefficient_rows[:n].T @ rows[:n]`` (and the average's sums): a visit's step.

    ``rows`` holds the visit's rows (:func:`_dense_token_scores`),
    ``coefficient_rows`` each token's step per label; nothing when ``dense``
    is None.
    """
    if dense is None:
        return
    n_dense = rows.shape[1]
    if n_dense == 0 or n == 0:
        return
    step = np.dot(coefficient_rows[:n].T, rows[:n])
    n_classes = step.shape[0]
    i = dense_at
    for j in range(n_classes):
        for d in range(n_dense):
            change = step[j, d]
            w[i] += change
            if averaging:
                average_sum[i] -= average_scale * change
            i += 1
