"""What runs on the workers in a distributed fit: one partition's data, from dicts to objective.

Every function here takes and returns plain objects (a partition's arrays, a
structure, weights), so that Dask can run it where the partition lives and
keep its result there. Nothing here talks to the scheduler.
"""

import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._estimators.columns import compacted, held_columns
from .._estimators.online import nonzero_weights
from .._utils.parallel import kernel_threads
from .._estimators.partial_labels import (PartialLabels, encode_partial_labels,
                                          holds_partial_labels, sequence_kinds)
from ..learning.partial import PartialLabelObjective
from .._utils.validation import (_numeric_sequences, check_finite_features, check_sequences,
                                 encode_labels)
from ..features._dense import check_finite
from ..features._vectors import vector_names
from ..features.arrays import FeatureArrays, all_feature_names
from ..features.sequence_matrix import SequenceMatrix
from ..features.vectorizer import SequenceVectorizer
from ..learning.objective import NegativeLogLikelihood
from ..structures._parameters import StatePairs


class PartitionError(ValueError):
    """Bad input in one partition, named by its index and its first sequence."""


def _in_partition(index, first, error):
    """``error``'s type with its message prefixed by the partition it comes from."""
    where = f"partition {index}" + (" (sequences counted within it)" if first is None
                                    else f" (its sequence 0 is sequence {first} of X)")
    # the built-in kind, not the error's own class, whose constructor may take
    # more than a message (FeatureValueError)
    kind = (ValueError if isinstance(error, ValueError) else
            TypeError if isinstance(error, TypeError) else PartitionError)
    return kind(f"{where}: {error}")


class RawPartition:
    """One partition read on its worker: its features under a local vocabulary, its labels.

    The local vocabulary (names in order of appearance) is the map step of the
    global one; :func:`encoded_partition` later moves the columns to the
    global order by name, one lookup per distinct name.

    Attributes
    ----------
    index : int
    matrix : SequenceMatrix or None
        None for a partition with no sequence.
    classes : ndarray of shape (n_local_classes,)
    label_ids : ndarray of int64 of shape (n_tokens,)
        Indices into ``classes``; -1 for a token of unknown (None) or set label.
    allowed : ndarray of bool of shape (n_tokens, n_local_classes) or None
        With partial labels in ``y``: the classes each token may take.
    positional : bool
        Whether the columns are read by position (numeric arrays, DataFrames,
        SequenceMatrix), as a local ``fit`` reads them without a vectorizer;
        otherwise they are named by feature dicts.
    vector_widths : dict of str to int
        For feature dicts: the length of each vector key met here (its
        columns are ``matrix.dense``'s, in sorted key order).
    """

    def __init__(self, index, matrix, classes, label_ids, weights=None, allowed=None,
                 positional=False, vector_widths=None):
        self.index = index
        self.matrix = matrix
        self.classes = classes
        self.label_ids = label_ids
        self.weights = weights
        self.allowed = allowed
        self.positional = positional
        self.vector_widths = {} if vector_widths is None else vector_widths

    @property
    def n_sequences(self):
        return 0 if self.matrix is None else len(self.matrix)

    def summary(self):
        """(n_sequences, n_tokens, feature names, labels, layout): what the client reduces.

        The feature names are the sparse columns' of feature dicts (an empty
        list for positional columns); ``layout`` is the partition's
        :class:`ColumnLayout` (None for no sequence).
        """
        if self.matrix is None:
            return 0, 0, [], [], None
        names = [] if self.positional else self.matrix.feature_names.tolist()
        return (self.n_sequences, int(self.matrix.offsets[-1]), names, self.classes.tolist(),
                ColumnLayout.of_partition(self))


