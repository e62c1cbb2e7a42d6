"""The one-sentence path of predict: the batch path's results and errors, faster.

``SequenceVectorizer._plain_arrays`` and ``queries.plain_dict_features`` skip
the SequenceMatrix and the checks only other inputs need; every test here
compares them with the general path, which they must equal bit for bit.
"""

import math
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import array_shapes, arrays
from hypothesis.strategies import floats

import skcrf.compat as compat
from skcrf import CRFClassifier, SequenceVectorizer
from skcrf._estimators import base
from skcrf.features import _dict_pairs

from .features.test_vectorizer import sequences, tutorial_dicts

TRAIN = [[("El", "DA"), ("perro", "NC"), ("come", "VM"), ("carne", "NC")],
         [("La", "DA"), ("casa", "NC"), ("es", "VS"), ("Grande", "AQ")],
         [("Juan", "NP"), ("vive", "VM"), ("en", "SP"), ("Madrid", "NP")]]
LABELS = [["O", "O", "O", "O"], ["O", "O", "O", "O"], ["B-PER", "O", "O", "B-LOC"]]


@pytest.fixture(scope="module")
def model():
    X = [tutorial_dicts(s) for s in TRAIN]
    return CRFClassifier(max_iter=20, tol=1e-2).fit(X, LABELS)


def general_path():
    """The batch path only: the one-sentence shortcut made to decline every input."""
    return mock.patch.object(base, "plain_dict_features", return_value=None)


def general_transform(vectorizer, X):
    """``vectorizer.transform(X)`` by the general path (transform takes the short one too)."""
    with mock.patch.object(SequenceVectorizer, "_plain_transform", return_value=None):
        return vectorizer.transform(X)


@settings(max_examples=150, deadline=None)
@given(X=sequences, again=sequences)
def test_plain_arrays_are_transforms(X, again):
    vectorizer = SequenceVectorizer().fit(X + again)
    for inputs in (X, X, again):  # cold, then with the pairs remembered
        arrays = vectorizer._plain_arrays(inputs)
        expected = general_transform(vectorizer, inputs)
        if arrays is None:
            continue  # a NaN, an empty input: the general path's
        got = vectorizer.transform(inputs)  # which takes the short path
        assert got.feature_names is vectorizer._names_out and got.shape == expected.shape
        np.testing.assert_array_equal(got.matrix.toarray(), expected.matrix.toarray())
        data, indices, indptr, offsets = arrays
        np.testing.assert_array_equal(offsets, expected.offsets)
        matrix = expected.matrix
        np.testing.assert_array_equal(indices, matrix.indices)
        np.testing.assert_array_equal(indptr, matrix.indptr)
        values = np.ones(indices.shape[0]) if data is None else data
        np.testing.assert_array_equal(values, matrix.data)


@pytest.mark.parametrize("inputs", [
    [[{"w": "a", "__parent__": -1}]],   # a tree's parents
    ([{"w": "a"}],),                     # a tuple of sequences
    [[{"w": Decimal(1)}]],
    [[{"w": ["a"]}]],
    [[["w"]]],
    [[{"w": np.ones(2)}]],
])
def test_plain_arrays_leave_other_inputs_to_transform(inputs):
    vectorizer = SequenceVectorizer().fit([[{"w": "a", "n": 1}]])
    assert vectorizer._plain_arrays(inputs) is None


def test_plain_arrays_leave_a_transform_of_its_own_to_it():
    class Lower(SequenceVectorizer):
        def transform(self, X):
            return super().transform([[{k: v.lower() for k, v in t.items()} for t in s]
                                      for s in X])

    X = [[{"w": "A"}]]
    assert Lower().fit([[{"w": "a"}]])._plain_arrays(X) is None
    vectorizer = SequenceVectorizer().fit([[{"w": "a"}]])
    vectorizer.transform = lambda X: None  # set on the instance
    assert vectorizer._plain_arrays(X) is None


