"""Parameter layouts: named blocks of the flat weight vector, and sparse (feature, label) pairs."""

import numpy as np

from ..features._kernels import pair_expectations, pair_pattern, pair_products, pair_sums
from ..features.arrays import as_feature_arrays

#: Largest (n_features * n_labels) for which the observed pairs are found
#: through a dense boolean pattern rather than by sorting codes.
_DENSE_PATTERN_LIMIT = 1 << 26

#: ... and at most this many times the number of stored values: a small batch of
#: a wide (hashed) matrix finds its few pairs faster by sorting their codes.
_DENSE_PATTERN_PER_VALUE = 16

#: Partial sums of :func:`~skcrf.features._kernels.pair_expectations` kept per
#: chunk of tokens, in float64 values; the chunk count is fixed by the data.
_EXPECTATION_BUDGET = 1 << 22


class ParameterLayout:
    """Named, consecutive blocks of a flat weight vector.

    The one place a structure says where each kind of weight lives in ``w``.

    Parameters
    ----------
    blocks : list of (str, tuple of int)
        Name and shape of each block, in order.
    """

    def __init__(self, blocks):
        self.shapes = dict(blocks)
        self.slices = {}
        start = 0
        for name, shape in blocks:
            size = int(np.prod(shape, dtype=np.int64))
            self.slices[name] = slice(start, start + size)
            start += size
        self.n_parameters = start

    def __contains__(self, name):
        return name in self.shapes

    def view(self, w, name):
        """The block ``name`` of ``w`` in its shape (a view, no copy)."""
        return w[self.slices[name]].reshape(self.shapes[name])

    def views(self, w):
        """Every block of ``w`` by name, as views."""
        return {name: self.view(w, name) for name in self.shapes}

    def zeros(self):
        return np.zeros(self.n_parameters)


