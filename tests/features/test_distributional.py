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


def _nearer_own_mean(points, left, right):
    """Every point is at least as near its own side's mean as the other side's."""
    means = [points[left].mean(axis=0), points[right].mean(axis=0)]
    distance = np.stack([((points - m) ** 2).sum(axis=1) for m in means])
    own = np.where(right, distance[1], distance[0])
    return bool(np.all(own <= distance.min(axis=0) + 1e-12))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nested_clusters_replay_as_splits_of_the_widest_cluster(seed):
    # oracle: replay the tree from its state at every k; each step must split the
    # cluster of largest inertia into two halves stable under Lloyd's iteration
    rng = np.random.default_rng(seed)
    points = np.vstack([rng.normal(loc, 0.3, size=(8, 3)) for loc in rng.normal(size=(4, 3))])
    n_words = points.shape[0]
    table = {f"w{i}": row for i, row in enumerate(points)}
    sizes = tuple(range(1, n_words + 1))
    clusters = WordClusters(table, n_clusters=sizes, nested=True, random_state=seed)
    clusters.fit([list(table)])
    unit = points / np.linalg.norm(points, axis=1)[:, None]
    labels = clusters.clusters_
    assert labels.shape == (n_words, n_words)
    for k in range(1, n_words):
        before, after = labels[:, k - 1], labels[:, k]
        assert sorted(set(before)) == list(range(k)) and sorted(set(after)) == list(range(k + 1))
        changed = before != after
        assert set(after[changed]) == {k}  # the new cluster takes points of one old one
        split = before[changed][0]
        assert np.all(before[changed] == split)
        inertia = [((unit[before == c] - unit[before == c].mean(axis=0)) ** 2).sum()
                   for c in range(k)]
        assert inertia[split] >= max(inertia) - 1e-12
        members = before == split
        assert _nearer_own_mean(unit[members], ~changed[members], changed[members])


def test_nested_clusters_are_nested_and_named_as_kmeans():
    rng = np.random.default_rng(0)
    table = {f"w{i}": row for i, row in enumerate(rng.normal(size=(200, 5)))}
    X = [list(table)[:50], list(table)[50:]]
    nested = WordClusters(table, n_clusters=(4, 16, 64), nested=True, window=1,
                          random_state=0).fit(X)
    flat = WordClusters(table, n_clusters=(4, 16, 64), window=1, random_state=0).fit(X)
    assert nested.get_feature_names_out().tolist() == flat.get_feature_names_out().tolist()
    assert nested.n_clusters_ == (4, 16, 64)
    for coarse, fine in ((0, 1), (1, 2)):
        parent = {}
        for c, f in zip(nested.clusters_[:, coarse], nested.clusters_[:, fine]):
            assert parent.setdefault(f, c) == c, "a fine cluster straddles two coarse ones"
    Xt = nested.transform(X)
    assert Xt.matrix.shape == (200, 3 * (4 + 16 + 64))
    # the token's own one-hot features: one per clustering
    assert Xt.matrix[:, 84:168].sum(axis=1).ravel().tolist() == [[3] * 200]
    again = clone(nested).fit(X)
    np.testing.assert_array_equal(again.clusters_, nested.clusters_)


def test_nested_clusters_split_identical_words():
    table = {"a": [1.0, 0.0], "b": [1.0, 0.0], "c": [1.0, 0.0], "d": [0.0, 1.0]}
    clusters = WordClusters(table, n_clusters=(2, 4), nested=True, random_state=0)
    clusters.fit([list(table)])
    assert clusters.clusters_[:, 0].tolist() in ([0, 0, 0, 1], [1, 1, 1, 0])
    assert sorted(clusters.clusters_[:, 1].tolist()) == [0, 1, 2, 3]