def test_plain_arrays_decline_other_dtypes_and_vectors():
    X = [[{"w": "a", "n": 2.5}]]
    assert SequenceVectorizer(dtype=np.float32).fit(X)._plain_arrays(X) is None
    assert SequenceVectorizer(dtype="float64").fit(X)._plain_arrays(X) is not None
    vectors = SequenceVectorizer().fit([[{"w": "a", "v": np.ones(2)}]])
    assert vectors._plain_arrays(X) is None  # its output has a dense block of zeros


def test_one_sentence_predicts_as_the_batch_path(model):
    sentences = [tutorial_dicts(s) for s in TRAIN + [[("Pedro", "NP"), ("come", "VM")]]]
    for sentence in sentences * 2:
        assert base.plain_dict_features(model.vectorizer_, [sentence]) is not None
        got = model.predict([sentence])
        marginals = model.predict_marginals([sentence])
        with general_path():
            expected = model.predict([sentence])
            expected_marginals = model.predict_marginals([sentence])
        assert got[0].tolist() == expected[0].tolist()
        np.testing.assert_array_equal(marginals[0], expected_marginals[0])
    # a batch of several sentences takes the same path, and so does n-best
    got = model.predict_nbest(sentences, 3)
    with general_path():
        expected = model.predict_nbest(sentences, 3)
    assert [[(labels.tolist(), p) for labels, p in nbest] for nbest in got] == [
        [(labels.tolist(), p) for labels, p in nbest] for nbest in expected]


def _error_of(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("bad", [
    {"bias": Decimal(1)},                  # equal to a remembered 1.0
    {"bias": None},
    {"postag": {"nested": "NC"}},
    {"bias": complex(1, 1)},
    {"word.lower()": b"perro"},
    {"bias": math.nan},                    # non-finite: named by the estimator
    {"bias": math.inf},
])
def test_bad_input_in_one_sentence_raises_as_the_batch_path(model, bad):
    sentence = tutorial_dicts(TRAIN[0])
    model.predict([sentence])  # its pairs remembered
    sentence[2] = dict(sentence[2], **bad)
    error = _error_of(lambda: model.predict([sentence]))
    with general_path():
        assert _error_of(lambda: model.predict([sentence])) == error
    assert re.search(r"[Ss]equence 0.*token 2|sequence 0, token 2", error[1]), error


def test_bad_tokens_in_one_sentence_raise_as_the_batch_path(model):
    for sentence in ([{"bias": 1.0}, "perro"], [{"bias": 1.0}, None], "perro"):
        error = _error_of(lambda: model.predict([sentence]))
        with general_path():
            assert _error_of(lambda: model.predict([sentence])) == error


def test_compat_one_sentence_as_its_general_path():
    X = [tutorial_dicts(s) for s in TRAIN]
    crf = compat.CRF(max_iterations=20).fit(X, LABELS)
    nested = [{"w": {"lower": word.lower()}, "pos": pos} for word, pos in TRAIN[1]]
    names = [[f"w:{word.lower()}", f"pos:{pos}"] for word, pos in TRAIN[1]]
    general = mock.patch.object(SequenceVectorizer, "_plain_arrays", return_value=None)
    for sentence in X + [nested, names]:
        got = crf.predict_single(sentence)
        assert crf.predict([sentence, sentence]) == [got, got]
        with general:
            assert crf.predict_single(sentence) == got
            expected_marginals = crf.predict_marginals_single(sentence)
        assert crf.predict_marginals_single(sentence) == expected_marginals
    assert crf._plain_labels([X[0]]) is not None  # the short path was taken above
    bad = [dict(X[0][0], bias=Decimal(1))]
    error = _error_of(lambda: crf.predict_single(bad))
    with general:
        assert _error_of(lambda: crf.predict_single(bad)) == error
    unfitted = _error_of(lambda: compat.CRF().predict_single(X[0]))
    assert unfitted[0].__name__ == "NotFittedError"


def test_threads_forgetting_the_remembered_pairs_tag_as_one(model):
    """The pairs are a cache of a fixed vocabulary: replaced under readers, never wrong."""
    words = ["perro", "casa", "Juan", "Madrid", "come", "vive", "en", "La", "El", "es"]
    sentences = [tutorial_dicts([(words[(i + j) % len(words)], "NC") for j in range(3 + i % 4)])
                 for i in range(40)]
    with general_path():
        serial = [model.predict([s])[0].tolist() for s in sentences]
    with mock.patch.object(_dict_pairs, "_REMEMBERED_PAIRS", 16):  # forgotten over and over
        start = threading.Barrier(4)

        def work(k):
            start.wait()  # the four threads at once
            return [model.predict([s])[0].tolist() for s in sentences[k:] + sentences[:k]]

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, [0, 7, 13, 29]))
    for k, result in zip([0, 7, 13, 29], results):
        assert result == serial[k:] + serial[:k]


