"""The columns a model keeps of a wide input without feature names.

A :class:`~skcrf.features.SequenceHasher` of ``n_features=2**24`` gives any
vocabulary a fixed width, of which a training set uses a few columns. A model
sized by the width (a weight per label and column, a name ``"x<j>"`` per
column, gradient buffers, model files) would pay for 16 million columns that
never occur: gigabytes for a toy. When the input has no feature names, no
dense block, and at least :data:`WIDE_UNUSED` of its columns never occur, the
estimator keeps only the columns that occur (``feature_columns_``, in weight
order) and renumbers them ``0..k-1``; ``n_features_in_`` stays the input's
width. At prediction, a column the training data never held has no weight:
it adds 0 to every score, as its zero weight would in the full layout.
"""
import numpy as np
import scipy.sparse as sp

from ..features.sequence_matrix import SequenceMatrix

#: Unused columns from which a nameless input is compacted; below it the full
#: width costs little and keeps ``coef_``'s columns the input's.
WIDE_UNUSED = 2 ** 16


def _csr_arrays(X):
    """(data or None, indices, indptr, dtype) of ``X``'s sparse block, canonical."""
    arrays = X._canonical_arrays()
    if arrays is not None:
        return (*arrays, X._arrays[3])
    matrix = X.matrix
    if not matrix.has_canonical_format:  # a user's matrix: repeats summed, rows sorted
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix.data, matrix.indices, matrix.indptr, matrix.dtype


def used_columns(X):
    """The sorted columns ``X`` holds an entry in, if ``X`` is to be compacted, else None."""
    # not skipped when the entries outnumber the width less WIDE_UNUSED: repeated
    # columns may still leave that many unused (and a distributed fit, which
    # sees only the partitions' columns, decides by them alone)
    held = held_columns(X)
    return None if held is None else kept_columns(held, X.n_features)


def held_columns(X):
    """The sorted columns ``X`` holds an entry in, if ``X`` may be compacted, else None.

    The part of :func:`used_columns` that one piece of the training data can
    answer (a partition of a distributed fit): the union of the pieces'
    columns, given to :func:`kept_columns`, decides as ``used_columns`` of
    all of them would. None when ``X`` has names, a dense block, or fewer
    columns than :data:`WIDE_UNUSED`.
    """
    if X.feature_names is not None or X.n_dense or X.n_features < WIDE_UNUSED:
        return None
    return np.unique(_csr_arrays(X)[1]).astype(np.int64)


def kept_columns(used, n_features):
    """``used`` (sorted input columns) if an input of ``n_features`` columns is compacted to them.

    It is when at least :data:`WIDE_UNUSED` columns are not among them;
    otherwise None: the model keeps the full width.
    """
    return used if n_features - used.shape[0] >= WIDE_UNUSED else None


def grown_columns(X, columns):
    """``columns`` followed by the columns of ``X`` not among them (a later batch's).

    The earlier columns keep their positions, so their weights stay in place.
    """
    new = np.setdiff1d(_csr_arrays(X)[1], columns)
    return np.concatenate([columns, new.astype(np.int64)]) if new.size else columns


def compacted(X, columns):
    """``X`` with column ``columns[k]`` as column ``k``, and no entry in other columns.

    ``columns`` are distinct input columns (``feature_columns_``). Parents
    and features of segments are kept as they are.
    """
    data, indices, indptr, dtype = _csr_arrays(X)
    order = np.argsort(columns, kind="stable")
    ordered = columns[order]
    at = np.searchsorted(ordered, indices)
    np.minimum(at, ordered.shape[0] - 1, out=at)
    keep = ordered[at] == indices
    renumbered = order[at[keep]].astype(np.int32)
    kept = np.zeros(indices.shape[0] + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    new_indptr = kept[indptr]
    new_data = None if data is None else data[keep]
    if order.shape[0] and not (np.diff(order) > 0).all():
        # columns appended by partial_fit are not sorted: sort each row again
        matrix = sp.csr_matrix((np.ones(renumbered.shape[0]) if new_data is None
                                else new_data, renumbered, new_indptr),
                               shape=(indptr.shape[0] - 1, columns.shape[0]))
        matrix.sort_indices()
        new_data = None if data is None else matrix.data
        renumbered, new_indptr = matrix.indices.astype(np.int32), matrix.indptr
    return SequenceMatrix._from_arrays(
        new_data, renumbered, new_indptr.astype(np.int64), columns.shape[0], X.offsets,
        None, dtype, X.parents, X.segments)


def column_names(columns):
    """The names ``"x<j>"`` of input columns ``columns`` (only those: not the width's)."""
    return np.asarray([f"x{j}" for j in columns.tolist()], dtype=object)


def check_feature_columns(model):
    """``feature_columns_`` are distinct input columns, one per weight column, named alike.

    Without it, ``n_features_in_`` is the width of the weights.
    """
    columns = vars(model).get("feature_columns_")
    n_weights = model.feature_names_.shape[0]
    if columns is None:
        if model.n_features_in_ != n_weights:
            raise ValueError(f"n_features_in_ is {model.n_features_in_}, but feature_names_ "
                             f"names {n_weights} features")
        return
    if columns.size and (columns.min() < 0 or columns.max() >= model.n_features_in_):
        raise ValueError(f"feature_columns_ holds a column outside 0..{model.n_features_in_ - 1}")
    if np.unique(columns).shape[0] != columns.shape[0]:
        raise ValueError("feature_columns_ holds a column twice")
    if getattr(model, "n_dense_features_in_", 0) or model.vectorizer_ is not None:
        raise ValueError("feature_columns_ is only kept for a SequenceMatrix without "
                         "feature names or dense block")
    if model.feature_names_.tolist() != column_names(columns).tolist():
        raise ValueError("feature_names_ are not the names x<j> of feature_columns_")
