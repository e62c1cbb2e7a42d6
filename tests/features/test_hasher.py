"""SequenceHasher: sklearn's FeatureHasher per token, for dicts and TokenFeaturizer output."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_extraction import FeatureHasher

from skcrf import (CRFClassifier, SequenceHasher, SequenceMatrix, SequenceVectorizer,
                   TokenFeaturizer)

X = [[{"word": "Hello", "n": 2.0, "tags": ["a", "b"]}, {"word": "world", "len": 5}],
     [], [{"word": "Hello", "flag": True}]]


def _as_feature_hasher_dicts(X):
    rows = []
    for sequence in X:
        for token in sequence:
            row = {}
            for key, value in token.items():
                items = value if isinstance(value, list) else [value]
                for item in items:
                    name, v = (f"{key}={item}", 1.0) if isinstance(item, str) else (key, item)
                    row[name] = row.get(name, 0.0) + float(v)
            rows.append(row)
    return rows


@pytest.mark.parametrize("alternate_sign", [True, False])
@pytest.mark.parametrize("n_features", [4, 32, 2 ** 20])
def test_columns_and_values_are_feature_hashers(n_features, alternate_sign):
    hasher = SequenceHasher(n_features=n_features, alternate_sign=alternate_sign)
    hashed = hasher.transform(X)
    reference = FeatureHasher(n_features=n_features, alternate_sign=alternate_sign).transform(
        _as_feature_hasher_dicts(X))
    assert isinstance(hashed, SequenceMatrix) and hashed.matrix.shape == reference.shape
    np.testing.assert_array_equal(hashed.lengths, [2, 0, 1])
    assert abs(hashed.matrix - reference).max() == 0
    assert hashed.feature_names is None


def test_token_featurizer_output_hashes_as_its_dicts():
    raw = [["The", "cat"], ["sat"]]
    featurized = TokenFeaturizer().fit_transform(raw)
    vectorizer = SequenceVectorizer().fit(featurized)
    dicts = [[{name: value for name, value in zip(vectorizer.feature_names_, row)
               if value} for row in featurized[q].toarray()] for q in range(len(raw))]
    by_names = SequenceHasher(n_features=64).transform(featurized)
    by_dicts = SequenceHasher(n_features=64).transform(dicts)
    assert abs(by_names.matrix - by_dicts.matrix).max() == 0


def test_trees_pass_through_and_matrices_need_names():
    trees = [[{"w": "a", "__parent__": -1}, {"w": "b", "__parent__": 0}]]
    np.testing.assert_array_equal(SequenceHasher().transform(trees).parents, [-1, 0])
    unnamed = SequenceMatrix(SequenceVectorizer().fit_transform(X).matrix, [0, 2, 2, 3])
    with pytest.raises(ValueError, match="hashes feature names"):
        SequenceHasher().transform(unnamed)
    with pytest.raises(ValueError, match="'n_features' parameter"):
        SequenceHasher(n_features=0).transform(X)


def test_a_hashed_stream_trains_with_partial_fit():
    """Each batch hashed on its own: the width, hence the model's layout, never changes."""
    rng = np.random.default_rng(0)
    words = ["the", "a", "cat", "dog", "runs"]
    tags = {"the": "D", "a": "D", "cat": "N", "dog": "N", "runs": "V"}
    hasher = clone(SequenceHasher(n_features=2 ** 10)).fit()
    model = CRFClassifier(solver="perceptron", random_state=0)
    for batch in range(5):
        sentences = [list(rng.choice(words, 4)) for _ in range(10)]
        # a new word in each batch: a vocabulary that never stops growing
        sentences[0][0] = f"new{batch}"
        X_batch = [[{"w": w} for w in s] for s in sentences]
        y_batch = [[tags.get(w, "N") for w in s] for s in sentences]
        model.partial_fit(hasher.transform(X_batch), y_batch, classes=["D", "N", "V"])
    assert model.n_features_in_ == 2 ** 10
    test = [[{"w": "the"}, {"w": "dog"}, {"w": "runs"}]]
    assert model.predict(hasher.transform(test))[0].tolist() == ["D", "N", "V"]


def test_segment_features_are_hashed_not_dropped():
    # issue 43, item 13: a SequenceMatrix's segments were silently dropped
    words = [["Ada", "Lovelace", "wrote"], ["Turing", "ran"]]
    featurized = TokenFeaturizer(segment_features=True, max_segment_length=2).fit_transform(words)
    assert featurized.segments is not None
    hashed = SequenceHasher(n_features=64).transform(featurized)
    assert hashed.segments is not None
    assert hashed.segments.n_features == 64
    np.testing.assert_array_equal(hashed.segments.offsets, featurized.segments.offsets)
    expected = SequenceHasher(n_features=64).transform(featurized.segments)
    assert (hashed.segments.matrix != expected.matrix).nnz == 0


@pytest.mark.parametrize("dtype", [object, np.int64, "not a dtype"])
def test_the_dtype_must_be_a_float_type(dtype):
    # issue 43, item 13: the dtype was not checked
    with pytest.raises(ValueError, match="dtype must be a floating-point type"):
        SequenceHasher(dtype=dtype).transform(X)


def test_a_model_files_hasher_dtype_is_checked_at_load():
    import io

    from sklearn.pipeline import make_pipeline

    from skcrf import load_model, save_model
    from tests._model_files import rewritten

    pipe = make_pipeline(SequenceHasher(n_features=16), CRFClassifier(max_iter=30))
    pipe.fit([[{"w": "a"}, {"w": "b"}]] * 3, [["A", "B"]] * 3)
    buffer = io.BytesIO()
    save_model(pipe, buffer)

    def int_dtype(tree):
        hasher = tree["model"]["params"]["steps"][0]["items"][1]
        hasher["params"]["dtype"]["dtype"] = "<i8"

    damaged = rewritten(buffer.getvalue(), int_dtype)
    with pytest.raises(ValueError, match="dtype must be a floating-point type"):
        load_model(io.BytesIO(damaged))


def test_a_lone_surrogate_is_named_not_a_bare_unicode_error():
    # issue 43, item 22
    with pytest.raises(ValueError, match=r"feature name 'w=a\\udc80b' cannot be hashed.*lone "
                                         r"surrogate"):
        SequenceHasher().transform([[{"w": "a\udc80b"}]])
