"""Vectors inside feature dicts: ``{"w": "casa", "vec": emb["casa"]}``.

A 1-D numpy array as a dict value is a vector: its numbers become the dense
columns ``key[0]..key[d-1]`` of the output's dense block, never CSR entries.
The marker is the array type itself: a list of floats stays what it was
(an error naming the value, with a hint), since a list value already means
several string features and guessing between the two would change models
silently. One key has one length in the whole corpus; a token without the
key has zeros there, as a token without a number feature has 0.
"""

from collections.abc import Mapping

import numpy as np

from ._dict_arrays import FeatureValueError


def is_vector(value):
    return isinstance(value, np.ndarray)


def _checked_vector(value, q, t, key):
    if value.ndim != 1 or value.dtype.kind not in "biuf":
        raise FeatureValueError(
            q, t, key, value,
            f"a vector value must be a 1-D numpy array of real numbers; got shape "
            f"{value.shape}, dtype {value.dtype}")
    return value


def split_vectors(X, widths=None):
    """(X without its vectors, dense block, widths by key) of feature dict sequences.

    Parameters
    ----------
    X : list of sequences of dict
    widths : dict of str to int, default=None
        The lengths fitted for each vector key (``transform``): keys outside it
        are ignored, as unseen features are. None learns them (``fit``), in
        sorted key order.

    Returns
    -------
    stripped : list of lists of dict
        The same tokens without their vector values (new dicts only for the
        tokens that had some).
    dense : ndarray of shape (n_tokens, sum of widths)
        float32 when every vector is float32, float64 otherwise.
    widths : dict of str to int
    """
    found = []  # (row, key, vector)
    learned = {} if widths is None else None
    stripped = []
    row = 0
    single = True
    for q, sequence in enumerate(X):
        tokens = []
        for t, token in enumerate(sequence):
            if isinstance(token, Mapping) and any(map(is_vector, token.values())):
                kept = {}
                for key, value in token.items():
                    if not is_vector(value):
                        kept[key] = value
                        continue
                    key = str(key)
                    vector = _checked_vector(value, q, t, key)
                    expected = (learned if widths is None else widths).get(key)
                    if expected is None and widths is None:
                        expected = learned[key] = vector.shape[0]
                    if expected is None:
                        continue  # a vector key fit never met: ignored
                    if vector.shape[0] != expected:
                        raise ValueError(
                            f"Sequence {q}, token {t}, feature {key!r}: a vector of length "
                            f"{vector.shape[0]}, where {key!r} has length {expected} "
                            f"(every vector of one key needs the same length).")
                    single = single and vector.dtype == np.float32
                    found.append((row, key, vector))
                token = kept
            tokens.append(token)
            row += 1
        stripped.append(tokens)
    if widths is None:
        widths = {key: learned[key] for key in sorted(learned)}
    starts, total = {}, 0
    for key, width in widths.items():
        starts[key] = total
        total += width
    dense = np.zeros((row, total), dtype=np.float32 if single and found else np.float64)
    for r, key, vector in found:
        start = starts[key]
        dense[r, start:start + vector.shape[0]] = vector
    return stripped, dense, widths


def vector_names(widths):
    """The dense columns' names: ``key[0]..key[d-1]`` for each vector key."""
    return [f"{key}[{j}]" for key, width in widths.items() for j in range(width)]
