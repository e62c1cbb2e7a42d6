"""Inference kernels (numba only): potentials and offsets in; log Z, marginals and paths out.

One module per structure; :mod:`._batch` holds the JIT policy and the chunked,
deterministic parallel driver they share, :mod:`._logspace` the precision
thresholds and exact log-space reductions, :mod:`._order1` the scaled pass and
Viterbi of the order-1 chains (:mod:`.chain`, :mod:`.chain_edges`).
:mod:`.chain2` keeps its two passes in :mod:`._chain2_scaled` and
:mod:`._chain2_logspace`. Nothing here sees a feature, a string or a Python
object.
"""
