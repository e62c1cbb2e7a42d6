"""Explanations of every structure's terms: they add up to the model's own scores.

The oracle is the model's probabilities, not the explanation's code: the
differences of explain_sequence add up to log(p(best) / p(second)) of
predict_nbest; the terms of any labelling differ from another's by the
difference of their sequence_log_proba; two candidate labels' totals in
explain_token differ by the difference of the log-probabilities of the
labellings that give the token those labels.
"""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceMatrix, SequenceVectorizer,
                   TokenFeaturizer, TreeCRF)
from skcrf._explain_terms import TermReader, labelling_terms
from skcrf.explain import _final_and_matrix, explain_sequence, explain_token
from skcrf.features import SequenceUnion, WordVectorizer
from tests._toys import chain_corpus
from tests.test_dense_input import numeric_corpus
from tests.test_semimarkov_segments import _dictionary_task
from tests.test_spans import _corpus, _test_sequences

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

TOLERANCE = 1e-9


def _log_proba(final, matrix, labels):
    return float(final.sequence_log_proba(matrix, [list(labels)])[0])


def check_sequence_identity(model, x):
    """explain_sequence's differences add up to the log-odds of predict_nbest's two best."""
    final, matrix = _final_and_matrix(model, x)
    explanation = explain_sequence(model, x, top=None)
    if hasattr(final, "root_coef_"):  # no n-best: the second best by enumeration
        (best, p1), (second, p2) = _two_best_by_enumeration(final, matrix)
    else:
        (best, p1), (second, p2) = final.predict_nbest(matrix, n=2)[0]
    assert explanation.best.tolist() == best.tolist()
    assert explanation.second.tolist() == second.tolist()
    total = sum(row.difference for row in explanation.rows)
    assert abs(total - np.log(p1 / p2)) < TOLERANCE
    assert abs(explanation.log_odds - np.log(p1 / p2)) < TOLERANCE
    return explanation


def _two_best_by_enumeration(final, matrix):
    import itertools

    classes = final.classes_.tolist()
    n = int(matrix.offsets[-1])
    labellings = [list(t) for t in itertools.product(classes, repeat=n)]
    log_p = np.array([_log_proba(final, matrix, y) for y in labellings])
    first, second = np.argsort(-log_p, kind="stable")[:2]
    assert log_p[first] > log_p[second]  # no tie: the second best is the one named
    return [(np.array(labellings[k]), np.exp(log_p[k])) for k in (first, second)]


def check_labelling_terms(model, x, n=6):
    """The terms of each of the n best labellings against the best: their log-probabilities."""
    final, matrix = _final_and_matrix(model, x)
    reader = TermReader(final, matrix)
    index = {c: k for k, c in enumerate(final.classes_.tolist())}
    nbest = final.predict_nbest(matrix, n=n)[0]
    assert len(nbest) >= 2
    sums = [sum(labelling_terms(reader, np.array([index[v] for v in y.tolist()])).values())
            for y, _ in nbest]
    for (y, p), total in zip(nbest[1:], sums[1:]):
        assert abs((sums[0] - total) - np.log(nbest[0][1] / p)) < TOLERANCE


def check_token_identity(model, x, position):
    """Two candidate labels' totals differ by their labellings' log-probabilities."""
    final, matrix = _final_and_matrix(model, x)
    explanation = explain_token(model, x, position)
    predicted = final.predict(matrix)[0].tolist()
    log_p = {}
    for label in final.classes_.tolist():
        labels = list(predicted)
        labels[position] = label
        log_p[label] = _log_proba(final, matrix, labels)
    reference = predicted[position]
    for label, value in log_p.items():
        if np.isfinite(value) and np.isfinite(explanation.total[label]):
            assert abs((explanation.total[reference] - explanation.total[label])
                       - (log_p[reference] - value)) < TOLERANCE
    return explanation


@pytest.fixture(scope="module")
def corpus():
    return _corpus("IOB2", n_sequences=60)


def _sequences():
    return _test_sequences(seed=4, lengths=(5, 4, 6))