class StatePairs:
    """Which (feature, label) pairs carry a weight, feature by feature.

    Pair ``p`` belongs to the feature ``f`` with
    ``feature_ptr[f] <= p < feature_ptr[f + 1]`` and has label ``labels[p]``
    (CSR layout of a (n_features, n_labels) pattern). For state weights the
    labels are classes; for transition features they are label pairs
    ``a * n_classes + b``.
    """

    def __init__(self, feature_ptr, labels, n_labels):
        # int32 where it fits: half the memory the kernels read per non-zero
        index_type = np.int32 if len(labels) <= np.iinfo(np.int32).max else np.int64
        self.feature_ptr = np.ascontiguousarray(feature_ptr, dtype=index_type)
        self.labels = np.ascontiguousarray(labels, dtype=np.int32)
        self.n_labels = n_labels

    @classmethod
    def observed(cls, X, label_ids, n_labels, columns=None):
        """The pairs of a feature and a label that occur together in training.

        ``X`` is a sparse matrix or :class:`~skcrf.features.arrays.FeatureArrays`;
        ``label_ids`` holds one label per row of ``X``, or -1 for a row that
        takes no part; an explicitly stored zero counts as an occurrence.
        ``columns`` (bool mask over features) keeps only those features' pairs.
        """
        X = as_feature_arrays(X)
        label_ids = np.asarray(label_ids, dtype=np.int64)
        dense = X.n_features * n_labels <= min(_DENSE_PATTERN_LIMIT,
                                               _DENSE_PATTERN_PER_VALUE * X.indices.shape[0])
        if columns is None and dense:
            seen = pair_pattern(X.indices, X.indptr, label_ids, X.n_features, n_labels)
            features, labels = np.nonzero(seen)
        else:
            # a dense (n_features, n_labels) pattern of label pairs would be
            # too large (n_labels = n_classes ** 2): unique codes of the non-zeros
            row_labels = np.repeat(label_ids, np.diff(X.indptr))
            keep = row_labels >= 0
            if columns is not None:
                keep &= np.asarray(columns, dtype=bool)[X.indices]
            codes = np.unique(X.indices[keep].astype(np.int64) * n_labels + row_labels[keep])
            features, labels = np.divmod(codes, n_labels)
        return cls.from_coordinates(features, labels, X.n_features, n_labels)

    @classmethod
    def from_coordinates(cls, features, labels, n_features, n_labels):
        """Pairs from (feature, label) coordinates sorted by feature, then label."""
        feature_ptr = np.zeros(n_features + 1, dtype=np.int64)
        np.cumsum(np.bincount(features, minlength=n_features), out=feature_ptr[1:])
        return cls(feature_ptr, labels, n_labels)

    @classmethod
    def every(cls, n_features, n_labels, features=None):
        """All pairs of every feature (or of the given sorted ``features``) with every label."""
        if features is None:
            return cls(np.arange(n_features + 1) * n_labels,
                       np.tile(np.arange(n_labels), n_features), n_labels)
        features = np.asarray(features, dtype=np.int64)
        return cls.from_coordinates(np.repeat(features, n_labels),
                                    np.tile(np.arange(n_labels), features.shape[0]),
                                    n_features, n_labels)

    @property
    def n_pairs(self):
        return self.labels.shape[0]

    @property
    def n_features(self):
        return self.feature_ptr.shape[0] - 1

    def feature_of_pairs(self):
        """The feature of every pair, (n_pairs,) int64."""
        if self.n_pairs < self.n_features:
            # few pairs over many features (a hashed width): by bisection, not per feature
            return np.searchsorted(self.feature_ptr, np.arange(self.n_pairs), side="right") - 1
        return np.repeat(np.arange(self.n_features), np.diff(self.feature_ptr))

    def empirical_counts(self, X, label_ids):
        """Sum of each pair feature's value over the rows whose label is the pair's.

        Every (feature, label) of ``X`` and ``label_ids`` must have a pair, as
        with the pairs :meth:`observed` finds or :meth:`every` pair; rows with
        label -1 count for nothing.
        """
        X = as_feature_arrays(X)
        return pair_sums(*X.kernel_args(), np.asarray(label_ids, dtype=np.int64),
                         self.feature_ptr, self.labels)

    def scores(self, features, pair_weights):
        """(n_tokens, n_labels) scores: each token's sum of its features' pair weights."""
        return pair_products(*features.kernel_args(), self.feature_ptr, self.labels,
                             np.ascontiguousarray(pair_weights), self.n_labels)

    def expectations(self, features, marginals):
        """Expected value of every pair feature under per-token label ``marginals``.

        The adjoint of :meth:`scores`: ``marginals`` is (n_tokens, n_labels).
        """
        n_chunks = max(2, min(16, _EXPECTATION_BUDGET // max(self.n_pairs, 1)))
        return pair_expectations(*features.kernel_args(), self.feature_ptr, self.labels,
                                 np.ascontiguousarray(marginals), n_chunks)

    def codes(self):
        """``feature * n_labels + label`` of every pair, increasing (the pairs' order)."""
        return self.feature_of_pairs().astype(np.int64) * self.n_labels + self.labels

    def union(self, other):
        """The pairs of ``self`` or ``other`` (over as many labels), and where theirs went.

        Returns ``(union, positions, other_positions)``: pair ``p`` of
        ``self`` is pair ``positions[p]`` of the union, and likewise for
        ``other``. The union has the features of the wider of the two.
        """
        if other.n_labels != self.n_labels:
            raise ValueError(f"pairs over {self.n_labels} and {other.n_labels} labels "
                             f"cannot be merged.")
        mine, theirs = self.codes(), other.codes()
        codes = np.union1d(mine, theirs)
        features, labels = np.divmod(codes, self.n_labels)
        union = StatePairs.from_coordinates(features, labels,
                                            max(self.n_features, other.n_features),
                                            self.n_labels)
        return union, np.searchsorted(codes, mine), np.searchsorted(codes, theirs)

    def to_dense(self, pair_weights):
        """Weights as a (n_labels, n_features) array, 0 for absent pairs.

        Feature-major in memory (Fortran order): predict multiplies by its
        transpose, which is then C-contiguous, with no copy per call.
        """
        dense = np.zeros((self.n_features, self.n_labels)).T
        dense[self.labels, self.feature_of_pairs()] = pair_weights
        return dense

    def from_dense(self, dense):
        """The pair weights of a (n_labels, n_features) array: the inverse of :meth:`to_dense`.

        A weight that is not finite (a forbidden pair's ``-inf``) becomes 0.
        """
        return _finite_or_zero(np.asarray(dense)[self.labels, self.feature_of_pairs()])

    def from_sparse(self, matrix):
        """The pair weights of a sparse (n_features, n_labels) matrix, 0 where it has none."""
        matrix = matrix.tocsr()
        return _finite_or_zero(np.asarray(
            matrix[self.feature_of_pairs(), self.labels.astype(np.int64)]).ravel())


def _finite_or_zero(values):
    """A float copy of ``values`` with every non-finite entry set to 0."""
    values = np.array(values, dtype=np.float64)
    values[~np.isfinite(values)] = 0.0
    return values


def same_shapes(named, shapes):
    """Whether ``named`` has every block of ``shapes`` (name to shape), each of that shape."""
    return all(name in named and np.shape(named[name]) == tuple(shape)
               for name, shape in shapes.items())


def weights_of_blocks(layout, blocks, masks=()):
    """The flat weight vector of a layout from named blocks (0 for a missing block).

    The inverse of :meth:`ParameterLayout.views` for fitted coefficients: a
    block's entries that are not finite (forbidden transitions' ``-inf``) or
    that ``masks`` (name to an array of 0 and ``-inf``) forbids become 0,
    since the solver never moves a forbidden weight from 0.
    """
    w = layout.zeros()
    for name, values in blocks.items():
        view = layout.view(w, name)
        view[...] = _finite_or_zero(values)
        if name in masks:
            view[np.isneginf(masks[name])] = 0.0
    return w


class TokenStatistics:
    """Statistics ``Phi`` of some sequences in token form, before they are summed into ``w``.

    What online solvers read of one visited sequence (its gold or predicted
    labelling, or its expected statistics): they add it to a sparse step
    themselves, which a dense vector of every parameter per sequence would
    make as costly as the whole model.

    Parameters
    ----------
    rows : dict of str to ndarray of shape (n_tokens, n_labels)
        For each block of ``w`` laid out by a :class:`StatePairs` (a
        structure's ``pair_blocks()``), each token's coefficient per label:
        the statistic of pair ``p`` is the sum over tokens of the pair's
        feature value times ``rows[token, labels[p]]``.
    dense : dict of str to ndarray
        For every other block of ``w``, its statistics summed over the
        sequences, in the block's shape.
    """

    def __init__(self, rows, dense):
        self.rows = rows
        self.dense = dense

    def flatten(self, layout, pair_blocks, features):
        """The statistics as one vector in the layout of ``w`` (what tests compare)."""
        flat = layout.zeros()
        for name, rows in self.rows.items():
            flat[layout.slices[name]] = pair_blocks[name].expectations(features, rows)
        for name, values in self.dense.items():
            flat[layout.slices[name]] = np.ravel(values)
        return flat