@dataclass(eq=False)
class ColumnLayout:
    """What the client checks and merges of a partition's columns, beside their names.

    Attributes
    ----------
    positional : bool
        See :class:`RawPartition`.
    n_sparse : int
        Sparse columns of a positional partition (0 for feature dicts, whose
        sparse columns are reduced by name).
    names : tuple of str or None
        Every column's name, sparse then dense, of a positional partition
        (None when all are unnamed, as a local fit names them ``x<i>``).
    vector_widths : dict of str to int
        Feature dicts: each vector key's length; positional: ``{"": n_dense}``
        when there is a dense block.
    float32 : bool or None
        Whether the dense block is float32 (None for no dense block).
    used : ndarray of int64 or None
        The sorted sparse columns the partition holds an entry in, when a
        fit may keep only the used columns
        (:func:`~skcrf._estimators.columns.held_columns`: positional, no
        names, no dense block, a wide input); None otherwise.
    """

    positional: bool
    n_sparse: int
    names: Optional[tuple]
    vector_widths: dict
    float32: Optional[bool]
    used: Optional[np.ndarray] = None

    @classmethod
    def of_partition(cls, raw):
        matrix = raw.matrix
        float32 = None if matrix.dense is None else matrix.dense.dtype == np.float32
        if not raw.positional:
            return cls(False, 0, None, dict(raw.vector_widths), float32)
        names = all_feature_names(matrix)
        return cls(True, matrix.n_features, None if names is None else tuple(names.tolist()),
                   {"": matrix.n_dense} if matrix.n_dense else {}, float32,
                   held_columns(matrix))

    @property
    def n_dense(self):
        return sum(self.vector_widths.values())


def _positional_matrix(X):
    """The SequenceMatrix of a partition of numeric sequences or SequenceMatrix elements.

    A partition may be a SequenceMatrix itself (a bag made with
    ``dask.bag.from_delayed``), a list of 2-D arrays or DataFrames (one per
    sequence), or a list of SequenceMatrix (stacked; their dense blocks are
    copied once, into the stacked block).
    """
    if isinstance(X, SequenceMatrix):
        return X
    if not all(isinstance(x, SequenceMatrix) for x in X):
        return SequenceMatrix.from_sequences(X)
    first = X[0]
    for q, x in enumerate(X):
        if (x.n_features, x.n_dense) != (first.n_features, first.n_dense):
            raise ValueError(
                f"Element {q} is a SequenceMatrix of {x.n_features} sparse and {x.n_dense} "
                f"dense columns; element 0 has {first.n_features} and {first.n_dense}: "
                f"every element needs the same columns.")
        if x.parents is not None or x.segments is not None:
            raise ValueError(f"Element {q} is a SequenceMatrix with parents or segments; "
                             f"give such data as one SequenceMatrix per partition.")
    import scipy.sparse as sp

    offsets = np.concatenate([[0], np.cumsum([int(n) for x in X for n in x.lengths])])
    matrix = sp.vstack([x.matrix for x in X], format="csr")
    dense = None
    if first.n_dense:
        dtype = (np.float32 if all(x.dense.dtype == np.float32 for x in X) else np.float64)
        dense = np.concatenate([x.dense.astype(dtype, copy=False) for x in X])
    return SequenceMatrix(matrix, offsets, first.feature_names, dense=dense,
                          dense_names=first.dense_names)


def _is_positional(X):
    return isinstance(X, SequenceMatrix) or _numeric_sequences(X) or (
        isinstance(X, list) and X and all(isinstance(x, SequenceMatrix) for x in X))


def read_partition(index, X, y, sample_weight=None):
    """The :class:`RawPartition` of the sequences ``X`` and labels ``y`` of one partition.

    With ``sample_weight`` (one per sequence), the sequences of weight 0 are
    left out, as a local ``fit`` leaves them out; the others' weights are
    kept (None when all are 1).
    """
    weights = None
    try:
        if not isinstance(X, SequenceMatrix):
            X = list(X)
        positional = _is_positional(X)
        if positional:
            X = _positional_matrix(X)
        else:
            X = check_sequences(X, matrix_ok=False)
        y = list(y)
        if sample_weight is not None:
            X, y, weights = nonzero_weights(X, y, list(sample_weight), allow_empty=True)
        if len(X) == 0:
            if len(y):
                raise ValueError(f"X has no sequence but y has {len(y)}.")
            return RawPartition(index, None, np.empty(0), np.empty(0, dtype=np.int64))
        vector_widths = None
        if positional:
            matrix = X
            matrix._check_consistency()
            if matrix.segments is not None:
                raise ValueError(_NO_SEGMENTS)
        else:
            vectorizer = SequenceVectorizer(sort=False)
            matrix = vectorizer.fit_transform(X)
            vector_widths = vectorizer.vector_widths_
        allowed = None
        if all(label is None for labels in y for label in labels):
            # no label at all here: the other partitions bring the classes
            classes = np.empty(0, dtype=object)
            label_ids = np.full(int(matrix.offsets[-1]), -1, dtype=np.int64)
            allowed = np.ones((label_ids.shape[0], 0), dtype=bool)
        elif holds_partial_labels(y):
            partial = encode_partial_labels(y, matrix.lengths)
            classes, label_ids, allowed = partial.classes, partial.label_ids, partial.allowed
        else:
            classes, label_ids = encode_labels(y, matrix.lengths)
    except (ValueError, TypeError) as error:
        raise _in_partition(index, None, error) from error
    return RawPartition(index, matrix, classes, label_ids, weights, allowed, positional,
                        vector_widths)


