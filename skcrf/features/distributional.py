"""Word vectors from the user's own unlabeled text (PPMI + SVD), and clusters of them.

Nothing pretrained ships with skcrf and nothing is downloaded: the vectors
come from co-occurrence counts in whatever text the user has (the training
sentences, or more unlabeled text), by the count-based method that Levy,
Goldberg and Dagan (2015) found on a par with word2vec: positive pointwise
mutual information with context-distribution smoothing, reduced by a
truncated SVD. Guo, Che, Wang and Liu (2014) found that a CRF gains more from
*clusters* of word vectors, as one-hot features, than from the raw dense
vectors: :class:`WordClusters` makes those, either as independent k-means
clusterings or as the levels of one tree of splits (``nested=True``), the
coarse-to-fine prefixes that Brown clusters give (Miller et al., 2004).
"""

from __future__ import annotations

import heapq
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import MiniBatchKMeans
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.extmath import randomized_svd
from sklearn.utils.validation import check_is_fitted

from .._estimators.fitted_state import Array, FittedState, Names, TypeOf, at_least, saved_as
from ._numbering import factorize
from ._names_out import NamesOutMixin
from ._output import SequenceOutputMixin
from ._word_column import sequence_words
from .dense_window import neighbour_tokens
from .sequence_matrix import SequenceMatrix
from .word_vectors import _table

__all__ = ["WordClusters", "learn_word_vectors"]


def learn_word_vectors(X, *, n_components=100, window=2, min_count=2, lowercase=True,
                       smoothing=0.75, word_column=0, random_state=None):
    """Word vectors from unlabeled token sequences: PPMI co-occurrences and a truncated SVD.

    Counts how often each pair of words of at least ``min_count``
    occurrences appears within ``window`` tokens of each other (within one
    sequence), weighs the counts by positive pointwise mutual information
    with the context counts raised to ``smoothing``, and keeps the
    ``n_components`` leading singular directions of that matrix, each word's
    vector being its row of ``U * sqrt(S)``.

    Parameters
    ----------
    X : list of sequences of str or of tuples of str
        Unlabeled text, one sequence per sentence: the training sentences,
        or more text of the same kind (more text gives better vectors).
    n_components : int, default=100
        The length of the vectors; at most the vocabulary size minus one.
    window : int, default=2
        How far apart two co-occurring tokens may be.
    min_count : int, default=2
        Words seen fewer times get no vector (a CRF gives them the
        out-of-vocabulary vector of :class:`WordVectorizer`).
    lowercase : bool, default=True
        Whether to count words in lower case (then look them up with
        ``WordVectorizer(lowercase=True)``).
    smoothing : float, default=0.75
        The exponent of the context counts (Levy et al.'s ``cds``): below 1 it
        lowers the PMI of pairs with rare contexts.
    word_column : int, default=0
        Which column of a tuple token holds the word.
    random_state : int, RandomState instance or None, default=None
        For the randomized SVD. Pass an int for the same vectors at every call.

    Returns
    -------
    vectors : ndarray of shape (n_words, n_components)
        One vector per word, float64.
    vocabulary : list of str of shape (n_words,)
        The word of each row, in order of first occurrence.

    See Also
    --------
    WordVectorizer : Looks these vectors up for every token.
    WordClusters : Clusters of these vectors as sparse features.

    Examples
    --------
    >>> from skcrf.features import learn_word_vectors
    >>> text = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]] * 5
    >>> vectors, vocabulary = learn_word_vectors(text, n_components=3, random_state=0)
    >>> vectors.shape, vocabulary[:3]
    ((6, 3), ['the', 'cat', 'sat'])
    """
    for name, value, low in (("n_components", n_components, 1), ("window", window, 1),
                             ("min_count", min_count, 1)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    if not (isinstance(smoothing, numbers.Real) and 0 < smoothing <= 1):
        raise ValueError(f"smoothing must be a number in (0, 1]; got {smoothing!r}.")
    words, offsets = sequence_words(X, word_column, "learn_word_vectors")
    if lowercase:
        words = [word.lower() for word in words]
    codes, types = factorize(words)
    counts = np.bincount(codes, minlength=len(types))
    kept = counts >= min_count
    n_words = int(kept.sum())
    if n_words <= n_components:
        raise ValueError(f"The text has {n_words} words seen at least min_count={min_count} "
                         f"times; n_components={n_components} needs more than that.")
    number = np.full(len(types), -1, dtype=np.int64)
    number[kept] = np.arange(n_words)
    ids = number[codes]
    sequence = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    cooccurrences = _cooccurrences(ids, sequence, window, n_words)
    ppmi = _ppmi(cooccurrences, smoothing)
    u, s, _ = randomized_svd(ppmi, n_components, random_state=check_random_state(random_state))
    vocabulary = [word for word, keep in zip(types, kept) if keep]
    return u * np.sqrt(s), vocabulary


def _cooccurrences(ids, sequence, window, n_words):
    """Symmetric counts of the pairs of kept words within ``window`` tokens, one sequence."""
    rows, cols = [], []
    for distance in range(1, window + 1):
        left, right = ids[:-distance], ids[distance:]
        pair = (sequence[:-distance] == sequence[distance:]) & (left >= 0) & (right >= 0)
        rows += [left[pair], right[pair]]
        cols += [right[pair], left[pair]]
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n_words, n_words))


