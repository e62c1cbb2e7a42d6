"""CRF++ templates in TokenFeaturizer(template=...) against a plain reading of CRF++'s spec."""

import re

import numpy as np
import pytest

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from tests._corpora import tagged_sentences

#: CRF++'s documented example template (its README), and its base-phrase chunking one.
README_TEMPLATE = """\
# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
B
"""


def naive_template_features(template, sentence):
    """Per token, the set of feature strings CRF++ makes: each line with its macros
    replaced, one token at a time, in plain Python."""
    lines = [line.strip() for line in template.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#") and line != "B"]
    features = []
    for i in range(len(sentence)):
        token_features = {}

        def value(match):
            row, column = int(match.group(1)), int(match.group(2))
            j = i + row
            if j < 0:
                return f"_B-{-j}"
            if j >= len(sentence):
                return f"_B+{j - len(sentence) + 1}"
            token = sentence[j]
            return token if isinstance(token, str) else token[column]

        for line in lines:
            name = re.sub(r"%x\[(-?\d+),(\d+)\]", value, line)
            token_features[name] = token_features.get(name, 0.0) + 1.0
        features.append(token_features)
    return features


@pytest.fixture(scope="module")
def sentences():
    X, _, _, _, _ = tagged_sentences(60)
    return [[tuple(token[:2]) for token in sentence] for sentence in X]


@pytest.mark.parametrize("template", [
    README_TEMPLATE,
    "U:%x[0,0]\nU1:%x[-3,1]|%x[4,0]\nUbias\n",  # any text around the macros; a bias line
    "B01:%x[0,1]\nU02:%x[0,0]/%x[0,0]\n",
])
def test_features_are_the_spec_s(sentences, template):
    featurizer = TokenFeaturizer(template=template)
    expected = [naive_template_features(template, s) for s in sentences]
    assert featurizer.transform_dicts(sentences) == expected
    ours = featurizer.fit_transform(sentences)
    theirs = SequenceVectorizer().fit_transform(expected)
    assert list(ours.feature_names) == list(theirs.feature_names)
    assert (ours.matrix != theirs.matrix).nnz == 0
    np.testing.assert_array_equal(ours.offsets, theirs.offsets)


def test_a_template_file_and_str_tokens(tmp_path, sentences):
    path = tmp_path / "template"
    path.write_text("U00:%x[-1,0]\nU01:%x[0,0]\n", encoding="utf-8")
    words = [[token[0] for token in s] for s in sentences[:5]]
    assert (TokenFeaturizer(template=path).transform_dicts(words)
            == [naive_template_features("U00:%x[-1,0]\nU01:%x[0,0]", s) for s in words])
    assert (TokenFeaturizer(template=str(path)).transform_dicts(words)
            == TokenFeaturizer(template=path).transform_dicts(words))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_b_lines_make_observation_conditioned_transitions(sentences):
    X, y, _, _, _ = tagged_sentences(60)
    template = "U00:%x[0,0]\nU01:%x[0,1]\nB10:%x[0,1]\n"
    features = SequenceVectorizer().fit_transform(
        TokenFeaturizer(template=template).fit_transform(sentences))
    crf = CRFClassifier(transition_features=["B10:"], max_iter=5).fit(features, y)
    assert crf.transition_feature_coef_.nnz > 0
    rows = np.unique(crf.transition_feature_coef_.nonzero()[0])
    assert all(name.startswith("B10:") for name in crf.feature_names_[rows])


@pytest.mark.parametrize("template, match", [
    ("U00:%x[0,0]\nX01:%x[0,0]\n", "line 2"),
    ("U00:%x[0,5]\n", "column 5"),
    ("U00:%X[0,0]\n", "not a %x"),
    ("# nothing\n", "no U or B line"),
    ("no/such/template/file", "readable file"),
])
def test_malformed_templates_are_named(sentences, template, match):
    with pytest.raises(ValueError, match=match):
        TokenFeaturizer(template=template).fit_transform(sentences[:3])


def test_template_is_not_combined_with_custom_features():
    with pytest.raises(ValueError, match="custom"):
        TokenFeaturizer(template="U00:%x[0,0]\n", custom=len).fit([["a"]])


@pytest.mark.parametrize("template", [README_TEMPLATE, "U:%x[0,0]/%x[0,0]\nUbias\n",
                                      "U:%x[0,0]\nU:%x[0,0]\n"])  # twice: valued 2
def test_a_sentence_at_a_time_makes_the_features_of_the_batch(sentences, template):
    """A few tokens take a path of plain lists; its output is the general path's."""
    featurizer = TokenFeaturizer(template=template)
    batch = SequenceVectorizer().fit(featurizer.transform(sentences))
    whole = batch.transform(featurizer.transform(sentences))
    for q in (0, 1, 7):
        alone = featurizer.transform([sentences[q]])
        assert list(alone.feature_names) == sorted(set(alone.feature_names))
        rows = batch.transform(alone).matrix
        expected = whole.matrix[whole.offsets[q]:whole.offsets[q + 1]]
        assert rows.shape == expected.shape and (rows != expected).nnz == 0
        assert alone.matrix.has_sorted_indices
    two = featurizer.transform([sentences[2], [], sentences[3]])
    assert two.offsets.tolist()[1] == two.offsets.tolist()[2]
    assert featurizer.transform_dicts([sentences[2]]) == [
        naive_template_features(template, sentences[2])]