_NO_SEGMENTS = ("X carries features of segments (TokenFeaturizer(segment_features=...)), "
                "which skcrf.dask.fit does not take yet: fit on one machine, or featurize "
                "without segment_features.")


def partition_summary(raw):
    return raw.summary()


@dataclass(eq=False)
class EncodedPartition:
    """One partition in the global vocabulary and label ids, as :class:`TrainingData` holds them.

    Attributes
    ----------
    index, first : int
        The partition's index and the global index of its first sequence.
    features : FeatureArrays or None
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    label_ids : ndarray of int64 of shape (n_tokens,)
        Indices into the global classes; the targets of the structure's
        gold statistics (segment codes for a semi-Markov model) once a plan
        has :func:`relabelled` the partition.
    """

    index: int
    first: int
    features: Any
    offsets: np.ndarray
    label_ids: np.ndarray
    weights: Optional[np.ndarray] = None
    #: PartialLabels in the global classes, with unknown or set labels in y
    partial: Any = None

    @property
    def empty(self):
        return self.features is None

    def __sizeof__(self):
        # what Dask's scheduler reads (dask.sizeof falls back to sys.getsizeof):
        # without it a partition looks tiny and is copied to wherever a task runs
        return _array_bytes(self, self.features)


@dataclass(eq=False)
class GlobalColumns:
    """The columns every partition is encoded into, as a local fit of all of them has them.

    Attributes
    ----------
    vectorizer : SequenceVectorizer or None
        Feature dicts' vocabulary and vector lengths (the fitted
        ``vectorizer_``); None for positional columns.
    n_sparse : int
        Sparse columns (the vocabulary's, or the positional ones).
    vector_widths : dict of str to int
        Dense columns: each vector key's length, in the dense block's order
        (``{"": n_dense}`` for a positional block); empty for none.
    float32 : bool
        The dense block's dtype (float32 only when every partition's is).
    keep_dense : bool
        Whether the structure multiplies the dense block by BLAS; otherwise
        the partitions copy it into CSR columns after the sparse ones (the
        estimator's own choice, :meth:`_reads_dense_block`).
    names : ndarray of object or None
        Every column's name, sparse then dense (None: all unnamed, ``x<i>``).
    kept : ndarray of int64 or None
        The input columns the model keeps (``feature_columns_``) when a wide
        nameless input is compacted as a local fit compacts it: every
        partition renumbers them ``0..k-1``. None: every column is kept.
    """

    vectorizer: Any
    n_sparse: int
    vector_widths: dict
    float32: Optional[bool]
    keep_dense: bool
    names: Optional[np.ndarray]
    kept: Optional[np.ndarray] = None

    @property
    def n_dense(self):
        return sum(self.vector_widths.values())

    @property
    def dtype(self):
        return np.float32 if self.float32 else np.float64

    def dense_block(self, raw, n_tokens):
        """The partition's dense block in the global layout; not a copy when it is one already.

        A partition that met fewer vector keys gets zeros in the others'
        columns, as a token without a vector key has.
        """
        matrix = raw.matrix
        if not self.n_dense:
            return None
        local = {"": matrix.n_dense} if raw.positional else raw.vector_widths
        if local == self.vector_widths:
            return matrix.dense.astype(self.dtype, copy=False)
        block = np.zeros((n_tokens, self.n_dense), dtype=self.dtype)
        starts, at = {}, 0
        for key, width in local.items():
            starts[key] = at
            at += width
        at = 0
        for key, width in self.vector_widths.items():
            if key in starts:
                block[:, at:at + width] = matrix.dense[:, starts[key]:starts[key] + width]
            at += width
        return block


