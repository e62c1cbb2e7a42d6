"""Features of candidate segments: what TokenFeaturizer emits, and how they travel with X."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix, SequenceVectorizer, TokenFeaturizer
from skcrf.features._words import word_shape

X = [["Pedro", "vive", "en", "Nueva", "York", "."], [], ["La", "ONU"], ["Hoy"]]
GAZETTEER = {"Nueva York": "LOC", "ONU": ["ORG", "LOC"], "Pedro": "PER"}


def _rows(segments, L):
    """{(token, length - 1): set of feature names} of the non-empty rows."""
    matrix = segments.matrix
    rows = {}
    for r in range(matrix.shape[0]):
        if matrix.indptr[r + 1] > matrix.indptr[r]:
            rows[(r // L, r % L)] = {segments.feature_names[c] for c in matrix[r].indices}
    return rows


def _expected(X, L, gazetteer=None):
    """The built-in kinds of every candidate segment, by their definitions."""
    expected = {}
    t = 0
    for words in X:
        n = len(words)
        for a in range(n):
            for d in range(1, min(L, n - a) + 1):
                span = words[a:a + d]
                names = {"words=" + " ".join(w.lower() for w in span),
                         "shape=" + " ".join(map(word_shape, span)), f"length={d}",
                         "before=" + words[a - 1].lower() if a else "BOS",
                         "after=" + words[a + d].lower() if a + d < n else "EOS"}
                if d > 1:
                    names |= {"first=" + span[0].lower(), "last=" + span[-1].lower()}
                for phrase, types in (gazetteer or {}).items():
                    if " ".join(span) == phrase:
                        for t_ in [types] if isinstance(types, str) else types:
                            names |= {f"gaz={t_}", f"gaz.lower={t_}", f"gaz~={t_}"}
                expected[(t + a, d - 1)] = names
        t += n
    return expected


@pytest.mark.parametrize("L", [1, 2, 3, 7])
def test_every_candidate_segment_gets_its_features(L):
    featurizer = TokenFeaturizer(segment_features=True, max_segment_length=L,
                                 gazetteer=GAZETTEER)
    Xt = featurizer.fit_transform(X)
    segments = Xt.segments
    assert Xt.segment_length == L
    assert segments.n_tokens == Xt.n_tokens * L
    np.testing.assert_array_equal(segments.offsets, Xt.offsets * L)
    assert _rows(segments, L) == _expected(X, L, GAZETTEER)
    assert len(set(segments.feature_names)) == segments.n_features


def test_columns_join_the_other_token_columns():
    tokens = [[("The", "DT"), ("big", "JJ"), ("dog", "NN")]]
    featurizer = TokenFeaturizer(segment_features=["columns"], max_segment_length=3,
                                 column_names=("w", "pos"))
    rows = _rows(featurizer.fit_transform(tokens).segments, 3)
    assert rows == {(0, 0): {"pos=DT"}, (0, 1): {"pos=DT JJ"}, (0, 2): {"pos=DT JJ NN"},
                    (1, 0): {"pos=JJ"}, (1, 1): {"pos=JJ NN"}, (2, 0): {"pos=NN"}}
    none = TokenFeaturizer(segment_features=["columns", "length"], columns=None,
                           max_segment_length=1)
    assert _rows(none.fit_transform(tokens).segments, 1)[(0, 0)] == {"length=1"}


def test_a_list_of_kinds_and_a_callable():
    kinds = TokenFeaturizer(segment_features=["shape", "first"], max_segment_length=2)
    rows = _rows(kinds.fit_transform(X).segments, 2)
    # without "words", a one-token segment's first word is said by "first"
    assert rows[(0, 0)] == {"shape=Xx", "first=pedro"}
    assert rows[(0, 1)] == {"shape=Xx x", "first=pedro"}

    def edges(tokens, start, stop):
        return {"span": f"{tokens[start]}..{tokens[stop - 1]}", "n": float(stop - start)}

    custom = TokenFeaturizer(segment_features=edges, max_segment_length=2)
    segments = custom.fit_transform(X).segments
    matrix = segments.matrix
    names = list(segments.feature_names)
    row = matrix[2 * 2 + 1].toarray().ravel()  # "en Nueva": token 2, 2 tokens
    assert row[names.index("span=en..Nueva")] == 1.0 and row[names.index("n")] == 2.0
    assert names == sorted(names)  # merged by name, as custom token features are


def test_bad_segment_parameters_are_named():
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['words!'\]"):
        TokenFeaturizer(segment_features=["words!"]).fit_transform(X)
    with pytest.raises(ValueError, match="no gazetteer= is given"):
        TokenFeaturizer(segment_features=["gazetteer"]).fit_transform(X)
    with pytest.raises(ValueError, match="max_segment_length"):
        TokenFeaturizer(segment_features=True, max_segment_length=0).fit_transform(X)
    with pytest.raises(TypeError, match=r"segment_features\(1:2 of sequence 0\) returned a "
                                        r"list"):
        TokenFeaturizer(segment_features=lambda t, a, b: [a] if a == 1 else {},
                        max_segment_length=1).fit_transform(X)
    with pytest.raises(TypeError, match=r"segment_features\(tokens, 0, 1\) of sequence 2, "
                                        r"feature 'x'"):
        TokenFeaturizer(segment_features=lambda t, a, b: {"x": None} if t[0] == "La" else {},
                        max_segment_length=1).fit_transform(X)


def test_gazetteer_token_features_equal_in_dicts_and_matrix():
    featurizer = TokenFeaturizer(gazetteer=GAZETTEER)
    from_dicts = SequenceVectorizer().fit_transform(featurizer.transform_dicts(X))
    from_matrix = SequenceVectorizer().fit_transform(featurizer.transform(X))
    assert list(from_dicts.feature_names) == list(from_matrix.feature_names)
    assert (from_dicts.matrix != from_matrix.matrix).nnz == 0
    names = list(featurizer.transform(X).feature_names)
    assert names == sorted(names)
    assert {"gaz:B-LOC", "gaz:I-LOC", "gaz:B-PER", "gaz:B-ORG"} <= set(names)
    assert featurizer.transform(X).segments is None  # token features only


def test_segments_are_split_with_the_sequences():
    Xt = TokenFeaturizer(segment_features=True, max_segment_length=3,
                         gazetteer=GAZETTEER).fit_transform(X)
    for ids in ([2, 0], [3], [1, 1, 0], []):
        taken = Xt[np.array(ids, dtype=np.int64)]
        alone = TokenFeaturizer(segment_features=True, max_segment_length=3,
                                gazetteer=GAZETTEER).fit_transform([X[i] for i in ids])
        assert taken.segment_length == (3 if taken.n_tokens else 0)
        assert _rows(taken.segments, 3) == _rows(alone.segments, 3)
    again = pickle.loads(pickle.dumps(Xt))
    assert _rows(again.segments, 3) == _rows(Xt.segments, 3)


def test_vectorizer_learns_a_vocabulary_of_segment_features():
    featurizer = TokenFeaturizer(segment_features=["words", "length"], max_segment_length=2)
    vectorizer = SequenceVectorizer()
    train = vectorizer.fit_transform(featurizer.fit_transform(X[:1]))
    names = vectorizer.segment_vectorizer_.feature_names_
    assert names == sorted(names) and "words=nueva york" in names
    test = vectorizer.transform(featurizer.transform([["Nueva", "York", "y", "Lima"]]))
    assert test.segments.n_features == len(names)
    rows = _rows(test.segments, 2)
    assert rows[(0, 1)] == {"words=nueva york", "length=2"}
    assert rows[(2, 1)] == {"length=2"}  # an unseen name is dropped
    assert train.segments.n_features == len(names)
    # refitted without segments: none are kept, and none come out
    vectorizer.fit(TokenFeaturizer().fit_transform(X))
    assert vectorizer.segment_vectorizer_ is None
    assert vectorizer.transform(featurizer.transform(X)).segments is None


def test_inconsistent_segments_are_refused():
    Xt = TokenFeaturizer(segment_features=True, max_segment_length=2).fit_transform(X)
    with pytest.raises(ValueError, match="segments has 3 sequences for 4"):
        SequenceMatrix(Xt.matrix, Xt.offsets, segments=Xt.segments[[0, 1, 2]])
    rows = Xt.segments.matrix
    with pytest.raises(ValueError, match="same number of rows, L, for each token"):
        SequenceMatrix(Xt.matrix, Xt.offsets,
                       segments=SequenceMatrix(rows[:-2], [0, 10, 10, 14, 16]))
    with pytest.raises(TypeError, match="segments must be a SequenceMatrix"):
        SequenceMatrix(Xt.matrix, Xt.offsets, segments=sp.csr_matrix(rows))
