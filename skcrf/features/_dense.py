"""The dense block of a SequenceMatrix: checks, and numeric sequences in.

A dense block holds numbers every token has (word vectors, sensor readings):
one C-contiguous float32 or float64 array of shape (n_tokens, n_dense) beside
the sparse matrix, which the objective multiplies by BLAS instead of walking
CSR entries. Every check names the sequence, the token and the column, so a
NaN from a sensor is found in the data, not in a diverged fit.
"""

import numpy as np
import scipy.sparse as sp

#: The value types a dense block is kept in; anything else numeric is made float64.
DENSE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def locate(offsets, row):
    """(sequence, token within it) of stacked row ``row``."""
    q = int(np.searchsorted(offsets, row, side="right")) - 1
    # empty sequences share their offset with the next: skip to the owner
    while offsets[q + 1] <= row:
        q += 1
    return q, int(row - offsets[q])


def _describe(names, column):
    name = None if names is None else names[column]
    return f"column {column}" + ("" if name is None else f" ({name!r})")


def check_finite(values, offsets, names=None, what="dense block"):
    """Raise naming the first NaN or infinite value's sequence, token and column."""
    if values.size == 0:
        return
    # one reduction over the block: a NaN or an infinity makes the sum NaN or
    # infinite, so a finite sum clears every value; an infinite one may be an
    # overflow of finite values, which the elementwise test tells apart. The
    # position is searched only on failure
    if np.isfinite(values.sum(dtype=np.float64)) or np.isfinite(values).all():
        return
    bad = np.argwhere(~np.isfinite(values))[0]
    q, t = locate(offsets, bad[0])
    raise ValueError(
        f"The {what} holds {values[bad[0], bad[1]]} at sequence {q}, token {t}, "
        f"{_describe(names, bad[1])}; every value must be finite.")


def as_dense_block(dense, offsets, n_tokens=None, names=None):
    """``dense`` as a checked C-contiguous float32/float64 array (copied at most once).

    float32 and float64 are kept as they are (a view when already
    C-contiguous); other real numbers become float64. ``n_tokens`` is the
    number of rows the sparse matrix has, when there is one.
    """
    if sp.issparse(dense):
        raise TypeError("dense must be a numpy array; a sparse matrix goes in `matrix`.")
    values = np.asarray(dense)
    if values.dtype == object or values.dtype.kind not in "biuf":
        raise TypeError(
            f"dense must hold real numbers; got an array of dtype {values.dtype}. "
            f"Convert object columns (strings, mixed types) to numbers or make them "
            f"sparse features.")
    if values.ndim != 2:
        raise ValueError(
            f"dense must be a 2-D array of shape (n_tokens, n_dense); got "
            f"{values.ndim} dimension(s), shape {values.shape}.")
    rows = int(offsets[-1])
    if values.shape[0] != rows or (n_tokens is not None and n_tokens != rows):
        raise ValueError(
            f"dense has {values.shape[0]} rows; the offsets describe {rows} tokens"
            + ("" if n_tokens is None else f" and the sparse matrix has {n_tokens} rows")
            + ".")
    dtype = values.dtype if values.dtype in DENSE_DTYPES else np.dtype(np.float64)
    values = np.ascontiguousarray(values, dtype=dtype)
    check_finite(values, offsets, names)
    view = values.view()
    view.flags.writeable = False  # the caller's array stays writable
    return view


def default_dense_names(n_dense):
    return np.array([f"x{j}" for j in range(n_dense)], dtype=object)


def checked_dense_names(names, n_dense):
    """``names`` as an object array of ``n_dense`` distinct str, or the defaults."""
    if names is None:
        return default_dense_names(n_dense)
    names = np.asarray(list(names), dtype=object)
    if names.shape != (n_dense,):
        raise ValueError(f"dense_names has {names.shape[0]} entries for {n_dense} "
                         f"dense columns.")
    names = np.array([str(name) for name in names], dtype=object)
    if len(set(names)) != n_dense:
        raise ValueError("dense_names must be distinct.")
    return names


def _is_frame(block):
    return hasattr(block, "columns") and hasattr(block, "to_numpy")


def _frame_values(block, q):
    """A pandas DataFrame's values as a float array, naming a non-numeric column."""
    for j, dtype in enumerate(block.dtypes):
        if getattr(dtype, "kind", "O") not in "biuf":
            raise TypeError(
                f"Sequence {q} of X is a DataFrame whose column {j} ({block.columns[j]!r}) "
                f"has dtype {dtype}; every column must be numeric.")
    kinds = {np.dtype(dtype) for dtype in block.dtypes}
    dtype = np.float32 if kinds == {np.dtype(np.float32)} else np.float64
    return block.to_numpy(dtype=dtype)