def encoded_partition(raw, first, columns, classes):
    """The :class:`EncodedPartition` of ``raw`` in the :class:`GlobalColumns` and classes."""
    if raw.matrix is None:
        return EncodedPartition(raw.index, first, None, np.zeros(1, dtype=np.int64),
                                np.empty(0, dtype=np.int64))
    if raw.matrix.segments is not None:
        raise _in_partition(raw.index, first, ValueError(_NO_SEGMENTS))
    try:
        if raw.positional:
            matrix = raw.matrix
            if columns.kept is not None:
                matrix = compacted(matrix, columns.kept)
        else:
            matrix = columns.vectorizer.transform(raw.matrix)
        dense = columns.dense_block(raw, int(matrix.offsets[-1]))
        if dense is not None and dense is not matrix.dense:
            names = (raw.matrix.dense_names if raw.positional
                     else vector_names(columns.vector_widths))
            matrix = SequenceMatrix(matrix.matrix, matrix.offsets, matrix.feature_names,
                                    parents=matrix.parents, dense=dense, dense_names=names)
        check_finite_features(matrix)
        if matrix.dense is not None:
            check_finite(matrix.dense, matrix.offsets, matrix.dense_names)
    except (ValueError, TypeError) as error:
        raise _in_partition(raw.index, first, error) from error
    features = FeatureArrays.of_sequences(matrix, columns.keep_dense)
    index = {label: k for k, label in enumerate(classes.tolist())}
    remap = np.fromiter((index[label] for label in raw.classes.tolist()), dtype=np.int64,
                        count=raw.classes.shape[0])
    if raw.allowed is None:
        return EncodedPartition(raw.index, first, features, matrix.offsets,
                                remap[raw.label_ids], raw.weights)
    known = raw.label_ids >= 0
    label_ids = np.full(raw.label_ids.shape[0], -1, dtype=np.int64)
    label_ids[known] = remap[raw.label_ids[known]]
    unknown = raw.allowed.all(axis=1) & ~known
    allowed = np.zeros((label_ids.shape[0], classes.shape[0]), dtype=bool)
    allowed[:, remap] = raw.allowed
    allowed[unknown] = True  # any class, those of other partitions too
    partial = PartialLabels(classes, label_ids, allowed,
                            sequence_kinds(label_ids, unknown, matrix.lengths))
    return EncodedPartition(raw.index, first, features, matrix.offsets, label_ids,
                            raw.weights, partial)


def _array_bytes(*objects):
    """Bytes of the numpy arrays among the attributes of ``objects`` (None skipped)."""
    return sum(value.nbytes for obj in objects if obj is not None
               for value in vars(obj).values() if isinstance(value, np.ndarray))


def relabelled(part, label_ids):
    """``part`` with other label ids (after tags were repaired), sharing its features."""
    return EncodedPartition(part.index, part.first, part.features, part.offsets, label_ids,
                            part.weights, part.partial)


def observed_pairs(part, label_ids, n_labels, columns=None):
    """Codes ``feature * n_labels + label`` of the pairs :meth:`StatePairs.observed` finds.

    Sorted and unique; ``label_ids`` of -1 take no part. The union over
    partitions, sorted, is the global pattern (:func:`union_pairs`).
    """
    if part.empty:
        return np.empty(0, dtype=np.int64)
    return pair_codes(StatePairs.observed(part.features, label_ids, n_labels, columns=columns))


def pair_codes(pairs):
    """Codes ``feature * n_labels + label`` of a :class:`StatePairs`, in its (sorted) order."""
    return pairs.feature_of_pairs().astype(np.int64) * pairs.n_labels + pairs.labels