def test_a_micro_batch_past_the_small_path_equals_the_flat_path():
    """Between 4,096 and 32,768 values transform takes the flat path; predict the pairs."""
    words = ["perro", "casa", "Juan", "Madrid", "come", "vive", "en", "La", "El", "es", "7"]
    X = [tutorial_dicts([(words[(i * j) % len(words)], "NC") for j in range(5 + i % 9)])
         for i in range(150)]
    vectorizer = SequenceVectorizer().fit(X[::2])
    assert 1 << 12 < sum(map(len, (t for s in X for t in s))) <= 1 << 15
    for _ in range(2):  # cold, then remembered
        data, indices, indptr, offsets = vectorizer._plain_arrays(X)
        expected = vectorizer.transform(X)
        np.testing.assert_array_equal(offsets, expected.offsets)
        np.testing.assert_array_equal(indices, expected.matrix.indices)
        np.testing.assert_array_equal(indptr, expected.matrix.indptr)
        assert data is None and np.all(expected.matrix.data == 1)


def _assert_plain_arrays_are_transform(vectorizer, X):
    data, indices, indptr, offsets = vectorizer._plain_arrays(X)
    expected = vectorizer.transform(X)
    np.testing.assert_array_equal(offsets, expected.offsets)
    np.testing.assert_array_equal(indices, expected.matrix.indices)
    np.testing.assert_array_equal(indptr, expected.matrix.indptr)
    values = np.ones(indices.shape[0]) if data is None else data
    np.testing.assert_array_equal(values, expected.matrix.data)


@pytest.mark.parametrize("X", [
    # a token of more values than the insertion kernel sorts, beside short ones
    [[{f"k{i:02d}": "v" for i in range(40, 0, -1)}, {"k07": "v", "k03": "v"}]],
    # two keys making one name: one column holding 2
    [[{"w=x": "y", "w": "x=y", "a": "b"}, {"w": "x=y"}]],
    # numbers other than 0 and 1, never remembered, in between remembered pairs
    [[{"w": "a", "n": 2.5, "m": 0}, {"n": -3, "w": "b", "m": True}]],
])
def test_plain_arrays_of_long_rows_repeats_and_numbers_are_transforms(X):
    vectorizer = SequenceVectorizer().fit(X)
    for _ in range(2):  # cold, then with the pairs remembered
        _assert_plain_arrays_are_transform(vectorizer, X)


def test_remap_columns_without_a_remap_drops_only_the_negative_columns():
    from skcrf.features._kernels import remap_columns

    indices = np.array([5, -1, 2, -1, -1, 0], dtype=np.int32)
    indptr = np.array([0, 2, 2, 5, 6], dtype=np.int64)
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    kept_data, kept, kept_ptr = remap_columns(data, indices, indptr,
                                              np.empty(0, dtype=np.int32), False)
    assert kept.tolist() == [5, 2, 0] and kept_ptr.tolist() == [0, 1, 1, 2, 3]
    assert kept_data.tolist() == [1.0, 3.0, 6.0]


@settings(max_examples=100, deadline=None)
@given(unary=arrays(np.float64, array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=6),
                    elements=floats(-1e300, 1e300)))
def test_shifting_finite_scores_takes_the_plain_maximum(unary):
    from skcrf._chain import _shift_tokens

    checked, plain = unary.copy(), unary.copy()
    _shift_tokens(checked)
    _shift_tokens(plain, finite=True)
    np.testing.assert_array_equal(plain, checked)
