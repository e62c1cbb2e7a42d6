"""set_output on the transformers whose output is a SequenceMatrix (issue 36, item 9)."""

import pytest
import sklearn
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer, TokenFeaturizer

X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]


def test_the_default_output_is_kept_and_a_dataframe_refused_saying_why():
    vectorizer = SequenceVectorizer()
    assert vectorizer.set_output(transform="default") is vectorizer
    assert vectorizer.set_output() is vectorizer
    assert isinstance(vectorizer.fit_transform(X), SequenceMatrix)
    for transform in ("pandas", "polars"):
        with pytest.raises(ValueError, match=rf"SequenceVectorizer.set_output\(transform="
                                             rf"'{transform}'\): its output is a SequenceMatrix"
                                             rf".* boundaries of the sequences"):
            vectorizer.set_output(transform=transform)


def test_a_pipeline_s_set_output_reaches_the_same_error():
    pipe = make_pipeline(SequenceVectorizer(), CRFClassifier())
    with pytest.raises(ValueError, match="a DataFrame cannot hold"):
        pipe.set_output(transform="pandas")


def test_the_global_setting_leaves_the_sequence_output_alone():
    """transform_output="pandas" serves other transformers; these keep their matrix."""
    with sklearn.config_context(transform_output="pandas"):
        assert isinstance(SequenceVectorizer().fit_transform(X), SequenceMatrix)
        assert isinstance(TokenFeaturizer().fit_transform([["a", "b"]]), SequenceMatrix)


def test_token_featurizer_says_why_too():
    with pytest.raises(ValueError, match="TokenFeaturizer.set_output"):
        TokenFeaturizer().set_output(transform="pandas")
