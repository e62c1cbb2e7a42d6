"""SequenceVectorizer: DictVectorizer for sequences of per-token feature dicts."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from itertools import repeat
from typing import Optional

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._estimators.fitted_state import Fitted, FittedState, IfPresent, Names, StrList, TypeOf, saved_as
from .._utils.docstrings import fill_sections
from .._utils.parallel import kernel_exceptions
from .._utils.tags import sequence_tags
from .._utils.type_aliases import FeatureSequences, LabelSequences
from .._utils.validation import _PLAIN_SEQUENCES, check_sequences
from ._columns_by_key import ColumnsByKey, columns_by_key, forget_tables
from ._csr_arrays import (_as_names, _canonical, _drop_columns, _named_matrix_arrays,
                          _remap_in_place, _strictly_increasing)
from ._dict_arrays import FeatureValueError, _release_freed_memory, _vectorize_compact
from ._dict_pairs import small_pairs as _small_pairs
from ._kernels import column_counts, remap_columns
from ._numbering import factorize
from ._names_out import NamesOutMixin
from ._output import SequenceOutputMixin
from ._small import PendingFeatures
from ._parents import PARENT_KEY
from ._vectors import VectorSink, is_vector, split_vectors, vector_names
from .sequence_matrix import SequenceMatrix, values_or_none


#: The most feature values ``_plain_arrays`` takes in one call: a batch of a
#: few dozen sentences (a server's micro-batch) still goes by the remembered
#: pairs, whose cost per value is the flat path's or less; past it the
#: remembered pairs (at most 65,536) would be forgotten within the call.
_PLAIN_VALUES = 1 << 15


def _vocabulary_numbers_the_names(vectorizer):
    """``vocabulary_`` maps each name of ``feature_names_`` to its index, and only those.

    Its values become column indices that the kernels use unchecked.
    """
    names = vectorizer.feature_names_
    if vectorizer.vocabulary_ != dict(zip(names, range(len(names)))):
        raise ValueError(f"vocabulary_ does not map each of the {len(names)} names of "
                         f"feature_names_ to its index")
    saved = vars(vectorizer).get("_names_out")
    if saved is not None and saved.tolist() != names:
        raise ValueError("_names_out is not feature_names_")


def _values_are_numbers(vectorizer):
    kind = np.dtype(vectorizer.dtype).kind
    if kind not in "biuf":
        raise ValueError(f"dtype is {vectorizer.dtype!r}; feature values are real numbers")


# The Parameters section fit and fit_transform share (``<<fit_parameters>>``)
_shared_docs = fill_sections({"fit_parameters": """\
        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix with feature_names
            Token feature dicts, or the output of :class:`TokenFeaturizer`.
        y : None
            Ignored.
