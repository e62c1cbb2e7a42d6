"""A few sentences of tokens read straight into a vectorizer's columns equal the two steps.

``SequenceVectorizer.transform(TokenFeaturizer().transform(X))`` takes the
featurizer's layout and tokens instead of names when the featurizer's output
is unread (``_small.PendingFeatures``, ``_small_columns``); the reference here
is the same vectorizer given the featurizer's output once built (read), which
goes the general way.
"""

import copy
import pickle
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer, TokenFeaturizer
from skcrf.features import _small, _small_columns

# the small path's own tests: its sentence and hypothesis's tokens and feature sets
from .test_featurizer_small import SENTENCE, feature_sets, str_sequences, tuple_sequences



def built(featurizer, X):
    """The featurizer's output for ``X``, read once (so no longer pending)."""
    out = featurizer.transform(X)
    assert out.n_tokens >= 0  # reading an attribute builds it
    assert type(out) is SequenceMatrix
    return out


def assert_same(a, b):
    """Two SequenceMatrix equal in names, canonical arrays and offsets."""
    assert a.feature_names is b.feature_names or (
        a.feature_names.tolist() == b.feature_names.tolist())
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.offsets, b.offsets)
    for x, y in zip(a._canonical_arrays(), b._canonical_arrays()):
        if x is None or y is None:
            assert x is None and y is None
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def fused(vectorizer, featurizer, X):
    """``vectorizer.transform`` of the featurizer's unread output, checked to take the fused path."""
    out = featurizer.transform(X)
    assert type(out) is _small.PendingFeatures
    result = vectorizer.transform(out)
    assert type(out) is _small.PendingFeatures  # the names were never built
    return result


@pytest.fixture
def fitted():
    """A featurizer and a vectorizer fitted on SENTENCE and a few variants."""
    featurizer = TokenFeaturizer()
    train = [SENTENCE, SENTENCE[::-1], [(w.upper(), p) for w, p in SENTENCE[:4]]]
    vectorizer = SequenceVectorizer().fit(featurizer.fit_transform(train))
    return featurizer, vectorizer


@pytest.mark.parametrize("X", [
    [SENTENCE],
    [SENTENCE[:1]],
    [SENTENCE[:2], [], SENTENCE[3:]],
    [[("Zqxv", "XX"), ("wwkq", "YY")]],  # nothing known but bias and boundaries
    [[("", ""), ("a=b", "=")]],
])
def test_fused_columns_equal_the_two_steps(fitted, X):
    featurizer, vectorizer = fitted
    expected = vectorizer.transform(built(featurizer, X))
    for _ in range(2):  # the second call reads remembered values
        assert_same(fused(vectorizer, featurizer, X), expected)


@pytest.mark.parametrize("vectorizer", [
    SequenceVectorizer(sort=False),  # columns not in the slots' name order
    SequenceVectorizer(min_freq=2),  # names dropped from the vocabulary
    SequenceVectorizer(dtype=np.float32),
])
def test_other_vocabularies(vectorizer):
    featurizer = TokenFeaturizer(window=2)
    train = [SENTENCE, SENTENCE[2:], SENTENCE[::-1]]
    vectorizer.fit(featurizer.fit_transform(train))
    for X in ([SENTENCE], [SENTENCE[1:5], SENTENCE[:3]]):
        assert_same(fused(vectorizer, featurizer, X),
                    vectorizer.transform(built(featurizer, X)))


def test_a_vocabulary_of_dicts(fitted):
    """A vectorizer fitted on the featurizer's dicts knows the same names."""
    featurizer, _ = fitted
    vectorizer = SequenceVectorizer().fit(featurizer.transform_dicts([SENTENCE]))
    assert_same(fused(vectorizer, featurizer, [SENTENCE[2:]]),
                vectorizer.transform(built(featurizer, [SENTENCE[2:]])))


def test_a_refitted_vectorizer_uses_its_new_vocabulary(fitted):
    featurizer, vectorizer = fitted
    fused(vectorizer, featurizer, [SENTENCE])
    vectorizer.fit(featurizer.fit_transform([SENTENCE[3:]]))
    assert_same(fused(vectorizer, featurizer, [SENTENCE]),
                vectorizer.transform(built(featurizer, [SENTENCE])))


def test_the_pending_output_is_a_sequence_matrix_when_read(fitted):
    featurizer, _ = fitted
    expected = built(featurizer, [SENTENCE])
    for read in (lambda out: out if out.shape else None, copy.copy, copy.deepcopy,
                 lambda out: pickle.loads(pickle.dumps(out))):
        out = read(featurizer.transform([SENTENCE]))
        assert type(out) is SequenceMatrix
        assert_same(out, expected)
    out = featurizer.transform([SENTENCE])
    assert repr(out) == repr(expected)
    assert type(out) is SequenceMatrix
    out = featurizer.transform([SENTENCE])
    np.testing.assert_array_equal(out[0].toarray(), expected[0].toarray())


def test_changing_the_input_after_transform_changes_nothing(fitted):
    featurizer, vectorizer = fitted
    expected = vectorizer.transform(built(featurizer, [SENTENCE]))
    X = [list(SENTENCE)]
    unread, unread_too = featurizer.transform(X), featurizer.transform(X)
    X[0][0] = ("Otro", "NC")
    X[0].append(("más", "RG"))
    assert_same(vectorizer.transform(unread), expected)  # the fused path
    assert unread_too.n_tokens == len(SENTENCE)  # built now
    assert_same(vectorizer.transform(unread_too), expected)