def test_transition_features_are_broken_down(corpus):
    crf = CRFClassifier(alpha=0.5, max_iter=20, transition_features="all").fit(*corpus)
    assert crf.transition_feature_coef_.nnz
    terms = set()
    for x in _sequences():
        explanation = check_sequence_identity(crf, x)
        terms |= {row.term for row in explanation.rows}
        check_labelling_terms(crf, x)
        for t in range(len(x)):
            check_token_identity(crf, x, t)
    assert any(term.endswith(" (transition)") for term in terms)
    token = explain_token(crf, x, 2)
    # the token's own transition features and the next token's, with the pair they weight
    assert any(row.term.endswith(f" (from {token_labels(crf, x)[1]})")
               and not row.term.startswith("(") for row in token.rows)
    assert any(" (to " in row.term and not row.term.startswith("(") for row in token.rows)


def token_labels(model, x):
    final, matrix = _final_and_matrix(model, x)
    return final.predict(matrix)[0].tolist()


@pytest.mark.parametrize("params", [{"order": 2}, {"order": 2, "prune_threshold": 1e-2},
                                    {"order": 3, "all_possible_transitions": True,
                                     "prune_threshold": 1e-3}])
def test_label_patterns_are_broken_down(corpus, params):
    crf = CRFClassifier(alpha=0.5, max_iter=20, **params).fit(*corpus)
    assert len(crf.label_patterns_)
    patterns = set()
    for x in _sequences():
        explanation = check_sequence_identity(crf, x)
        check_labelling_terms(crf, x)
        patterns |= {row.term for row in explanation.rows if row.term.startswith("(pattern")}
        for t in range(len(x)):
            token = check_token_identity(crf, x, t)
    assert patterns  # the two best labellings differ by some pattern somewhere
    if "prune_threshold" in params:
        pruned = [row for row in token.rows if row.term == "(pruned)"]
        for row in pruned:
            assert max(row.scores.values()) == 0.0


def test_semi_markov_segment_terms_add_up():
    X, y = _dictionary_task(80, seed=2)
    pipe = make_pipeline(TokenFeaturizer(segment_features=["words"], max_segment_length=2),
                         SequenceVectorizer(), SemiMarkovCRF(alpha=0.1, max_iter=20))
    pipe.fit(X, y)
    terms = set()
    for x in _dictionary_task(6, seed=5)[0]:
        final, matrix = _final_and_matrix(pipe, x)
        if len(final.predict_nbest(matrix, n=2)[0]) < 2:
            continue
        explanation = check_sequence_identity(pipe, x)
        check_labelling_terms(pipe, x)
        terms |= {row.term for row in explanation.rows}
    assert any(term.endswith(" (segment)") for term in terms)
    assert "(length)" in terms
    assert any(term.endswith((" (first)", " (last)")) for term in terms)


@pytest.mark.parametrize("order", [1, 2])
def test_semi_markov_orders_add_up(corpus, order):
    semi = SemiMarkovCRF(alpha=0.5, max_iter=20, order=order).fit(*corpus)
    for x in _sequences():
        explanation = check_sequence_identity(semi, x)
        check_labelling_terms(semi, x)
    assert explanation.rows


def _star_trees(n_sequences=40, seed=0):
    """chain_corpus's sentences as trees: every token hangs from the second."""
    X, y = chain_corpus(n_sequences, seed)
    return [[dict(token, __parent__=-1 if i == 1 else 1) for i, token in enumerate(seq)]
            for seq in X], y


def test_tree_links_and_link_features_add_up():
    X, y = _star_trees()
    tree = TreeCRF(alpha=0.5, max_iter=20, transition_features="all").fit(X, y)
    x = X[0]
    explanation = check_sequence_identity(tree, x)
    assert explanation.rows
    final, matrix = _final_and_matrix(tree, x)
    reader = TermReader(final, matrix)
    index = {c: k for k, c in enumerate(final.classes_.tolist())}
    rng = np.random.default_rng(0)
    labellings = [rng.integers(len(index), size=len(x)) for _ in range(5)]
    sums = [sum(labelling_terms(reader, ids).values()) for ids in labellings]
    log_p = [_log_proba(final, matrix, final.classes_[ids]) for ids in labellings]
    np.testing.assert_allclose(np.diff(sums), np.diff(log_p), rtol=0, atol=TOLERANCE)
    token = check_token_identity(tree, x, 1)  # the root: its children's links change
    assert "(root)" in [row.term for row in token.rows]
    assert any(row.term.startswith("(link to ") for row in token.rows)
    child = check_token_identity(tree, x, 0)
    assert any(row.term.startswith("(link from ") for row in child.rows)
    assert any(" (link from " in row.term for row in child.rows)  # a link feature