def union_pairs(codes, n_features, n_labels):
    """The :class:`StatePairs` of every partition's pairs: the global ``observed`` pattern."""
    union = np.unique(np.concatenate(codes)) if codes else np.empty(0, dtype=np.int64)
    features, labels = np.divmod(union, n_labels)
    return StatePairs.from_coordinates(features, labels, n_features, n_labels)


class PartitionObjective:
    """A partition's gold statistics and its ``w -> (log_z, expected)``, kept on its worker.

    The L2 term is not here: the client adds it once to the sum of the parts
    (:meth:`NegativeLogLikelihood.of_terms`).
    """

    def __init__(self, part, structure, n_jobs):
        self.part = part
        self.n_jobs = n_jobs
        self.n_parameters = structure.n_parameters
        self.seconds = 0.0  # spent in the kernels, for the benchmark's overhead figure
        self.objective = None
        if not part.empty:
            try:  # the gold statistics check the targets against the structure
                if part.partial is not None:
                    # its fully labelled sequences' terms, and its constrained ones'
                    self.objective = PartialLabelObjective(
                        structure, part.features, part.offsets, part.partial, l2=0.0,
                        sequence_weights=part.weights)
                else:
                    self.objective = NegativeLogLikelihood(
                        structure, part.features, part.offsets, part.label_ids, l2=0.0,
                        sequence_weights=part.weights)
            except ValueError as error:
                raise _in_partition(part.index, part.first, error) from error

    def __sizeof__(self):
        # the partition, its gold statistics and the structure's arrays: see
        # EncodedPartition.__sizeof__
        if self.objective is None:
            return object.__sizeof__(self)
        return (sys.getsizeof(self.part) + self.empirical().nbytes
                + _array_bytes(self.objective.structure))

    def empirical(self):
        full = self.objective
        if isinstance(full, PartialLabelObjective):
            full = full.full  # the constrained sequences have no gold statistics
        if full is None:
            return np.zeros(self.n_parameters)
        return full.empirical

    def _terms(self, w):
        """``(log Z summed, expected)``; a constrained sequence adds its difference."""
        objective = self.objective
        if not isinstance(objective, PartialLabelObjective):
            log_z, expected = objective.terms(w)
            return float(log_z.sum()), expected
        log_z, expected = 0.0, np.zeros(self.n_parameters)
        if objective.full is not None:
            full_log_z, expected = objective.full.terms(w)
            log_z = float(full_log_z.sum())
        if objective.constrained is not None:
            difference, expected_difference = objective.constrained(w)
            log_z += float(difference)
            expected = expected + expected_difference
        return log_z, expected

    def __call__(self, w):
        """``(sum of log Z over the partition, expected statistics)`` at ``w``."""
        if self.objective is None:
            return 0.0, np.zeros(self.n_parameters)
        # the solver's arithmetic reports overflow as inf, as the local fit does
        started = time.perf_counter()
        with kernel_threads(self.n_jobs), np.errstate(over="ignore", invalid="ignore"):
            log_z, expected = self._terms(w)
        self.seconds += time.perf_counter() - started
        return log_z, expected


def partition_objective(part, structure, n_jobs):
    return PartitionObjective(part, structure, n_jobs)


def identity(value):
    """The task that holds a value the client made: recomputable if its worker dies."""
    return value


def partition_empirical(objective):
    return objective.empirical()


def evaluate(objective, w):
    return objective(w)


def kernel_seconds(objective):
    return objective.seconds


def objective_largest_value(objective):
    return largest_value(objective.part)


def largest_value(part):
    """``(|value|, value, sequence, token, column)`` of the partition's largest feature value.

    The sequence is numbered globally; None if every value is 1.
    """
    features = None if part.empty else part.features
    if features is None or features.data is None or features.data.shape[0] == 0:
        return None
    k = int(np.argmax(np.abs(features.data)))
    row = int(np.searchsorted(features.indptr, k, side="right") - 1)
    q = int(np.searchsorted(part.offsets, row, side="right") - 1)
    value = float(features.data[k])
    return abs(value), value, q + part.first, row - int(part.offsets[q]), int(features.indices[k])