"""})


@saved_as("skcrf.SequenceVectorizer")
class SequenceVectorizer(NamesOutMixin, SequenceOutputMixin, TransformerMixin, BaseEstimator,
                         auto_wrap_output_keys=None):
    """Turn sequences of per-token feature dicts into one sparse matrix.

    The sequence counterpart of :class:`sklearn.feature_extraction.DictVectorizer`
    and the input format of sklearn-crfsuite: ``X`` is a list of sequences, each
    a list of dicts mapping feature names to values.

    - a ``str`` value gives the one-hot feature ``name=value`` (see ``separator``);
    - a real number or a ``bool`` gives the real-valued feature ``name``;
    - a list, tuple or set of ``str`` gives one one-hot feature per item;
    - a 1-D numpy array is a vector: its numbers become the dense columns
      ``key[0]..key[d-1]`` of the output's :attr:`~SequenceMatrix.dense`
      block, which :class:`CRFClassifier` multiplies by BLAS. The array type
      is the marker: a list of floats is not a vector (wrap it in
      ``np.asarray``). One key has one length throughout (another length is
      an error naming the sequence, token, key and both lengths); a token
      without the key has zeros there. ``vector_widths_`` keeps the lengths.

    Any other value (None, a nested mapping, ...) raises a ``TypeError`` naming
    the sequence, the token and the key.

    Feature names are always ``str``: a key that is not a ``str`` stands for
    ``str(key)``, as in the names DictVectorizer makes of string values. So
    the keys ``1``, ``True`` and ``1.0`` are three features (``"1"``,
    ``"True"`` and ``"1.0"``), the keys ``1`` and ``"1"`` are one, and the rule
    is the same in ``fit`` and ``transform`` and for the column names of a
    :class:`SequenceMatrix`. Two keys of one token that make the same name add
    up, as for ``{"w=x": "y", "w": "x=y"}``.

    ``X`` may also be a :class:`SequenceMatrix` with ``feature_names`` (what
    :class:`TokenFeaturizer` emits): its columns are then matched to the fitted
    vocabulary by name, one lookup per distinct name, with no per-token dicts.
    Its features of candidate segments (:attr:`SequenceMatrix.segments`, for
    :class:`SemiMarkovCRF`) get a vocabulary of their own, learned by a
    vectorizer of the same parameters (``segment_vectorizer_``). An output of
    TokenFeaturizer for a few sentences that nothing has read yet goes from
    its tokens to the fitted columns directly: each distinct word or column
    value's columns are looked up once and remembered beside the vectorizer.

    The output is a :class:`SequenceMatrix`: one CSR matrix over all tokens plus
    sequence offsets, which :class:`CRFClassifier` consumes directly.

    Trees travel with the features: the key ``"__parent__"`` of a token dict
    is no feature but the token's parent in its sequence's tree (an index
    within the sequence, -1 or None for a root), and becomes the output's
    ``parents`` (:class:`TreeCRF` needs them). If one token has it, every token
    must. A :class:`SequenceMatrix` input passes its ``parents`` on.

    Parameters
    ----------
    dtype : dtype, default=np.float64
        Type of the matrix values.
    separator : str, default="="
        Put between a feature name and a string value.
    sort : bool, default=True
        Whether ``feature_names_`` and the columns are sorted by name; if False
        they follow the order in which ``fit`` first met them.
    min_freq : int, default=1
        Keep only features that are non-zero in at least this many tokens of
        the training data (CRFsuite's ``feature.minfreq``). With the default,
        every name met in ``fit`` is kept, even one whose values were all zero.

    Attributes
    ----------
    vocabulary_ : dict
        Feature name to column index.
    feature_names_ : list of str
        Column index to feature name (sparse columns).
    vector_widths_ : dict of str to int
        The length of each vector key met in ``fit`` (empty for none); its
        columns are the output's dense block, named ``key[0]``, ``key[1]``...
    segment_vectorizer_ : SequenceVectorizer or None
        The vectorizer of the features of candidate segments, when ``fit``
        received a SequenceMatrix with ``segments``; None otherwise.

    See Also
    --------
    sklearn.feature_extraction.DictVectorizer : The same for single samples.
    TokenFeaturizer : Features straight from raw tokens, without dicts.

    Examples
    --------
    >>> from skcrf import SequenceVectorizer
    >>> X = [[{"word": "Hello", "upper": False}, {"word": "world", "len": 5}]]
    >>> vec = SequenceVectorizer()
    >>> Xt = vec.fit_transform(X)
    >>> vec.feature_names_
    ['len', 'upper', 'word=Hello', 'word=world']
    >>> Xt[0].toarray()
    array([[0., 0., 1., 0.],
           [5., 0., 0., 1.]])
    >>> vec.transform([[{"word": "world", "unseen": 1.0}]])[0].toarray()
    array([[0., 0., 0., 1.]])
    """

    _dataframe_hint = (" A DataFrame of the features: pandas.DataFrame.sparse.from_spmatrix("
                       "Xt.matrix, columns=vectorizer.feature_names_).")

    _parameter_constraints = {
        "dtype": "no_validation",
        "separator": [str],
        "sort": ["boolean"],
        "min_freq": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    _fitted_state = FittedState(
        {"feature_names_": StrList("n_features"), "vocabulary_": TypeOf(dict),
         # the names as the outputs share them (set by fit; absent from older files)
         "_names_out": IfPresent(Names("n_features")),
         # the length of each vector key's values (absent from older files)
         "vector_widths_": IfPresent(TypeOf(dict)),
         # the vocabulary of segment features (SequenceMatrix.segments): a
         # vectorizer of this class
         "segment_vectorizer_": IfPresent(Fitted("skcrf.SequenceVectorizer", none_ok=True))},
        rules=[_vocabulary_numbers_the_names, _values_are_numbers])

    def __init__(self, *, dtype=np.float64, separator="=", sort=True, min_freq=1):
        self.dtype = dtype
        self.separator = separator
        self.sort = sort
        self.min_freq = min_freq

    def _set_names(self, names):
        """Make the list ``names`` the fitted columns, in its order."""
        self.feature_names_ = names
        self.vocabulary_ = dict(zip(names, range(len(names))))
        # shared, read-only, by every output: transform would otherwise copy
        # every name (250 of 765 us to predict one sentence through a pipeline)
        self._names_out = np.asarray(names, dtype=object)
        self._names_out.flags.writeable = False
        return self

    @_shared_docs
    def fit(self, X: FeatureSequences,
            y: Optional[LabelSequences] = None) -> SequenceVectorizer:
        """Learn the feature names of ``X``.

        <<fit_parameters>>

        Returns
        -------
        self : SequenceVectorizer
            The fitted vectorizer.
        """
        self.fit_transform(X)
        return self

    @_shared_docs
    def fit_transform(self, X: FeatureSequences,
                      y: Optional[LabelSequences] = None) -> SequenceMatrix:
        """Learn the feature names of ``X`` and return its matrix, in one pass.

        <<fit_parameters>>

        Returns
        -------
        Xt : SequenceMatrix
            One row per token, one column per kept feature name.
        """
        # a Ctrl-C while a kernel runs comes out as KeyboardInterrupt, not as the
        # SystemError numba wraps it in
        with kernel_exceptions():
            X = check_sequences(X)  # a one-shot iterator, read once
            self.vector_widths_ = {}
            try:
                matrix = self._to_matrix(*self._fit_arrays(X))
            except FeatureValueError as error:
                if not is_vector(error.value):
                    raise
                matrix = self._fit_with_vectors(X)
            _carry_dense(X, matrix)
            segments = X.segments if isinstance(X, SequenceMatrix) else None
            self.segment_vectorizer_ = None
            if segments is not None:
                self.segment_vectorizer_ = SequenceVectorizer(
                    dtype=self.dtype, separator=self.separator, sort=self.sort,
                    min_freq=self.min_freq)
                matrix.segments = self.segment_vectorizer_.fit_transform(segments)
        return matrix

    def _fit_with_vectors(self, X):
        """:meth:`fit_transform`'s matrix of dicts holding vectors, with its dense block.

        Key by key, the vectors are gathered while the other values are read
        (one pass, no dict copied); input that route does not take (mixed
        layouts, unsorted names, every error) goes through
        :func:`~._vectors.split_vectors`, which names the token at fault.
        """
        sink = VectorSink()
        arrays = self._fit_arrays(X, sink) if self.sort else None
        if arrays is None:
            stripped, dense, widths = split_vectors(X)
            arrays = self._fit_arrays(stripped)
        else:
            dense, widths = sink.dense(int(arrays[3][-1]))
        self.vector_widths_ = widths
        return self._with_vectors(self._to_matrix(*arrays), dense)

    def _fit_arrays(self, X, vectors=None):
        """Fit, and return the output's arrays in the compact form of ``_vectorize_compact``.

        :class:`CRFClassifier` trains on these arrays directly, so that the
        float values of indicator features are never allocated. With
        ``vectors`` (a :class:`~._vectors.VectorSink`, dicts only), None if
        that route does not take ``X``.
        """
        self._validate_params()
        forget_tables(self)  # the old vocabulary's: not kept alive until the next transform
        X, parents = _split_parents(check_sequences(X))
        names_sorted = False
        if isinstance(X, SequenceMatrix):
            data, indices, indptr, offsets = _named_matrix_arrays(X)
            names = _as_names(X.feature_names)
            # TokenFeaturizer's names are sorted already: then they are unique,
            # and neither the names nor the rows need reordering
            names_sorted = _strictly_increasing(names)
            if not names_sorted:
                # distinct columns may share a name: give them one column
                name_ids, names = factorize(names)
                _remap_in_place(indices, name_ids.astype(np.int32))
        else:
            vocabulary = {}
            # names found key by key, in no order of occurrence: only if sorted after
            tables = ColumnsByKey(vocabulary, self.separator, grow=True) if self.sort else None
            arrays = _vectorize_compact(X, vocabulary, True, self.separator, tables, vectors)
            if arrays is None:
                return None
            data, indices, indptr, offsets = arrays
            names = list(vocabulary)
            _check_no_parent_names(vocabulary, self.separator)
            del vocabulary
            # the chunks' temporaries leave heap pages behind; never on the
            # predict path (70% of a short predict)
            _release_freed_memory()
        if self.min_freq > 1:
            # count tokens, not entries: merge the repeats of a list value first
            data, indices, indptr = _canonical(data, indices, indptr, len(names))
            keep = column_counts(indices, len(names)) >= self.min_freq
            order = np.flatnonzero(keep)
        else:
            order = np.arange(len(names))
        if self.sort and not names_sorted:
            # Python's sort: no fixed-width copy of every name, as numpy's would make
            text = list(map(str, names))
            order = np.asarray(sorted(order.tolist(), key=text.__getitem__), dtype=np.int64)
        reordered = order.shape[0] != len(names) or (self.sort and not names_sorted)
        # map/zip build these in C: 4x faster than comprehensions for 77k names
        self._set_names(list(map(names.__getitem__, order.tolist())) if reordered
                        else names)
        if reordered:
            # column remap: old index -> new index, -1 for dropped features
            remap = np.full(len(names), -1, dtype=np.int32)
            remap[order] = np.arange(order.shape[0], dtype=np.int32)
            _remap_in_place(indices, remap)
            data, indices, indptr = _drop_columns(data, indices, indptr)
        data, indices, indptr = _canonical(data, indices, indptr, len(self.feature_names_))
        return data, indices, indptr, offsets, parents

    def transform(self, X: FeatureSequences) -> SequenceMatrix:
        """Turn ``X`` into a matrix; features unseen in ``fit`` are ignored.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix with feature_names
            Token feature dicts, or the output of :class:`TokenFeaturizer`.

        Returns
        -------
        Xt : SequenceMatrix
            One row per token, the columns of ``feature_names_``.
        """
        if type(X) is list:
            # a few sentences of plain dicts (a request to a pipeline): predict's
            # short path, the same output
            matrix = self._plain_transform(X)
            if matrix is not None:
                return matrix
        elif type(X) is PendingFeatures and "vocabulary_" in self.__dict__:
            # a TokenFeaturizer's few sentences, unread: columns without names
            with kernel_exceptions():
                arrays = X._read_into(self)
            if arrays is not None:
                return self._to_matrix(None, *arrays, None)
        with kernel_exceptions():  # as in fit_transform
            widths = getattr(self, "vector_widths_", None)  # absent from older files
            if widths and not isinstance(X, SequenceMatrix):
                X = check_sequences(X)
                sink = VectorSink(widths)
                arrays = self._transform_arrays(X, sink)  # as in _fit_with_vectors
                if arrays is None:
                    stripped, dense, _ = split_vectors(X, widths)
                    arrays = self._transform_arrays(stripped)
                else:
                    dense, _ = sink.dense(int(arrays[3][-1]))
                matrix = self._with_vectors(self._to_matrix(*arrays), dense)
            else:
                matrix = self._to_matrix(*self._transform_arrays(X))
                _carry_dense(X, matrix)
            # fitted without segments (or by an earlier skcrf): no vocabulary for them
            vectorizer = getattr(self, "segment_vectorizer_", None)
            if (vectorizer is not None and isinstance(X, SequenceMatrix)
                    and X.segments is not None):
                matrix.segments = vectorizer.transform(X.segments)
        return matrix

    def _transform_arrays(self, X, vectors=None):
        """:meth:`transform`'s arrays in the compact form of ``_vectorize_compact``.

        With ``vectors`` (a :class:`~._vectors.VectorSink`), None if that
        route does not take ``X``.
        """
        # sklearn's check reads the estimator's tags first, a cost every
        # one-sentence transform would pay: call it only to raise its error
        if not hasattr(self, "vocabulary_"):
            check_is_fitted(self, "vocabulary_")
        X, parents = _split_parents(check_sequences(X))
        if isinstance(X, SequenceMatrix):
            data, indices, indptr, offsets = _named_matrix_arrays(X, copy=False)
            # one dictionary lookup per distinct column name, not per token
            remap = np.fromiter(map(self.vocabulary_.get, _as_names(X.feature_names),
                                    repeat(-1)), dtype=np.int32, count=X.n_features)
            if data is None or data.dtype == np.float64:
                # new arrays in one kernel call rather than a dozen numpy ones
                binary = data is None
                data, indices, indptr = remap_columns(
                    np.empty(0) if binary else data, indices, indptr, remap, binary)
                data = None if binary else data
            else:  # values of another type: numpy keeps it
                data, indices, indptr = data.copy(), indices.copy(), indptr.copy()
                _remap_in_place(indices, remap)
                data, indices, indptr = _drop_columns(data, indices, indptr)
        else:
            arrays = _vectorize_compact(X, self.vocabulary_, False, self.separator,
                                        columns_by_key(self), vectors)
            if arrays is None:
                return None
            data, indices, indptr, offsets = arrays
        data, indices, indptr = _canonical(data, indices, indptr, len(self.feature_names_))
        return data, indices, indptr, offsets, parents

    def _plain_arrays(self, X):
        """The arrays :meth:`transform` gives a few sequences of plain dicts, or None.

        The one-sentence path of ``predict``: for a list of lists (or tuples)
        of plain dicts of str keys and str, float, int or bool values, few
        enough for the remembered pairs (:mod:`._dict_pairs`; at most
        ``_PLAIN_VALUES`` values), the canonical CSR arrays of
        :meth:`transform`'s output, with no SequenceMatrix built. None for
        anything else (vectors, trees' parents, another dtype, a value of
        another type, an unfitted vectorizer, a ``transform`` of a subclass),
        which the caller leaves to :meth:`transform`: its checks name every
        error.

        Returns
        -------
        data : ndarray of float64 or None
            None when every value is 1.
        indices : ndarray of int32
        indptr, offsets : ndarray of int64
        """
        if (type(X) is not list or "vocabulary_" not in self.__dict__
                # a transform of a subclass (or set on the instance) is what it says
                or type(self).transform is not SequenceVectorizer.transform
                or "transform" in self.__dict__
                or getattr(self, "vector_widths_", None)
                or (self.dtype is not np.float64 and np.dtype(self.dtype) != np.float64)):
            return None
        for sequence in X:
            # as check_sequences and _split_parents: a plain sequence, no parent key
            if type(sequence) not in _PLAIN_SEQUENCES or (
                    sequence and type(sequence[0]) is dict and PARENT_KEY in sequence[0]):
                return None
        with kernel_exceptions():  # as in transform
            arrays = _small_pairs(X, columns_by_key(self), _PLAIN_VALUES)
        if arrays is None:
            return None
        data, indices, indptr, offsets = arrays
        return values_or_none(data), indices, indptr, offsets

    def _plain_transform(self, X):
        """:meth:`transform` of a few sequences of plain dicts, or None (see ``_plain_arrays``)."""
        arrays = self._plain_arrays(X)
        return None if arrays is None else self._to_matrix(*arrays, None)

    def _with_vectors(self, matrix, dense):
        """``matrix`` with the dict vectors' dense block and its names."""
        matrix._set_dense(dense, vector_names(self.vector_widths_))
        return matrix

    def _to_matrix(self, data, indices, indptr, offsets, parents):
        """The SequenceMatrix of canonical compact arrays (and the trees' parents)."""
        names = getattr(self, "_names_out", None)
        if names is None:  # fitted by an earlier skcrf
            names = self.get_feature_names_out()
        return SequenceMatrix._from_arrays(data, indices, indptr, len(self.feature_names_),
                                           offsets, names, self.dtype, parents)

    def __sklearn_tags__(self):
        return sequence_tags(super().__sklearn_tags__(), "dict")


def _carry_dense(X, matrix):
    """Pass a SequenceMatrix input's dense block on: only its sparse columns are renamed."""
    if isinstance(X, SequenceMatrix) and X.dense is not None:
        matrix._set_dense(X.dense, X.dense_names)


def vectorizer_with_names(names, *, separator="=", dtype=np.float64):
    """A fitted :class:`SequenceVectorizer` whose columns are ``names``, in that order.

    For a vocabulary that grows by appending (a model trained in parts with
    ``partial_fit``): the names keep their columns, so weights learned for
    them stay where they are. ``sort`` is False, since the names need not be.
    """
    vectorizer = SequenceVectorizer(dtype=dtype, separator=separator, sort=False)
    return vectorizer._set_names(list(names))


def _check_no_parent_names(vocabulary, separator):
    """Raise if some token gave its parent while the first token of its sequence did not."""
    prefix = PARENT_KEY + separator
    # names made from dicts are str (see the key rule): str.startswith applies
    if PARENT_KEY in vocabulary or any(map(str.startswith, vocabulary, repeat(prefix))):
        raise ValueError(
            f"Some tokens give their parent ({PARENT_KEY!r}) but the first token of their "
            f"sequence does not: give every token's parent (-1 or None for a root).")


def _split_parents(X):
    """``(X without the parent key, parents or None)``; a SequenceMatrix keeps its own.

    Dict tokens are copied without the key only when some token has it; the
    parents are checked later, with the offsets (see ``checked_parents``).
    """
    if isinstance(X, SequenceMatrix):
        return X, X.parents
    # every token of a tree gives its parent, so the first tokens tell; a
    # parent key on later tokens only is caught as a feature name by fit
    if not any(len(sequence) and isinstance(sequence[0], Mapping) and PARENT_KEY in sequence[0]
               for sequence in X):
        return X, None
    parents, stripped = [], []
    for q, sequence in enumerate(X):
        tokens = []
        for i, token in enumerate(sequence):
            if not isinstance(token, Mapping) or PARENT_KEY not in token:
                raise ValueError(
                    f"Sequence {q}, token {i} has no {PARENT_KEY!r} key, but other tokens "
                    f"give their parent: give every token's parent (-1 or None for a "
                    f"root).")
            parent = token[PARENT_KEY]
            if parent is None:
                parent = -1
            elif isinstance(parent, bool) or not isinstance(parent, numbers.Integral):
                raise TypeError(
                    f"Sequence {q}, token {i}: {PARENT_KEY!r} must be an int (the parent's "
                    f"index in the sequence) or None; got {parent!r}.")
            parents.append(int(parent))
            rest = dict(token)
            del rest[PARENT_KEY]
            tokens.append(rest)
        stripped.append(tokens)
    return stripped, np.asarray(parents, dtype=np.int64)
