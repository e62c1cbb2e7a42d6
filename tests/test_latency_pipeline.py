"""The raw-token pipeline's one-sentence shortcuts give what a fresh featurizer gives.

``checked_plan`` reuses a featurizer's previous answer when its parameters
are the very (immutable) objects of its previous call; every way of changing
a parameter (assignment, ``set_params``, changing a list in place) must still
give the features, and the errors, of a new featurizer with those parameters.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.features import TokenFeaturizer, _plan

SENTENCE = [("El", "DA"), ("perro", "NC"), ("come", "VM"), ("Carne", "NC"), ("2024", "Z")]


def assert_same(a, b):
    """Two SequenceMatrix equal in names, CSR arrays and offsets."""
    assert a.feature_names.tolist() == b.feature_names.tolist()
    np.testing.assert_array_equal(a.offsets, b.offsets)
    for x, y in ((a.matrix.indptr, b.matrix.indptr), (a.matrix.indices, b.matrix.indices),
                 (a.matrix.data, b.matrix.data)):
        np.testing.assert_array_equal(x, y)


def error_of(call):
    with pytest.raises(Exception) as caught:
        call()
    return type(caught.value), str(caught.value)


def changes():
    """(name, how to change a used featurizer, the parameters a fresh one gets)."""
    def assign(featurizer):
        featurizer.window = 2

    def set_params(featurizer):
        featurizer.set_params(word_features=("lower", "shape"))

    def append(featurizer):
        featurizer.prefixes.append(4)  # a list changed in place: a new repr, same object

    def nested(featurizer):
        featurizer.columns[1] = 2

    return [("assign", assign, dict(window=2), {}),
            ("set_params", set_params, dict(word_features=("lower", "shape")), {}),
            ("in place", append, dict(prefixes=[2, 3, 4], word_features=("prefix",)),
             dict(prefixes=[2, 3], word_features=("prefix",))),
            ("dict in place", nested, dict(columns={1: 2}), dict(columns={1: 1}))]


@pytest.mark.parametrize("name, change, expected, start",
                         changes(), ids=[c[0] for c in changes()])
def test_a_changed_parameter_gives_a_fresh_featurizers_features(name, change, expected,
                                                                 start):
    featurizer = TokenFeaturizer(**start)
    for _ in range(2):  # the second call takes the remembered plan
        featurizer.transform([SENTENCE])
    change(featurizer)
    assert_same(featurizer.transform([SENTENCE]),
                TokenFeaturizer(**expected).transform([SENTENCE]))


@pytest.mark.parametrize("bad", [dict(window=-1), dict(word_features=("nope",)),
                                 dict(prefixes=(0,)), dict(window=101)])
def test_an_invalid_parameter_after_valid_calls_raises_as_on_a_fresh_featurizer(bad):
    featurizer = TokenFeaturizer()
    featurizer.transform([SENTENCE])
    featurizer.transform([SENTENCE])
    for key, value in bad.items():
        setattr(featurizer, key, value)
    assert error_of(lambda: featurizer.transform([SENTENCE])) == error_of(
        lambda: TokenFeaturizer(**bad).transform([SENTENCE]))


def test_an_invalid_list_changed_in_place_raises():
    featurizer = TokenFeaturizer(word_features=["lower"])
    featurizer.transform([SENTENCE])
    featurizer.word_features.append("nope")
    with pytest.raises(ValueError, match=re.escape("unknown feature(s) ['nope']")):
        featurizer.transform([SENTENCE])


def test_only_immutable_parameters_are_remembered_and_the_featurizer_is_not_kept():
    kept = TokenFeaturizer()
    kept.transform([SENTENCE])
    assert kept in _plan._LAST
    mutable = TokenFeaturizer(prefixes=[2, 3])
    mutable.transform([SENTENCE])
    assert mutable not in _plan._LAST
    n = len(_plan._LAST)
    del kept
    assert len(_plan._LAST) == n - 1  # the entry does not keep its weak key alive


words = st.text(alphabet="aAbB1-é ", min_size=1, max_size=6)
sentences = st.lists(st.tuples(words, st.sampled_from(["NC", "DA", "VM"])),
                     min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(sentence=sentences, window=st.integers(0, 3),
       suffixes=st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True))
def test_changing_the_window_between_sentences_is_seen(sentence, window, suffixes):
    featurizer = TokenFeaturizer(suffixes=tuple(suffixes))
    featurizer.transform([sentence])
    featurizer.set_params(window=window)
    assert_same(featurizer.transform([sentence]),
                TokenFeaturizer(suffixes=tuple(suffixes), window=window).transform([sentence]))


TRAIN = [[("El", "DA"), ("perro", "NC"), ("come", "VM"), ("carne", "NC")],
         [("Juan", "NP"), ("vive", "VM"), ("en", "SP"), ("Madrid", "NP")]]
LABELS = [["O", "O", "O", "O"], ["B-PER", "O", "O", "B-LOC"]]


@pytest.fixture(scope="module")
def pipeline():
    from sklearn.pipeline import make_pipeline

    from skcrf import CRFClassifier, SequenceVectorizer

    return make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(max_iter=20, tol=1e-2)).fit(TRAIN, LABELS)


def by_steps(pipeline, X):
    """deployment.rst's way around the Pipeline's per-call checks."""
    featurizer, vectorizer, model = (step for _, step in pipeline.steps)
    return model.predict(vectorizer.transform(featurizer.transform(X)))


@settings(max_examples=60, deadline=None)
@given(sentence=sentences)
def test_calling_the_steps_in_turn_predicts_as_the_pipeline(pipeline, sentence):
    for got, expected in zip(by_steps(pipeline, [sentence]), pipeline.predict([sentence])):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("bad", [[[("El",)]], [[("El", "DA", "x")]], [[("El", 3)]],
                                 [[3]], "El perro"])
def test_calling_the_steps_in_turn_raises_as_the_pipeline(pipeline, bad):
    assert error_of(lambda: by_steps(pipeline, bad)) == error_of(
        lambda: pipeline.predict(bad))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_sample_sentence_by_sentence_by_steps_as_the_pipeline():
    from sklearn.pipeline import make_pipeline

    from skcrf import CRFClassifier, SequenceVectorizer
    from skcrf.datasets import load_ud_sample

    X, y = load_ud_sample("train")
    model = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                          CRFClassifier(max_iter=10, tol=1e-2)).fit(X[:150], y[:150])
    X_test, _ = load_ud_sample("test")
    batch = model.predict(X_test)
    for sentence, expected in zip(X_test, batch):
        (got,) = by_steps(model, [sentence])
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(model.predict([sentence])[0], expected)
