"""PerTokenTransformer: any scikit-learn transformer applied to the stacked tokens."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._utils.docstrings import fill_sections
from ._output import SequenceOutputMixin
from .sequence_matrix import SequenceMatrix

__all__ = ["PerTokenTransformer"]


# The parameters of fit and fit_transform (their docstrings' ``<<fit_parameters>>`` line)
_fit_docs = fill_sections({"fit_parameters": """\
        Parameters
        ----------
        X : list of 2-D arrays (one per sequence) or SequenceMatrix
            The sequences.
        y : list of label sequences, default=None
            Stacked too (one label per token) and passed to the transformer's
            fit, for supervised transformers.
"""})


class PerTokenTransformer(SequenceOutputMixin, TransformerMixin, BaseEstimator,
                          auto_wrap_output_keys=None):
    """Apply a scikit-learn transformer to every token of every sequence.

    A CRF's input is sequences of token rows; a scikit-learn transformer
    takes one 2-D array of samples. This wrapper stacks the tokens of all
    sequences into one array, fits the transformer on it (every token is a
    sample), and at ``transform`` applies it to the stacked tokens again,
    keeping the sequence boundaries. So ``StandardScaler``, ``PCA``,
    ``KBinsDiscretizer``, ``SplineTransformer`` or ``Nystroem`` can stand
    before a CRF in a :class:`~sklearn.pipeline.Pipeline`.

    Which columns it transforms: the dense block when ``X`` has one (a list
    of 2-D arrays makes one), else the sparse matrix. The other block passes
    through unchanged. A dense result becomes the output's dense block; a
    sparse result (``KBinsDiscretizer(encode="onehot")``) its sparse
    columns, after any passed-through ones.

    Parameters
    ----------
    transformer : transformer
        Cloned at ``fit``; the fitted clone is ``transformer_``. Its
        parameters are reachable as ``transformer__<parameter>``.

    Attributes
    ----------
    transformer_ : transformer
        The transformer fitted on the stacked tokens.
    n_features_in_ : int
        The number of columns it was fitted on.
    feature_names_in_ : ndarray of str objects of shape (n_features_in,)
        Their names.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skcrf.features import PerTokenTransformer
    >>> X = [np.array([[1.0], [3.0]]), np.array([[5.0]])]
    >>> Xt = PerTokenTransformer(StandardScaler()).fit_transform(X)
    >>> Xt.lengths.tolist(), Xt.dense.ravel().round(3).tolist()
    ([2, 1], [-1.225, 0.0, 1.225])
    """

    def __init__(self, transformer):
        self.transformer = transformer

    @_fit_docs
    def fit(self, X, y=None):
        """Fit the transformer on the stacked tokens of all sequences.

        <<fit_parameters>>

        Returns
        -------
        self : PerTokenTransformer
        """
        self._fit(X, y)
        return self

    @_fit_docs
    def fit_transform(self, X, y=None):
        """Fit on the stacked tokens, then transform them.

        <<fit_parameters>>

        Returns
        -------
        Xt : SequenceMatrix
        """
        X = self._fit(X, y)
        return self._transform(X)

    def transform(self, X):
        """Transform the stacked tokens, keeping the sequences.

        Parameters
        ----------
        X : list of 2-D arrays (one per sequence) or SequenceMatrix
            The sequences, with the columns seen in fit.

        Returns
        -------
        Xt : SequenceMatrix
        """
        check_is_fitted(self, "transformer_")
        X = _as_sequences(X)
        _, names = _columns(X)
        if names.shape[0] != self.n_features_in_:
            raise ValueError(f"X has {names.shape[0]} columns per token; "
                             f"PerTokenTransformer was fitted on {self.n_features_in_}.")
        return self._transform(X)

    def get_feature_names_out(self, input_features=None):
        """The names of the transformed columns.

        Parameters
        ----------
        input_features : None
            Ignored: the names seen in fit are used.

        Returns
        -------
        names : ndarray of str objects
        """
        check_is_fitted(self, "transformer_")
        return _names_out(self.transformer_, self.feature_names_in_)

    def _fit(self, X, y):
        X = _as_sequences(X)
        columns, names = _columns(X)
        labels = None
        if y is not None:
            labels = np.concatenate([np.asarray(labels_q) for labels_q in y]) if len(y) else []
            if len(labels) != X.n_tokens:
                raise ValueError(f"y holds {len(labels)} labels for {X.n_tokens} tokens.")
        transformer = clone(self.transformer)
        transformer.fit(columns, labels)
        self.transformer_ = transformer
        self.n_features_in_ = int(names.shape[0])
        self.feature_names_in_ = names
        return X

    def _transform(self, X):
        columns, names = _columns(X)
        if X.n_tokens:
            out = self.transformer_.transform(columns)
        else:  # scikit-learn refuses 0 samples: one row of zeros gives the output's form
            out = self.transformer_.transform(np.zeros((1, columns.shape[1])))[:0]
        out_names = _names_out(self.transformer_, names)
        if out.ndim != 2 or out.shape[0] != X.n_tokens:
            raise ValueError(f"{type(self.transformer_).__name__}.transform returned shape "
                             f"{out.shape} for {X.n_tokens} tokens; PerTokenTransformer "
                             f"needs one row per token.")
        if out_names.shape[0] != out.shape[1]:
            out_names = np.array([f"x{i}" for i in range(out.shape[1])], dtype=object)
        transformed_dense = X.dense is not None
        kept_matrix = X.matrix if transformed_dense and X.n_features else None
        kept_names = X.feature_names if kept_matrix is not None else None
        dense = dense_names = None
        if sp.issparse(out):
            matrix = sp.csr_matrix(out)
            feature_names = out_names
            if kept_matrix is not None:
                matrix = sp.hstack([kept_matrix, matrix], format="csr")
                feature_names = np.concatenate([_or_numbered(kept_names, kept_matrix.shape[1]),
                                                out_names])
        else:
            matrix, feature_names = kept_matrix, kept_names
            dense = np.ascontiguousarray(out, dtype=_float_type(out))
            dense_names = out_names
        if matrix is None and dense is None:
            matrix = sp.csr_matrix((X.n_tokens, 0))
        return SequenceMatrix(matrix, X.offsets, feature_names=feature_names,
                              parents=X.parents, segments=X.segments, dense=dense,
                              dense_names=dense_names)


def _as_sequences(X):
    if isinstance(X, SequenceMatrix):
        return X
    return SequenceMatrix.from_sequences(X)


def _columns(X):
    """(the stacked columns to transform, their names): dense block first, else sparse."""
    if X.dense is not None:
        return X.dense, np.asarray(X.dense_names, dtype=object)
    return X.matrix, np.asarray(_or_numbered(X.feature_names, X.n_features), dtype=object)


def _or_numbered(names, n):
    return (np.array([f"x{i}" for i in range(n)], dtype=object) if names is None
            else np.asarray(names, dtype=object))


def _names_out(transformer, names_in):
    try:
        return np.asarray(transformer.get_feature_names_out(names_in), dtype=object)
    except (AttributeError, ValueError, TypeError):
        return np.array([], dtype=object)  # numbered by the caller


def _float_type(out):
    return out.dtype if out.dtype in (np.float32, np.float64) else np.float64
