"""SequenceVectorizer: DictVectorizer for sequences of per-token feature dicts."""

import numbers
from array import array
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._sequence_matrix import SequenceMatrix
from ._validation import check_sequences

_ITERABLE_VALUES = (list, tuple, set, frozenset)


def _type_error(seq_idx, tok_idx, key, value, why):
    return TypeError(
        f"Sequence {seq_idx}, token {tok_idx}, feature {key!r}: {why} "
        f"(got {type(value).__name__} {value!r:.60}). Feature values must be str, "
        f"a real number, a bool, or a list/tuple/set of str.")


def _vectorize(X, vocabulary, grow, separator):
    """One pass over ``X``: CSR arrays over all tokens and sequence offsets.

    With ``grow`` true, unseen feature names are appended to ``vocabulary``;
    otherwise they are dropped. Zero-valued numeric features register their name
    but store nothing, as an explicit zero would change nothing but the cost.
    """
    indices = array("q")
    values = array("d")
    indptr = array("q", [0])
    offsets = array("q", [0])
    n_tokens = 0
    get = vocabulary.get
    for seq_idx, sequence in enumerate(X):
        for tok_idx, token in enumerate(sequence):
            if not isinstance(token, Mapping):
                raise TypeError(
                    f"Sequence {seq_idx}, token {tok_idx} is a {type(token).__name__}; "
                    f"expected a mapping of feature names to values.")
            for key, value in token.items():
                kind = type(value)
                if kind is str:
                    name = f"{key}{separator}{value}"
                    number = 1.0
                elif kind is float or kind is int or kind is bool:
                    name = key
                    number = value
                elif kind in _ITERABLE_VALUES:
                    for item in value:
                        if type(item) is not str and not isinstance(item, str):
                            raise _type_error(seq_idx, tok_idx, key, value,
                                              "a list/tuple/set value may hold only str")
                        name = f"{key}{separator}{item}"
                        idx = get(name)
                        if idx is None:
                            if not grow:
                                continue
                            idx = vocabulary[name] = len(vocabulary)
                        indices.append(idx)
                        values.append(1.0)
                    continue
                elif isinstance(value, str):
                    name = f"{key}{separator}{value}"
                    number = 1.0
                elif isinstance(value, numbers.Real):
                    name = key
                    number = float(value)
                elif isinstance(value, Mapping):
                    raise _type_error(seq_idx, tok_idx, key, value,
                                      "nested mappings are not supported; flatten them")
                else:
                    raise _type_error(seq_idx, tok_idx, key, value, "unsupported type")
                idx = get(name)
                if idx is None:
                    if not grow:
                        continue
                    idx = vocabulary[name] = len(vocabulary)
                if number:
                    indices.append(idx)
                    values.append(number)
            indptr.append(len(indices))
            n_tokens += 1
        offsets.append(n_tokens)
    return (np.frombuffer(values, dtype=np.float64), np.frombuffer(indices, dtype=np.int64),
            np.frombuffer(indptr, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64))


class SequenceVectorizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Turn sequences of per-token feature dicts into one sparse matrix.

    The sequence counterpart of :class:`sklearn.feature_extraction.DictVectorizer`
    and the input format of sklearn-crfsuite: ``X`` is a list of sequences, each
    a list of dicts mapping feature names to values.

    - a ``str`` value gives the one-hot feature ``name=value`` (see ``separator``);
    - a number or ``bool`` gives the real-valued feature ``name``;
    - a list, tuple or set of ``str`` gives one one-hot feature per item.

    ``X`` may also be a :class:`SequenceMatrix` with ``feature_names`` (what
    :class:`TokenFeaturizer` emits): its columns are then matched to the fitted
    vocabulary by name, one lookup per distinct name, with no per-token dicts.

    The output is a :class:`SequenceMatrix`: one CSR matrix over all tokens plus
    sequence offsets, which :class:`CRFClassifier` consumes directly.

    Parameters
    ----------
    dtype : dtype, default=np.float64
        Type of the matrix values.
    separator : str, default="="
        Put between a feature name and a string value.
    sort : bool, default=True
        Whether ``feature_names_`` and the columns are sorted by name.
    min_freq : int, default=1
        Keep only features that occur in at least this many tokens of the
        training data (CRFsuite's ``feature.minfreq``).

    Attributes
    ----------
    vocabulary_ : dict
        Feature name to column index.
    feature_names_ : list of str
        Column index to feature name.

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
    """

    _parameter_constraints = {
        "dtype": "no_validation",
        "separator": [str],
        "sort": ["boolean"],
        "min_freq": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, *, dtype=np.float64, separator="=", sort=True, min_freq=1):
        self.dtype = dtype
        self.separator = separator
        self.sort = sort
        self.min_freq = min_freq

    def fit(self, X, y=None):
        """Learn the feature names of ``X``.

        Parameters
        ----------
        X : list of sequences of dict
        y : ignored

        Returns
        -------
        self : SequenceVectorizer
        """
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Learn the feature names of ``X`` and return its matrix, in one pass.

        Parameters
        ----------
        X : list of sequences of dict
        y : ignored

        Returns
        -------
        Xt : SequenceMatrix
        """
        self._validate_params()
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            data, indices, indptr, offsets = _named_matrix_arrays(X)
            names = np.asarray(X.feature_names, dtype=object)
        else:
            vocabulary = {}
            data, indices, indptr, offsets = _vectorize(X, vocabulary, True, self.separator)
            names = np.array(list(vocabulary), dtype=object)
        keep = np.ones(len(names), dtype=bool)
        if self.min_freq > 1:
            keep = np.bincount(indices, minlength=len(names)) >= self.min_freq
        order = np.flatnonzero(keep)
        if self.sort:
            order = order[np.argsort(names[order].astype(str), kind="stable")]
        # column remap: old index -> new index, -1 for dropped features
        remap = np.full(len(names), -1, dtype=np.int64)
        remap[order] = np.arange(order.shape[0])
        self.feature_names_ = names[order].tolist()
        self.vocabulary_ = {name: i for i, name in enumerate(self.feature_names_)}
        if order.shape[0] != len(names) or self.sort:
            indices = remap[indices]
            if not keep.all():
                data, indices, indptr = _drop_columns(data, indices, indptr)
        return self._to_matrix(data, indices, indptr, offsets)

    def transform(self, X):
        """Turn ``X`` into a matrix; features unseen in ``fit`` are ignored.

        Parameters
        ----------
        X : list of sequences of dict

        Returns
        -------
        Xt : SequenceMatrix
        """
        check_is_fitted(self, "vocabulary_")
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            data, indices, indptr, offsets = _named_matrix_arrays(X)
            # one dictionary lookup per distinct column name, not per token
            get = self.vocabulary_.get
            remap = np.fromiter((get(name, -1) for name in X.feature_names),
                                dtype=np.int64, count=X.n_features)
            indices = remap[indices]
            data, indices, indptr = _drop_columns(data, indices, indptr)
        else:
            data, indices, indptr, offsets = _vectorize(X, self.vocabulary_, False,
                                                        self.separator)
        return self._to_matrix(data, indices, indptr, offsets)

    def get_feature_names_out(self, input_features=None):
        """Feature names of the output columns.

        Parameters
        ----------
        input_features : ignored

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "feature_names_")
        return np.asarray(self.feature_names_, dtype=object)

    def _to_matrix(self, data, indices, indptr, offsets):
        matrix = sp.csr_matrix(
            (data.astype(self.dtype), indices.astype(np.int32, copy=False), indptr),
            shape=(indptr.shape[0] - 1, len(self.feature_names_)))
        # a list value may repeat an item: merge the duplicates it made
        matrix.sum_duplicates()
        return SequenceMatrix(matrix, offsets, self.get_feature_names_out())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        return tags


def _named_matrix_arrays(X):
    """CSR arrays and offsets of a SequenceMatrix that must carry feature names."""
    if X.feature_names is None:
        raise ValueError(
            "SequenceVectorizer needs a SequenceMatrix with feature_names to match "
            "its columns by name; this one has none.")
    matrix = X.matrix
    return (matrix.data.astype(np.float64, copy=False), matrix.indices.astype(np.int64),
            matrix.indptr.astype(np.int64, copy=False), X.offsets)


def _drop_columns(data, indices, indptr):
    """Remove the entries whose column index is -1 from CSR arrays."""
    kept = indices >= 0
    kept_before = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    return data[kept], indices[kept], kept_before[indptr]
