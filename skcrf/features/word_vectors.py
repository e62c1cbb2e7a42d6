"""WordVectorizer: a table of word vectors turned into the dense block of a SequenceMatrix."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from itertools import repeat

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._estimators.fitted_state import FittedState, Names, TypeOf, saved_as
from ._names_out import NamesOutMixin
from ._output import SequenceOutputMixin
from ._word_column import sequence_words
from .sequence_matrix import SequenceMatrix

__all__ = ["WordVectorizer"]


def _table_fits_the_names(vectorizer):
    """vectors_ is a finite 2-D float table with one column per name and an OOV row;
    vocabulary_ maps str to its rows."""
    table = vectorizer.vectors_
    if table.dtype not in (np.float32, np.float64) or table.ndim != 2 or not table.shape[0]:
        raise ValueError(f"vectors_ is an array of dtype {table.dtype} and shape "
                         f"{table.shape}; expected a 2-D float table")
    if table.shape[1] != vectorizer.dense_names_.shape[0]:
        raise ValueError(f"vectors_ has {table.shape[1]} columns for "
                         f"{vectorizer.dense_names_.shape[0]} dense_names_")
    if not np.isfinite(table).all():
        raise ValueError("vectors_ holds NaN or infinite values")
    rows = vectorizer.vocabulary_.values()
    if not all(type(row) is int and 0 <= row < table.shape[0] - 1 for row in rows) or \
            not all(type(word) is str for word in vectorizer.vocabulary_):
        raise ValueError("vocabulary_ must map words (str) to rows of vectors_")


@saved_as("skcrf.features.WordVectorizer")
class WordVectorizer(NamesOutMixin, SequenceOutputMixin, TransformerMixin, BaseEstimator,
                     auto_wrap_output_keys=None):
    """Look each token's word up in a table of vectors: a dense block per token.

    Raw token sequences in (as :class:`~skcrf.TokenFeaturizer` takes them:
    ``str`` tokens or tuples whose ``word_column`` is the word), a
    :class:`~skcrf.SequenceMatrix` out whose dense block holds one row per
    token, the vector of its word. A CRF multiplies the block by its weights
    with BLAS; :class:`SequenceUnion` puts it beside sparse features.

    The table is a parameter, not learned: word vectors trained elsewhere
    (word2vec, GloVe, fastText files read into a dict) or derived from
    unlabeled text by :func:`learn_word_vectors`. ``fit`` only indexes it.
    :func:`sklearn.base.clone` (hence every fit of a search) deep-copies it,
    as every parameter: for a large table, search the other steps' parameters
    with the vectorizer fitted once, outside the search, when memory is short.

    Parameters
    ----------
    vectors : mapping of str to array-like of shape (n_dims,), or array-like of shape (n_words, n_dims)
        The table: a mapping from each word to its vector, or an array whose
        rows are the vectors of ``vocabulary``.
    vocabulary : sequence of str of shape (n_words,), default=None
        The word of each row of ``vectors`` when it is an array; must be None
        when it is a mapping.
    lowercase : bool, default=False
        Whether to look words up in lower case. The table's words are
        lowercased too; when two of them meet (``"Casa"`` and ``"casa"``), the
        one already in lower case wins, else the first.
    oov : {"zeros", "mean"} or array-like of shape (n_dims,), default="zeros"
        The vector of a word the table lacks: zeros, the mean of the table's
        vectors, or the given vector.
    norm : {"l2"} or None, default=None
        ``"l2"`` scales every vector of the table (and the out-of-vocabulary
        vector) to unit length; zero vectors stay zero.
    word_column : int, default=0
        Which column of a tuple token holds the word.
    prefix : str, default="vec"
        The dense columns are named ``prefix[0]`` to ``prefix[n_dims - 1]``,
        as a vector-valued feature ``prefix`` of a feature dict would be.
    dtype : {np.float64, np.float32}, default=np.float64
        The type of the dense block.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Each (lowercased, with ``lowercase``) word of the table to its row of
        ``vectors_``.
    vectors_ : ndarray of shape (n_words + 1, n_dims)
        The table, normalised as asked; its last row is the out-of-vocabulary
        vector.
    dense_names_ : ndarray of str objects of shape (n_dims,)
        The names of the dense columns.

    See Also
    --------
    learn_word_vectors : Vectors derived from unlabeled text, offline.
    SequenceUnion : Joins these vectors with sparse features.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrf.features import WordVectorizer
    >>> table = {"the": [1.0, 0.0], "cat": [0.0, 2.0]}
    >>> vec = WordVectorizer(table, lowercase=True, oov="mean")
    >>> Xt = vec.fit_transform([["The", "cat"], ["dog"]])
    >>> Xt.dense.tolist()
    [[1.0, 0.0], [0.0, 2.0], [0.5, 1.0]]
    >>> Xt.dense_names.tolist(), Xt.lengths.tolist()
    (['vec[0]', 'vec[1]'], [2, 1])
    """

    _names_out_attribute = "dense_names_"

    _fitted_state = FittedState(
        {"dense_names_": Names("n_dims"), "vectors_": TypeOf(np.ndarray),
         "vocabulary_": TypeOf(dict)},
        rules=[_table_fits_the_names])

    _parameter_constraints = {
        "vectors": "no_validation", "vocabulary": [None, "array-like"],
        "lowercase": ["boolean"], "oov": "no_validation", "norm": [StrOptions({"l2"}), None],
        "word_column": [Interval(numbers.Integral, 0, None, closed="left")],
        "prefix": [str], "dtype": "no_validation",
    }

    def __init__(self, vectors, *, vocabulary=None, lowercase=False, oov="zeros", norm=None,
                 word_column=0, prefix="vec", dtype=np.float64):
        self.vectors = vectors
        self.vocabulary = vocabulary
        self.lowercase = lowercase
        self.oov = oov
        self.norm = norm
        self.word_column = word_column
        self.prefix = prefix
        self.dtype = dtype

    def fit(self, X, y=None):
        """Index the table (``X`` is only checked).

        Parameters
        ----------
        X : list of sequences of str or of tuples of str
            Raw token sequences.
        y : None
            Ignored.

        Returns
        -------
        self : WordVectorizer
        """
        sequence_words(X, self.word_column, type(self).__name__)
        self._index_table()
        return self

    def transform(self, X):
        """The vector of every token's word, as the dense block of a SequenceMatrix.

        Parameters
        ----------
        X : list of sequences of str or of tuples of str
            Raw token sequences.

        Returns
        -------
        Xt : SequenceMatrix
            No sparse columns; a dense block of shape (n_tokens, n_dims).
        """
        check_is_fitted(self, "vectors_")
        words, offsets = sequence_words(X, self.word_column, type(self).__name__)
        if self.lowercase:
            words = map(str.lower, words)
        # each word's row by C-level maps, then the vectors by one fancy index
        oov_row = self.vectors_.shape[0] - 1
        rows = np.fromiter(map(self.vocabulary_.get, words, repeat(oov_row)), dtype=np.intp,
                           count=int(offsets[-1]))
        return SequenceMatrix(None, offsets, dense=self.vectors_[rows],
                              dense_names=self.dense_names_)

    def fit_transform(self, X, y=None):
        """:meth:`fit` then :meth:`transform`, reading ``X`` once.

        Parameters
        ----------
        X : list of sequences of str or of tuples of str
            Raw token sequences.
        y : None
            Ignored.

        Returns
        -------
        Xt : SequenceMatrix
            No sparse columns; a dense block of shape (n_tokens, n_dims).
        """
        self._index_table()
        return self.transform(X)

    def _index_table(self):
        if self.dtype not in (np.float64, np.float32, "float64", "float32"):
            raise ValueError(f"dtype must be np.float64 or np.float32; got {self.dtype!r}.")
        words, table = _table(self.vectors, self.vocabulary)
        n_dims = table.shape[1]
        if self.norm not in (None, "l2"):
            raise ValueError(f"norm must be 'l2' or None; got {self.norm!r}.")
        if self.norm == "l2":
            table = table / _lengths(table)[:, None]
        oov = _oov_vector(self.oov, table, n_dims)
        if self.norm == "l2" and np.any(oov):
            oov = oov / np.linalg.norm(oov)
        vocabulary = {}
        for row, word in enumerate(words):
            key = word.lower() if self.lowercase else word
            if key not in vocabulary or key == word:
                vocabulary[key] = row
        self.vocabulary_ = vocabulary
        self.vectors_ = np.vstack([table, oov[None, :]]).astype(self.dtype, copy=False)
        self.dense_names_ = np.array([f"{self.prefix}[{i}]" for i in range(n_dims)],
                                     dtype=object)


def _table(vectors, vocabulary):
    """(list of words, float64 2-D table) of the ``vectors`` parameter, checked."""
    if isinstance(vectors, Mapping):
        if vocabulary is not None:
            raise ValueError("vocabulary must be None when vectors is a mapping: its keys "
                             "are the words.")
        words = list(vectors)
        rows = []
        n_dims = None
        for word in words:
            row = np.asarray(vectors[word], dtype=np.float64)
            if n_dims is None:
                n_dims = row.shape[0] if row.ndim == 1 else -1
            if row.ndim != 1 or row.shape[0] != n_dims:
                raise ValueError(f"vectors[{word!r}] has shape {row.shape}; every vector "
                                 f"must be 1-D of the first one's length ({n_dims}).")
            rows.append(row)
        table = np.vstack(rows) if rows else np.zeros((0, 0))
    else:
        table = np.asarray(vectors, dtype=np.float64)
        if table.ndim != 2:
            raise ValueError(f"vectors must be a mapping of words to vectors or a 2-D array; "
                             f"got an array of shape {table.shape}.")
        if vocabulary is None:
            raise ValueError("vectors is an array: give the word of each row as vocabulary.")
        words = list(vocabulary)
        if len(words) != table.shape[0]:
            raise ValueError(f"vocabulary has {len(words)} words for {table.shape[0]} rows "
                             f"of vectors.")
        if len(set(words)) != len(words):
            seen = set()
            twice = next(word for word in words if word in seen or seen.add(word))
            raise ValueError(f"vocabulary holds {twice!r} twice.")
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"The words of the table must be str; got {word!r}.")
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(f"vectors holds no vector (shape {table.shape}).")
    bad = np.flatnonzero(~np.isfinite(table).all(axis=1))
    if bad.size:
        raise ValueError(f"The vector of {words[bad[0]]!r} holds NaN or infinite values.")
    return words, table


def _lengths(table):
    """The vectors' lengths, 1 for a zero vector (which no scaling makes a unit vector)."""
    lengths = np.linalg.norm(table, axis=1)
    return np.where(lengths > 0, lengths, 1.0)


def _oov_vector(oov, table, n_dims):
    if isinstance(oov, str):
        if oov == "zeros":
            return np.zeros(n_dims)
        if oov == "mean":
            return table.mean(axis=0)
        raise ValueError(f"oov must be 'zeros', 'mean' or a vector; got {oov!r}.")
    vector = np.asarray(oov, dtype=np.float64)
    if vector.shape != (n_dims,) or not np.isfinite(vector).all():
        raise ValueError(f"oov must be 'zeros', 'mean' or a finite vector of {n_dims} "
                         f"numbers; got an array of shape {vector.shape}.")
    return vector
