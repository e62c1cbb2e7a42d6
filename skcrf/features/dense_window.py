"""DenseWindow: each token's dense values beside those of its neighbours."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._estimators.fitted_state import FittedState, Names, TypeOf, saved_as
from ._names_out import NamesOutMixin
from ._output import SequenceOutputMixin
from .sequence_matrix import SequenceMatrix

__all__ = ["DenseWindow"]


def neighbour_tokens(offsets, offset):
    """``(source, inside)``: each token's neighbour ``offset`` away (its stacked row)
    and whether that neighbour is in the same sequence."""
    n_tokens = int(offsets[-1])
    sequence = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    source = np.arange(n_tokens) + offset
    inside = (source >= 0) & (source < n_tokens)
    inside[inside] &= sequence[source[inside]] == sequence[inside]
    return source, inside


def _names_fit_the_window(window):
    """One name per dense column of every position of the window."""
    if type(window.n_dense_in_) is not int or window.n_dense_in_ < 1:
        raise ValueError(f"n_dense_in_ is {window.n_dense_in_!r}; expected an int >= 1")
    if window.dense_names_.shape[0] % window.n_dense_in_:
        raise ValueError(f"dense_names_ has {window.dense_names_.shape[0]} names, not a "
                         f"multiple of n_dense_in_={window.n_dense_in_}")


@saved_as("skcrf.features.DenseWindow")
class DenseWindow(NamesOutMixin, SequenceOutputMixin, TransformerMixin, BaseEstimator,
                  auto_wrap_output_keys=None):
    """Give each token the dense values of its neighbours within ``window`` too.

    The step after :class:`WordVectorizer` (or any step whose output has a
    dense block, or a list of 2-D arrays): the output's dense block holds, for
    every token, the block's rows of the tokens ``-window`` to ``+window``
    away in its sequence, side by side; a neighbour past either end of the
    sequence gives zeros. Sparse columns pass through unchanged.

    On CoNLL-2002 Spanish, the vectors of the previous and next words helped
    the tutorial's features where the token's own vector alone did not (see
    the gallery example on word vectors).

    Parameters
    ----------
    window : int, default=1
        How far the neighbours may be; 0 passes the block through.

    Attributes
    ----------
    n_dense_in_ : int
        The width of the dense block seen in fit.
    dense_names_ : ndarray of str objects of shape (n_dense_out,)
        The names of the output's dense columns, ``2 * window + 1`` times
        the input's: in the order of the offsets from ``-window`` to
        ``+window``, those of the neighbour at ``-1`` prefixed ``"-1:"``, the
        token's own unprefixed, those at ``+1`` prefixed ``"+1:"``.

    See Also
    --------
    WordVectorizer : The vectors of the words.
    WordClusters : Clusters of the vectors, with their own ``window``.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from skcrf.features import DenseWindow, WordVectorizer
    >>> table = {"the": [1.0], "cat": [2.0], "sat": [3.0]}
    >>> steps = make_pipeline(WordVectorizer(table), DenseWindow(window=1))
    >>> Xt = steps.fit_transform([["the", "cat", "sat"]])
    >>> Xt.dense.tolist()
    [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 0.0]]
    >>> Xt.dense_names.tolist()
    ['-1:vec[0]', 'vec[0]', '+1:vec[0]']
    """

    _names_out_attribute = "dense_names_"

    _fitted_state = FittedState(
        {"n_dense_in_": TypeOf(int), "dense_names_": Names("n_dense_out")},
        rules=[_names_fit_the_window])

    _parameter_constraints = {"window": [Interval(numbers.Integral, 0, None, closed="left")]}

    def __init__(self, window=1):
        self.window = window

    def fit(self, X, y=None):
        """Record the width and names of the dense block.

        Parameters
        ----------
        X : SequenceMatrix with a dense block, or list of 2-D arrays
            The sequences.
        y : None
            Ignored.

        Returns
        -------
        self : DenseWindow
        """
        if not isinstance(self.window, numbers.Integral) or isinstance(self.window, bool) \
                or self.window < 0:
            raise ValueError(f"window must be an integer >= 0; got {self.window!r}.")
        X = _with_dense_block(X)
        self.n_dense_in_ = int(X.n_dense)
        own = [str(name) for name in X.dense_names]
        names = []
        for offset in range(-self.window, self.window + 1):
            stem = "" if offset == 0 else f"{offset:+d}:"
            names += [stem + name for name in own]
        self.dense_names_ = np.array(names, dtype=object)
        return self

    def transform(self, X):
        """Each token's dense row beside its neighbours' rows.

        Parameters
        ----------
        X : SequenceMatrix with a dense block, or list of 2-D arrays
            The sequences, with the dense width seen in fit.

        Returns
        -------
        Xt : SequenceMatrix
            The sparse columns of ``X``, and a dense block of
            ``2 * window + 1`` times the width, named ``dense_names_``.
        """
        check_is_fitted(self, "dense_names_")
        X = _with_dense_block(X)
        if X.n_dense != self.n_dense_in_:
            raise ValueError(f"X has {X.n_dense} dense columns per token; DenseWindow was "
                             f"fitted on {self.n_dense_in_}.")
        block = X.dense
        n_tokens = block.shape[0]
        window = self.dense_names_.shape[0] // self.n_dense_in_ // 2
        out = np.zeros((n_tokens, self.dense_names_.shape[0]), dtype=block.dtype)
        for position, offset in enumerate(range(-window, window + 1)):
            neighbour, inside = neighbour_tokens(X.offsets, offset)
            columns = slice(position * self.n_dense_in_, (position + 1) * self.n_dense_in_)
            out[inside, columns] = block[neighbour[inside]]
        return SequenceMatrix(X.matrix, X.offsets, feature_names=X.feature_names,
                              parents=X.parents, segments=X.segments, dense=out,
                              dense_names=self.dense_names_)


def _with_dense_block(X):
    """``X`` as a SequenceMatrix, which must have a dense block."""
    if not isinstance(X, SequenceMatrix):
        X = SequenceMatrix.from_sequences(X)
    if X.dense is None:
        raise ValueError("DenseWindow needs a dense block (the output of WordVectorizer, "
                         "or a list of 2-D arrays); X has sparse columns only.")
    return X