def _ppmi(counts, smoothing):
    """max(0, log p(w, c) / (p(w) p_smoothed(c))) on the non-zero counts."""
    counts = counts.tocoo()
    word_totals = np.asarray(counts.sum(axis=1)).ravel()
    context_weights = np.asarray(counts.sum(axis=0)).ravel() ** smoothing
    pmi = (np.log(counts.data) + np.log(counts.sum()) - np.log(word_totals[counts.row])
           - np.log(context_weights[counts.col] * counts.sum() / context_weights.sum()))
    positive = pmi > 0
    return sp.csr_matrix((pmi[positive], (counts.row[positive], counts.col[positive])),
                         shape=counts.shape)


def _bisecting_clusters(points, sizes, rng, max_iter=30):
    """Each point's cluster at each of ``sizes``, from one tree of splits into two.

    Starts from one cluster and splits the cluster of largest inertia (sum of
    squared distances to its mean) by 2-means until ``max(sizes)`` clusters;
    the clustering at ``k`` is the tree's state after ``k - 1`` splits, its
    clusters numbered in order of creation. Clusters of identical points are
    split in halves: ``k`` may be anything up to the number of points.
    """
    n_points = points.shape[0]
    labels = np.zeros(n_points, dtype=np.int64)
    out = np.zeros((n_points, len(sizes)), dtype=np.int64)
    members = {0: np.arange(n_points)}
    # a heap of (-inertia, creation number, cluster): the creation number breaks ties
    heap = [(-_inertia(points), 0, 0)]
    for n_clusters in range(1, max(sizes) + 1):
        for column, k in enumerate(sizes):
            if k == n_clusters:
                out[:, column] = labels
        if n_clusters == max(sizes):
            break
        _, _, cluster = heapq.heappop(heap)
        rows = members[cluster]
        right = _two_means(points[rows], rng, max_iter)
        members[cluster], members[n_clusters] = rows[~right], rows[right]
        labels[rows[right]] = n_clusters
        for c in (cluster, n_clusters):
            spread = _inertia(points[members[c]]) if members[c].shape[0] > 1 else -1.0
            heapq.heappush(heap, (-spread, c, c))
    return out


def _inertia(points):
    return float(((points - points.mean(axis=0)) ** 2).sum())