def sequences_to_blocks(sequences):
    """Check a list of 2-D blocks: (sparse parts or None, dense parts or None, names, lengths).

    Raises naming the sequence for a block that is not 2-D, ragged widths,
    object dtypes and differing DataFrame columns. When the list mixes
    sparse and dense blocks the sparse ones are made dense: the columns are
    the same features.
    """
    sparse, dense, names, widths, lengths = [], [], None, [], []
    for q, block in enumerate(sequences):
        if _is_frame(block):
            columns = [str(c) for c in block.columns]
            if names is None:
                names = columns
            elif columns != names:
                raise ValueError(
                    f"Sequence {q} of X is a DataFrame with columns {columns[:5]}...; "
                    f"sequence 0 has {names[:5]}...: every sequence needs the same columns.")
            block = _frame_values(block, q)
        if sp.issparse(block):
            shape = block.shape
            sparse.append(q)
        else:
            block = np.asarray(block)
            if block.dtype == object or block.dtype.kind not in "biuf":
                raise TypeError(
                    f"Sequence {q} of X is an array of dtype {block.dtype}; numeric "
                    f"sequences must hold real numbers (float32 or float64). Feature "
                    f"dicts go in a list of lists of dicts.")
            shape = block.shape
            dense.append(q)
        if len(shape) != 2:
            raise ValueError(
                f"Sequence {q} of X is an array of shape {shape}; each sequence must be "
                f"2-D, (n_tokens, n_features). A single token row needs reshape(1, -1).")
        widths.append(shape[1])
        lengths.append(shape[0])
    if widths and len(set(widths)) > 1:
        q = next(q for q, w in enumerate(widths) if w != widths[0])
        raise ValueError(
            f"Sequence {q} of X has {widths[q]} columns; sequence 0 has {widths[0]}: "
            f"every sequence needs the same number of columns.")
    return sparse, dense, names, widths[0] if widths else 0, lengths


def blocks_from_sequences(sequences):
    """(matrix or None, dense or None, offsets, names) of a list of 2-D blocks.

    A list of only sparse blocks gives a sparse matrix; any dense block makes
    the whole a dense block (one copy: the concatenation). float32 stays
    float32 when every block is float32.
    """
    sequences = list(sequences)
    sparse, dense, names, width, lengths = sequences_to_blocks(sequences)
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    blocks = [_frame_values(b, q) if _is_frame(b) else b for q, b in enumerate(sequences)]
    if not dense and sequences:
        matrix = sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
        return matrix, None, offsets, names
    dtypes = {(b.dtype if sp.issparse(b) else np.asarray(b).dtype) for b in blocks}
    dtype = np.float32 if dtypes == {np.dtype(np.float32)} else np.float64
    values = np.empty((int(offsets[-1]), width), dtype=dtype)
    for q, block in enumerate(blocks):
        part = block.toarray() if sp.issparse(block) else block
        values[offsets[q]:offsets[q + 1]] = part
    check_finite(values, offsets, names, what="input")
    return None, values, offsets, names


def from_lengths(X, lengths):
    """A SequenceMatrix of one stacked array and the length of each sequence.

    The convention of hmmlearn and seqlearn (``fit(X, lengths)``): code
    written for them moves with one line,
    ``est.fit(from_lengths(X, lengths), y_sequences)``.

    Parameters
    ----------
    X : array-like, sparse matrix or pandas DataFrame of shape (n_tokens, n_features)
        The tokens of all sequences, stacked in order. A numpy array becomes
        the dense block without a copy when it is C-contiguous float32 or
        float64; a DataFrame's column names become the feature names; a
        sparse matrix becomes the sparse part.
    lengths : array-like of int of shape (n_sequences,)
        Number of tokens of each sequence; they sum to ``n_tokens``.

    Returns
    -------
    X : SequenceMatrix

    Examples
    --------
    >>> import numpy as np
    >>> from skcrf.features import from_lengths
    >>> X = from_lengths(np.arange(10.0).reshape(5, 2), [2, 3])
    >>> X.lengths.tolist(), X.n_dense
    ([2, 3], 2)
    """
    from .sequence_matrix import SequenceMatrix  # it imports this module

    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise TypeError("lengths must be a 1-D array of integers, one per sequence.")
    if lengths.size and lengths.min() < 0:
        raise ValueError("lengths must be non-negative.")
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
    if offsets[-1] != n_rows:
        raise ValueError(f"lengths sum to {offsets[-1]}; X has {n_rows} rows.")
    if sp.issparse(X):
        return SequenceMatrix(X, offsets)
    names = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        try:
            _, dense, _, names = blocks_from_sequences([X])
        except (TypeError, ValueError) as error:  # one stacked frame, not sequence 0
            raise type(error)(str(error).replace("Sequence 0 of X is", "X is")) from None
        return SequenceMatrix(None, offsets, dense=dense, dense_names=names)
    return SequenceMatrix(None, offsets, dense=X)
