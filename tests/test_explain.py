"""explain_token and explain_sequence: their terms add up to the model's scores."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SemiMarkovCRF, TokenFeaturizer
from skcrf.explain import explain_sequence, explain_token
from skcrf.features import SequenceVectorizer
from tests.test_spans import _corpus, _test_sequences

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def chain():
    X, y = _corpus("IOB2")
    return CRFClassifier(alpha=2.0, max_iter=15).fit(X, y)


def test_token_terms_are_the_unary_and_transition_scores(chain):
    x = _test_sequences(lengths=(4,))[0]
    matrix = chain.vectorizer_.transform([x])
    unary = (matrix.matrix @ chain.coef_.T)
    predicted = chain.predict([x])[0].tolist()
    ids = [chain.classes_.tolist().index(v) for v in predicted]
    for t in range(4):
        explanation = explain_token(chain, x, t)
        assert explanation.predicted == predicted[t]
        expected = unary[t].copy()
        expected += chain.start_coef_ if t == 0 else chain.transition_coef_[ids[t - 1]]
        expected += chain.end_coef_ if t == 3 else chain.transition_coef_[:, ids[t + 1]]
        np.testing.assert_allclose([explanation.total[c] for c in chain.classes_.tolist()],
                                   expected, rtol=1e-12, atol=1e-12)
        marginals = chain.predict_marginals([x])[0][t]
        np.testing.assert_allclose(list(explanation.marginals.values()), marginals)
        assert "<table>" in explanation._repr_html_()
        features = [row.term for row in explanation.rows if not row.term.startswith("(")]
        assert features == [f"w={x[t]['w']}"]


def test_sequence_differences_add_up_to_the_log_odds(chain):
    x = _test_sequences(lengths=(4,))[0]
    explanation = explain_sequence(chain, x, top=None)
    (best, p1), (second, p2) = chain.predict_nbest([x], n=2)[0]
    assert explanation.best.tolist() == best.tolist()
    assert explanation.second.tolist() == second.tolist()
    # order 1 without transition features: the terms are the whole score
    assert np.isclose(sum(row.difference for row in explanation.rows), np.log(p1 / p2))
    differences = [abs(row.difference) for row in explanation.rows]
    assert differences == sorted(differences, reverse=True)
    assert len(explain_sequence(chain, x, top=2).rows) == min(2, len(differences))


def test_pipelines_name_the_featurizer_features():
    tokens = [["ada", "ran"], ["bob", "and", "rome"]] * 10
    tags = [["B-PER", "O"], ["B-PER", "O", "B-LOC"]] * 10
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(max_iter=20)).fit(tokens, tags)
    explanation = explain_token(pipe, ["ada", "and"], 0)
    assert any("ada" in row.term for row in explanation.rows)
    assert explanation.predicted == "B-PER"
    try:
        import pandas
    except ImportError:
        return
    frame = explanation.to_frame()
    assert isinstance(frame, pandas.DataFrame) and "B-PER" in frame.columns


def test_semi_markov_explains_its_segment_labels():
    X, y = _corpus("IOB2")
    semi = SemiMarkovCRF(alpha=2.0, max_iter=15).fit(X, y)
    x = _test_sequences(lengths=(3,))[0]
    explanation = explain_token(semi, x, 1)
    assert explanation.labels == semi.segment_classes_.tolist()
    assert set(explanation.marginals) == set(semi.classes_.tolist())
    assert isinstance(explain_sequence(semi, x).rows, list)


def test_bad_position_is_named(chain):
    with pytest.raises(ValueError, match="position 5 is not a token of this sequence of 2"):
        explain_token(chain, [{"w": "ada"}, {"w": "ran"}], 5)


def test_tree_token_terms_are_its_unary_root_and_link_scores():
    from skcrf import TreeCRF
    from tests._toys import tree_corpus

    X, y = tree_corpus()
    tree = TreeCRF(max_iter=20).fit(X, y)
    x = X[0]
    explanation = explain_token(tree, x, 1)
    matrix = tree.vectorizer_.transform([x])
    ids = [tree.classes_.tolist().index(v) for v in tree.predict([x])[0].tolist()]
    # token 1's parent is token 2, and token 0 hangs from it
    expected = (matrix.matrix @ tree.coef_.T)[1] + tree.transition_coef_[ids[2]] \
        + tree.transition_coef_[:, ids[0]]
    np.testing.assert_allclose([explanation.total[c] for c in tree.classes_.tolist()],
                               expected, rtol=1e-12, atol=1e-12)
    assert explanation.predicted == tree.predict([x])[0].tolist()[1]