def _two_means(points, rng, max_iter):
    """Which points go to the second of two clusters: Lloyd's iterations from a
    random point and a second one drawn with probability proportional to its
    squared distance from the first (k-means++). Both sides are non-empty."""
    n_points = points.shape[0]
    first = rng.randint(n_points)
    distance = ((points - points[first]) ** 2).sum(axis=1)
    if not distance.any():
        # identical points: halves, in random order
        right = np.zeros(n_points, dtype=bool)
        right[rng.permutation(n_points)[: n_points // 2]] = True
        return right
    second = rng.choice(n_points, p=distance / distance.sum())
    centres = points[[first, second]]
    right = None
    for _ in range(max_iter):
        # nearer the second centre: x.(c1 - c0) > (|c1|^2 - |c0|^2) / 2
        new = points @ (centres[1] - centres[0]) > 0.5 * (centres[1] @ centres[1]
                                                          - centres[0] @ centres[0])
        if new.all() or not new.any() or (right is not None and np.array_equal(new, right)):
            break  # converged (a side left empty keeps the last two-sided split)
        right = new
        centres = np.stack([points[~right].mean(axis=0), points[right].mean(axis=0)])
    return right


def _clusters_fit_the_names(clusters):
    """Each word's cluster is below its clustering's size; one name per column."""
    sizes = clusters.n_clusters_
    if not sizes or not all(type(k) is int and k >= 1 for k in sizes) or \
            clusters.clusters_.shape[1] != len(sizes):
        raise ValueError(f"n_clusters_ is {sizes!r}; expected one positive int per column "
                         f"of clusters_")
    if clusters.clusters_.size and np.any(clusters.clusters_.max(axis=0) >= np.array(sizes)):
        raise ValueError("clusters_ holds a cluster number beyond its clustering's size")
    if clusters.feature_names_.shape[0] % sum(sizes):
        raise ValueError("feature_names_ does not name every cluster of every position")
    if not all(type(row) is int and 0 <= row < clusters.clusters_.shape[0]
               for row in clusters.vocabulary_.values()):
        raise ValueError("vocabulary_ must map words to rows of clusters_")


@saved_as("skcrf.features.WordClusters")
class WordClusters(NamesOutMixin, SequenceOutputMixin, TransformerMixin, BaseEstimator,
                   auto_wrap_output_keys=None):
    """Clusters of word vectors as one-hot token features (Guo et al., 2014).

    ``fit`` clusters the table's vectors by k-means, once per number of
    clusters in ``n_clusters``; ``transform`` gives each token the one-hot
    features ``cluster<k>=<c>`` of its word's cluster ``c`` among ``k`` (and
    of its neighbours' within ``window``, as ``-1:cluster<k>=<c>``). A word
    the table lacks gets none. The output is a :class:`~skcrf.SequenceMatrix`
    with fixed, named sparse columns: a CRF takes it directly, and
    :class:`SequenceUnion` joins it with other features.

    Parameters
    ----------
    vectors : mapping of str to array-like, or array-like of shape (n_words, n_dims)
        The table, as for :class:`WordVectorizer` (e.g. the output of
        :func:`learn_word_vectors`).
    vocabulary : sequence of str, default=None
        The word of each row when ``vectors`` is an array.
    n_clusters : int or tuple of int, default=(50, 200)
        The numbers of clusters: several give coarse-to-fine features.
    window : int, default=0
        The neighbours whose clusters are features of a token too.
    lowercase : bool, default=False
        Whether to look words up in lower case (the table's words too).
    word_column : int, default=0
        Which column of a tuple token holds the word.
    prefix : str, default="cluster"
        The start of the feature names.
    nested : bool, default=False
        False: one k-means clustering per number of clusters, each made
        independently. True: one tree of splits into two (bisecting 2-means,
        always splitting the cluster of largest squared spread), read at each
        number of clusters, so that every fine cluster lies inside one coarse
        cluster and the coarse features back off the fine ones.
    random_state : int, RandomState instance or None, default=None
        For k-means. Pass an int for the same clusters at every fit.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Each word of the table to its row of ``clusters_``.
    clusters_ : ndarray of int64 of shape (n_words, n_clusterings)
        Each word's cluster in each clustering.
    n_clusters_ : tuple of int
        The number of clusters of each clustering.
    feature_names_ : ndarray of str objects
        The names of the output's columns.

    Examples
    --------
    >>> from skcrf.features import WordClusters
    >>> table = {"one": [0.0, 1.0], "two": [0.1, 1.0], "cat": [5.0, 0.0]}
    >>> clusters = WordClusters(table, n_clusters=2, random_state=0)
    >>> Xt = clusters.fit_transform([["one", "two", "cat", "zebra"]])
    >>> Xt.matrix.toarray().tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """

    _fitted_state = FittedState(
        {"clusters_": Array(("n_words", "n_clusterings"), np.int64, values=at_least(0)),
         "n_clusters_": TypeOf(tuple), "vocabulary_": TypeOf(dict),
         "feature_names_": Names("n_features")},
        rules=[_clusters_fit_the_names])

    _parameter_constraints = {
        "vectors": "no_validation", "vocabulary": [None, "array-like"],
        "n_clusters": "no_validation",
        "window": [Interval(numbers.Integral, 0, None, closed="left")],
        "lowercase": ["boolean"],
        "word_column": [Interval(numbers.Integral, 0, None, closed="left")],
        "prefix": [str], "nested": ["boolean"], "random_state": ["random_state"],
    }

    def __init__(self, vectors, *, vocabulary=None, n_clusters=(50, 200), window=0,
                 lowercase=False, word_column=0, prefix="cluster", nested=False,
                 random_state=None):
        self.vectors = vectors
        self.vocabulary = vocabulary
        self.n_clusters = n_clusters
        self.window = window
        self.lowercase = lowercase
        self.word_column = word_column
        self.prefix = prefix
        self.nested = nested
        self.random_state = random_state

    def fit(self, X, y=None):
        """Cluster the table's vectors (``X`` is only checked).

        Parameters
        ----------
        X : list of sequences of str or of tuples of str
            Raw token sequences.
        y : None
            Ignored.

        Returns
        -------
        self : WordClusters
        """
        sequence_words(X, self.word_column, type(self).__name__)
        sizes = (self.n_clusters,) if isinstance(self.n_clusters, numbers.Integral) else \
            tuple(self.n_clusters)
        words, table = _table(self.vectors, self.vocabulary)
        if not sizes or any(not isinstance(k, numbers.Integral) or not 1 <= k <= len(words)
                            for k in sizes):
            raise ValueError(f"n_clusters must be integers from 1 to the {len(words)} words "
                             f"of the table; got {self.n_clusters!r}.")
        if not isinstance(self.window, numbers.Integral) or self.window < 0:
            raise ValueError(f"window must be an integer >= 0; got {self.window!r}.")
        rng = check_random_state(self.random_state)
        # unit vectors: words of similar use point the same way, whatever their frequency
        lengths = np.linalg.norm(table, axis=1)
        unit = table / np.where(lengths > 0, lengths, 1.0)[:, None]
        if self.nested:
            self.clusters_ = _bisecting_clusters(unit, sizes, rng)
        else:
            # random starts, best of three: k-means++ seeding of hundreds of
            # clusters costs several times the clustering itself (28 s against
            # 4 s for 500 clusters of 14k words), for little better clusters
            self.clusters_ = np.column_stack([
                MiniBatchKMeans(n_clusters=k, init="random", n_init=3,
                                random_state=rng.randint(2 ** 31 - 1))
                .fit_predict(unit) for k in sizes]).astype(np.int64)
        vocabulary = {}
        for row, word in enumerate(words):
            key = word.lower() if self.lowercase else word
            if key not in vocabulary or key == word:
                vocabulary[key] = row
        self.vocabulary_ = vocabulary
        self.n_clusters_ = tuple(int(k) for k in sizes)
        names = []
        for offset in range(-self.window, self.window + 1):
            stem = "" if offset == 0 else f"{offset:+d}:"
            for k in sizes:
                names += [f"{stem}{self.prefix}{k}={c}" for c in range(k)]
        self.feature_names_ = np.array(names, dtype=object)
        return self

    def transform(self, X):
        """The one-hot cluster features of every token (and its neighbours).

        Parameters
        ----------
        X : list of sequences of str or of tuples of str
            Raw token sequences.

        Returns
        -------
        Xt : SequenceMatrix
            Sparse columns named as ``feature_names_``.
        """
        check_is_fitted(self, "clusters_")
        words, offsets = sequence_words(X, self.word_column, type(self).__name__)
        if self.lowercase:
            words = [word.lower() for word in words]
        get = self.vocabulary_.get
        rows_of_words = np.fromiter((get(word, -1) for word in words), dtype=np.int64,
                                    count=len(words))
        n_tokens = len(words)
        tokens = np.arange(n_tokens)
        starts = np.cumsum((0,) + self.n_clusters_)
        n_per_offset = int(starts[-1])
        token_ids, columns = [], []
        for position, offset in enumerate(range(-self.window, self.window + 1)):
            neighbour, inside = neighbour_tokens(offsets, offset)
            word_rows = np.full(n_tokens, -1, dtype=np.int64)
            word_rows[inside] = rows_of_words[neighbour[inside]]
            known = word_rows >= 0
            for s in range(len(self.n_clusters_)):
                token_ids.append(tokens[known])
                columns.append(position * n_per_offset + starts[s]
                               + self.clusters_[word_rows[known], s])
        token_ids, columns = np.concatenate(token_ids), np.concatenate(columns)
        matrix = sp.csr_matrix((np.ones(token_ids.shape[0]), (token_ids, columns)),
                               shape=(n_tokens, self.feature_names_.shape[0]))
        matrix.sort_indices()
        return SequenceMatrix(matrix, offsets, feature_names=self.feature_names_)
