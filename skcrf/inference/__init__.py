"""Inference kernels (numba only): potentials and offsets in; log Z, marginals and paths out.

One module per structure; :mod:`._batch` holds the JIT policy and the chunked,
deterministic parallel driver they share. Nothing here sees a feature, a
string or a Python object.
"""