def test_forgetting_values_changes_nothing(fitted, monkeypatch):
    featurizer, vectorizer = fitted
    sentences = [SENTENCE[k:] + SENTENCE[:k] for k in range(len(SENTENCE))]
    expected = [vectorizer.transform(built(featurizer, [s])) for s in sentences]
    monkeypatch.setattr(_small_columns, "_REMEMBERED_VALUES", 5)  # forgets all often
    for _ in range(2):
        for s, e in zip(sentences, expected):
            assert_same(fused(vectorizer, featurizer, [s]), e)


def test_inputs_between_the_small_path_and_the_general_one(fitted, monkeypatch):
    """Past SMALL_TOKENS the output is still pending; built, it is the general path's."""
    featurizer, vectorizer = fitted
    X = [SENTENCE[k:] + SENTENCE[:k] for k in range(len(SENTENCE))] * 3  # 243 tokens
    monkeypatch.setattr(_small, "FUSED_TOKENS", 0)
    general = featurizer.transform(X)
    expected = vectorizer.transform(general)
    monkeypatch.undo()
    assert 243 > _small.SMALL_TOKENS and type(general) is SequenceMatrix
    assert_same(fused(vectorizer, featurizer, X), expected)
    assert_same(built(featurizer, X), general)
    monkeypatch.setattr(_small, "FUSED_TOKENS", 242)  # one token past: the general path
    assert type(featurizer.transform(X)) is SequenceMatrix


def test_growing_tables_keep_every_value(fitted):
    featurizer, vectorizer = fitted
    words = [(f"w{i}", "NC") for i in range(700)]  # past the first capacities
    batches = [words[i:i + 90] for i in range(0, 700, 90)]
    expected = [vectorizer.transform(built(featurizer, [b])) for b in batches + batches]
    for b, e in zip(batches + batches, expected):
        assert_same(fused(vectorizer, featurizer, [b]), e)


def test_concurrent_calls_agree(fitted, monkeypatch):
    featurizer, vectorizer = fitted
    sentences = [SENTENCE[k:] + SENTENCE[:k] + [(f"new{k}", "NC")]
                 for k in range(len(SENTENCE))]
    expected = [vectorizer.transform(built(featurizer, [s])) for s in sentences]
    monkeypatch.setattr(_small_columns, "_REMEMBERED_VALUES", 6)  # forgets on most calls
    names = _small._Source.names

    def yielding_names(source, value):
        time.sleep(0)  # let another thread run inside a call's inserts
        return names(source, value)

    monkeypatch.setattr(_small._Source, "names", yielding_names)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            outputs = list(pool.map(lambda s: fused(vectorizer, featurizer, [s]),
                                    sentences * 30))
    finally:
        sys.setswitchinterval(previous)
    for k, out in enumerate(outputs):
        assert_same(out, expected[k % len(sentences)])


@settings(max_examples=150, deadline=None)
@given(train=st.one_of(str_sequences, tuple_sequences), data=st.data(),
       window=st.integers(0, 3), word_features=feature_sets, context_features=feature_sets,
       bias=st.booleans(), boundary=st.booleans(), sort=st.booleans(),
       column_prefixes=st.sampled_from([(), (1,), (1, 2)]))
def test_fused_columns_equal_the_two_steps_on_random_input(
        train, data, window, word_features, context_features, bias, boundary, sort,
        column_prefixes):
    featurizer = TokenFeaturizer(window=window, word_features=word_features,
                                 context_features=context_features, prefixes=(1, 3),
                                 bias=bias, boundary=boundary,
                                 column_prefixes=column_prefixes)
    vectorizer = SequenceVectorizer(sort=sort).fit(featurizer.fit_transform(train))
    # tokens of the training data's form: some seen, some not
    X = data.draw(tuple_sequences if isinstance(next(
        (t for s in train for t in s), ""), tuple) else str_sequences)
    if not sum(map(len, X)):
        return  # no tokens: not the small path
    assert_same(fused(vectorizer, featurizer, X), vectorizer.transform(built(featurizer, X)))


def test_pipeline_predictions_and_errors_equal_the_general_path(tagged_small, monkeypatch):
    """One sentence and a batch, unknown words included (the small path's pipeline test)."""
    X_train, y_train, X_test, _ = tagged_small
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(max_iter=8, n_jobs=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_train[:120], y_train[:120])
    sentences = X_test[:30] + [[("Zqxv", "NC"), ("wwkq", "VMI")]]
    labels = [pipe.predict([s])[0] for s in sentences]
    marginals = [pipe.predict_proba([s])[0] for s in sentences]
    several = pipe.predict(sentences)  # past SMALL_TOKENS, within FUSED_TOKENS
    bad = [[("a", "B")], [("c", "D"), ("e", 3)]]
    with pytest.raises(TypeError) as fused_error:
        pipe.predict(bad)
    monkeypatch.setattr(_small, "SMALL_TOKENS", 0)  # every call the general way
    monkeypatch.setattr(_small, "FUSED_TOKENS", 0)
    for s, y, p in zip(sentences, labels, marginals):
        np.testing.assert_array_equal(pipe.predict([s])[0], y)
        np.testing.assert_array_equal(pipe.predict_proba([s])[0], p)
    for a, b in zip(pipe.predict(sentences), several):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError) as general_error:
        pipe.predict(bad)
    assert str(fused_error.value) == str(general_error.value)