def test_pipelines_with_transition_features_add_up():
    tokens = [["ada", "ran", "to", "rome"], ["bob", "and", "ada"], ["rome", "ran"]] * 10
    tags = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-PER"], ["B-LOC", "O"]] * 10
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(max_iter=20, transition_features="all"))
    pipe.fit(tokens, tags)
    x = ["ada", "and", "rome", "ran"]
    explanation = check_sequence_identity(pipe, x)
    check_labelling_terms(pipe, x)
    assert any("ada" in row.term or "rome" in row.term for row in explanation.rows)
    for t in range(len(x)):
        check_token_identity(pipe, x, t)


def _named_dense_matrix(X):
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    import scipy.sparse as sp

    sparse = sp.random(int(offsets[-1]), 3, density=0.5, format="csr", random_state=0)
    return SequenceMatrix(sparse, offsets, feature_names=["a", "b", "c"], dense=np.vstack(X),
                          dense_names=["u", "v", "w", "z"])


def test_dense_block_columns_are_named_and_add_up():
    X, y = numeric_corpus()
    both = _named_dense_matrix(X)
    crf = CRFClassifier(max_iter=20).fit(both, y)
    x = both[[0]]
    explanation = check_sequence_identity(crf, x)
    check_labelling_terms(crf, x)
    assert {row.term for row in explanation.rows} & {"u", "v", "w", "z"}
    token = check_token_identity(crf, x, 0)
    named = {row.term for row in token.rows}
    assert {"u", "v", "w", "z"} <= named
    dense = {row.term: row.value for row in token.rows}
    np.testing.assert_allclose([dense[n] for n in "uvwz"], X[0][0])
    # one sequence's rows as a 2-D array (no names given): the model's names
    assert {"u", "v", "w", "z"} <= {row.term for row in explain_token(crf, both[0], 0).rows}


def test_lists_of_arrays_add_up():
    X, y = numeric_corpus()
    crf = CRFClassifier(max_iter=20, order=2).fit(X, y)
    explanation = check_sequence_identity(crf, X[1])
    check_labelling_terms(crf, X[1])
    assert {row.term for row in explanation.rows} <= {"x0", "x1", "x2", "x3", "(start)",
                                                      "(end)", "(transition)"} | {
        row.term for row in explanation.rows if row.term.startswith("(pattern")}
    check_token_identity(crf, X[1], 0)


def test_vectors_in_feature_dicts_add_up():
    X, y = numeric_corpus()
    dicts = [[{"w": "a" if row[2] > 0 else "b", "vec": row} for row in x] for x in X]
    crf = CRFClassifier(max_iter=20).fit(dicts, y)
    x = dicts[0]
    explanation = check_sequence_identity(crf, x)
    check_labelling_terms(crf, x)
    token = check_token_identity(crf, x, 1)
    vector_rows = [row for row in token.rows if row.term.startswith("vec")]
    assert len(vector_rows) == 4
    assert any(row.term.startswith("vec") for row in explanation.rows)


def test_sequence_union_with_word_vectors_add_up():
    table = {"ada": [1.0, -0.5], "bob": [0.8, -0.2], "rome": [-1.0, 0.7], "ran": [0.1, 0.1]}
    tokens = [["ada", "ran", "to", "rome"], ["bob", "and", "ada"], ["rome", "ran"]] * 10
    tags = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-PER"], ["B-LOC", "O"]] * 10
    union = SequenceUnion([
        ("words", make_pipeline(TokenFeaturizer(window=0), SequenceVectorizer())),
        ("vectors", WordVectorizer(table)),
    ])
    pipe = make_pipeline(union, CRFClassifier(max_iter=20)).fit(tokens, tags)
    x = ["bob", "ran", "to", "rome"]
    explanation = check_sequence_identity(pipe, x)
    check_labelling_terms(pipe, x)
    final, matrix = _final_and_matrix(pipe, x)
    dense_names = set(matrix.dense_names.tolist())
    token = check_token_identity(pipe, x, 3)
    assert dense_names & {row.term for row in token.rows}
    assert explanation.rows
