"""SequenceHasher: FeatureHasher for sequences of token feature dicts (a fixed width)."""

from __future__ import annotations

import numbers
from typing import Optional

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import murmurhash3_32
from sklearn.utils._param_validation import Interval

from .._estimators.fitted_state import FittedState, saved_as
from .._utils.tags import sequence_tags
from .._utils.type_aliases import FeatureSequences, LabelSequences
from .._utils.validation import check_sequences
from ._output import SequenceOutputMixin
from .sequence_matrix import SequenceMatrix, values_or_none
from ._csr_arrays import _as_names, _canonical, _named_matrix_arrays
from .vectorizer import SequenceVectorizer


@saved_as("skcrf.SequenceHasher")
class SequenceHasher(SequenceOutputMixin, TransformerMixin, BaseEstimator,
                     auto_wrap_output_keys=None):
    """Hash token feature names into a fixed number of columns.

    The sequence counterpart of :class:`sklearn.feature_extraction.FeatureHasher`:
    a feature name (made from a dict as :class:`SequenceVectorizer` makes it:
    ``name=value`` for a str value, ``name`` for a number) goes to column
    ``abs(h) % n_features`` with ``h`` its signed 32-bit MurmurHash3, and with
    ``alternate_sign`` its value is multiplied by the sign of ``h``, so that
    colliding features cancel out on average instead of adding up. It keeps
    no vocabulary: a stream whose feature names never stop coming (new words)
    trains in fixed memory, with :meth:`CRFClassifier.partial_fit` over its
    batches. The price is collisions and no feature names to inspect. A CRF
    fitted on a wide hashed input keeps the columns its training data holds
    (``feature_columns_``): a large ``n_features`` costs the model nothing
    per column that never occurs.

    Parameters
    ----------
    n_features : int, default=2**20
        Number of columns of the output.
    alternate_sign : bool, default=True
        Multiply each value by the sign of its name's hash.
    separator : str, default="="
        Put between a feature name and a str value, as in :class:`SequenceVectorizer`.
    dtype : dtype, default=np.float64
        Type of the matrix values.

    See Also
    --------
    SequenceVectorizer : Keeps a vocabulary instead: exact, and names to inspect.
    sklearn.feature_extraction.FeatureHasher : The same for single samples.

    Examples
    --------
    >>> from skcrf import SequenceHasher
    >>> X = [[{"word": "Hello"}, {"word": "world", "len": 5}]]
    >>> Xt = SequenceHasher(n_features=16).transform(X)
    >>> Xt.matrix.shape  # a row per token, a column per hash bucket
    (2, 16)
    >>> Xt.lengths.tolist()
    [2]
    """

    _dataframe_hint = (" A DataFrame of the features: pandas.DataFrame.sparse.from_spmatrix("
                       "Xt.matrix).")

    #: A hasher learns nothing: its parameters are its whole state.
    _fitted_state = FittedState({})

    _parameter_constraints = {
        "n_features": [Interval(numbers.Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "alternate_sign": ["boolean"],
        "separator": [str],
        "dtype": "no_validation",
    }

    def __init__(self, *, n_features: int = 2 ** 20, alternate_sign: bool = True,
                 separator: str = "=", dtype=np.float64) -> None:
        self.n_features = n_features
        self.alternate_sign = alternate_sign
        self.separator = separator
        self.dtype = dtype

    def fit(self, X: Optional[FeatureSequences] = None,
            y: Optional[LabelSequences] = None) -> SequenceHasher:
        """Check the parameters; a hasher learns nothing.

        Parameters
        ----------
        X : ignored
        y : ignored

        Returns
        -------
        self : SequenceHasher
        """
        self._validate_params()
        return self

    def transform(self, X: FeatureSequences) -> SequenceMatrix:
        """Hash the features of ``X`` into ``n_features`` columns.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix with feature_names
            Token feature dicts (with ``"__parent__"`` keys for trees), or the
            output of :class:`TokenFeaturizer`, whose column names are hashed.

        Returns
        -------
        Xt : SequenceMatrix
            One row per token, ``n_features`` columns, no feature names.
        """
        self._validate_params()
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
            if X.feature_names is None:
                raise ValueError(
                    "SequenceHasher hashes feature names, and this SequenceMatrix has none; "
                    "give it feature_names (TokenFeaturizer's output has them).")
            named = X
        else:
            # the batch's own names, in order of appearance: forgotten once hashed
            named = SequenceVectorizer(separator=self.separator, sort=False).fit_transform(X)
        # a SequenceMatrix's features of candidate segments are hashed alike (into
        # a matrix of their own, as a vectorizer keeps them): dropping them would
        # silently train a SemiMarkovCRF without them
        segments = named.segments
        if segments is not None:
            segments = self.transform(segments)
        data, indices, indptr, offsets = _named_matrix_arrays(named)
        columns, signs = self._hashed(_as_names(named.feature_names))
        if self.alternate_sign:
            values = np.ones(indices.shape[0]) if data is None else data.astype(np.float64)
            values *= signs[indices]
            data = values
        indices = columns[indices]
        data, indices, indptr = _canonical(data, indices, indptr, self.n_features)
        data = None if data is None else values_or_none(data)
        hashed = SequenceMatrix._from_arrays(data, indices, indptr, self.n_features, offsets,
                                             None, self.dtype, named.parents, segments)
        if named.dense is not None:  # dict vectors, or the input's block: not hashed
            hashed._set_dense(named.dense, named.dense_names)
        return hashed

    def _validate_params(self):
        # also run by load_model: a model file's dtype is checked as the constructor's
        super()._validate_params()
        try:
            kind = np.dtype(self.dtype).kind
        except TypeError:
            kind = None
        if kind != "f":
            raise ValueError(
                f"SequenceHasher's dtype must be a floating-point type (hashed values are "
                f"signed real numbers); got dtype={self.dtype!r:.60}.")

    def _hash(self, name):
        try:
            return murmurhash3_32(name, seed=0)
        except UnicodeEncodeError as error:
            raise ValueError(
                f"feature name {name!r:.80} cannot be hashed: it holds "
                f"{error.object[error.start:error.end]!r}, a lone surrogate that UTF-8 cannot "
                f"encode (text decoded with errors='surrogateescape'?). Decode the input "
                f"with errors='replace', or drop the character.") from None

    def _hashed(self, names):
        """Each name's column and sign: the signed 32-bit MurmurHash3 as FeatureHasher takes it."""
        hashes = np.fromiter((self._hash(name) for name in names),
                             dtype=np.int64, count=len(names))
        # FeatureHasher's rule for -2**31, whose absolute value is no int32
        magnitudes = np.where(hashes == -2 ** 31, 2 ** 31 - 1, np.abs(hashes))
        columns = (magnitudes % self.n_features).astype(np.int32)
        signs = np.where(hashes >= 0, 1.0, -1.0)
        return columns, signs

    def __sklearn_tags__(self):
        tags = sequence_tags(super().__sklearn_tags__(), "dict")
        tags.requires_fit = False
        return tags
