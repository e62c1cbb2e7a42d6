"""learn_word_vectors (PPMI + SVD, against a brute-force PPMI) and WordClusters."""

import math
from collections import Counter

import numpy as np
import pytest
from sklearn.base import clone

from skcrf.features import WordClusters, learn_word_vectors
from skcrf.features.distributional import _cooccurrences, _ppmi

TEXT = [["The", "cat", "sat", "on", "the", "mat"], ["the", "dog", "sat", "on", "a", "log"],
        ["a", "cat", "ran"], ["a", "dog", "ran"], ["the", "cat", "ate"], ["the", "dog", "ate"]]


def _naive_ppmi(sentences, window, smoothing):
    """PPMI straight from the definition, over every pair of tokens."""
    pairs = Counter()
    for sentence in sentences:
        for i, left in enumerate(sentence):
            for j in range(i + 1, min(i + window + 1, len(sentence))):
                pairs[left, sentence[j]] += 1
                pairs[sentence[j], left] += 1
    total = sum(pairs.values())
    word_totals, context_totals = Counter(), Counter()
    for (word, context), n in pairs.items():
        word_totals[word] += n
        context_totals[context] += n
    smoothed = sum(n ** smoothing for n in context_totals.values())
    return {(w, c): max(0.0, math.log((n / total) / ((word_totals[w] / total)
                                                    * (context_totals[c] ** smoothing / smoothed))))
            for (w, c), n in pairs.items()}


@pytest.mark.parametrize("window, smoothing", [(1, 1.0), (2, 0.75), (3, 0.5)])
def test_ppmi_matches_the_definition(window, smoothing):
    words = [w.lower() for s in TEXT for w in s]
    vocabulary = list(dict.fromkeys(words))
    ids = np.array([vocabulary.index(w) for w in words])
    sequence = np.repeat(np.arange(len(TEXT)), [len(s) for s in TEXT])
    ppmi = _ppmi(_cooccurrences(ids, sequence, window, len(vocabulary)), smoothing).toarray()
    expected = np.zeros_like(ppmi)
    for (w, c), value in _naive_ppmi([[w.lower() for w in s] for s in TEXT], window,
                                     smoothing).items():
        expected[vocabulary.index(w), vocabulary.index(c)] = value
    np.testing.assert_allclose(ppmi, expected, atol=1e-12)


def test_vectors_shapes_vocabulary_and_reproducibility():
    vectors, vocabulary = learn_word_vectors(TEXT, n_components=3, min_count=2,
                                             random_state=0)
    counts = Counter(w.lower() for s in TEXT for w in s)
    assert vocabulary == [w for w in dict.fromkeys(w.lower() for s in TEXT for w in s)
                          if counts[w] >= 2]
    assert vectors.shape == (len(vocabulary), 3) and np.isfinite(vectors).all()
    again, _ = learn_word_vectors(TEXT, n_components=3, min_count=2, random_state=0)
    np.testing.assert_array_equal(vectors, again)
    cased, cased_vocabulary = learn_word_vectors(TEXT, n_components=3, lowercase=False,
                                                 min_count=1, random_state=0)
    assert "The" in cased_vocabulary and "the" in cased_vocabulary


def test_words_of_the_same_contexts_get_the_same_vector():
    # "cat" and "dog" occur in exactly the same contexts
    vectors, vocabulary = learn_word_vectors(TEXT, n_components=4, min_count=1,
                                             window=1, random_state=0)
    cat, dog = vocabulary.index("cat"), vocabulary.index("dog")
    np.testing.assert_allclose(vectors[cat], vectors[dog], atol=1e-10)
    assert np.linalg.norm(vectors[cat] - vectors[vocabulary.index("on")]) > 0.1


@pytest.mark.parametrize("kwargs, message", [
    ({"n_components": 50}, "n_components=50 needs more"),
    ({"n_components": 0}, "n_components"),
    ({"window": 0}, "window"),
    ({"smoothing": 0.0}, "smoothing"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        learn_word_vectors(TEXT, **kwargs)


TABLE = {"one": [1.0, 0.1], "two": [2.0, 0.0], "three": [3.0, 0.2],
         "cat": [0.0, 1.0], "dog": [0.1, 2.0]}


def test_clusters_are_one_hot_per_clustering_with_neighbours():
    clusters = WordClusters(TABLE, n_clusters=(2, 5), window=1, random_state=0)
    X = [["one", "cat", "zebra", "dog"], ["three"]]
    Xt = clusters.fit(X).transform(X)
    names = clusters.get_feature_names_out()
    assert names.shape == (3 * (2 + 5),) and names[0] == "-1:cluster2=0"
    assert Xt.matrix.shape == (5, 21) and Xt.lengths.tolist() == [4, 1]
    dense = Xt.matrix.toarray()
    # the word's own clusters: one per clustering, none for an unknown word
    own = slice(7, 14)
    assert dense[:, own].sum(axis=1).tolist() == [2, 2, 0, 2, 2]
    # two clusters of the unit vectors: numbers apart from animals
    row = {word: i for i, word in enumerate(["one", "cat", "zebra", "dog", "three"])}
    assert dense[row["one"], 7:9].tolist() == dense[row["three"], 7:9].tolist()
    assert dense[row["cat"], 7:9].tolist() == dense[row["dog"], 7:9].tolist()
    assert dense[row["one"], 7:9].tolist() != dense[row["cat"], 7:9].tolist()
    # the left neighbour's clusters; none across sequences or before the first token
    np.testing.assert_array_equal(dense[row["cat"], 0:7], dense[row["one"], own])
    assert dense[row["one"], 0:7].sum() == 0 and dense[row["three"], 0:7].sum() == 0
    assert dense[row["dog"], 0:7].sum() == 0  # its left neighbour is unknown


def test_clusters_reproducible_cloneable_and_checked():
    X = [["one", "two", "cat"]]
    first = WordClusters(TABLE, n_clusters=3, random_state=1).fit(X)
    again = clone(first).fit(X)
    np.testing.assert_array_equal(first.clusters_, again.clusters_)
    assert first.transform(X).feature_names.tolist() == ["cluster3=0", "cluster3=1",
                                                         "cluster3=2"]
    with pytest.raises(ValueError, match="n_clusters must be integers from 1 to the 5"):
        WordClusters(TABLE, n_clusters=(2, 9)).fit(X)
    with pytest.raises(ValueError, match="window"):
        WordClusters(TABLE, n_clusters=2, window=-1).fit(X)
