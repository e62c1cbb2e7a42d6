"""TreeCRF trained on unknown (None) and ambiguous (set) node labels, against brute force."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import approx_fprime
from scipy.special import logsumexp

from skcrf import TreeCRF
from skcrf._estimators.partial_labels import PartialLabels, sequence_kinds
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.partial import PartialLabelObjective
from skcrf.structures._parameters import StatePairs
from skcrf.structures.tree.structure import TreeStructure, link_scores
from tests.naive_tree import (SHAPES, all_labellings, all_scores, batch_of_forests,
                              labelling_score)
from tests.test_tree import _tree_corpus


def _forest_problem(seed, n_classes=3, n_features=5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, size=len(SHAPES))
    parents, offsets = batch_of_forests(rng, lengths, SHAPES)
    n_tokens = int(offsets[-1])
    X = sp.csr_matrix((rng.random((n_tokens, n_features)) < 0.5)
                      * rng.normal(size=(n_tokens, n_features)))
    features = FeatureArrays(X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64),
                             n_features, parents)
    allowed = np.zeros((n_tokens, n_classes), dtype=bool)
    allowed[np.arange(n_tokens), rng.integers(0, n_classes, size=n_tokens)] = True
    hidden = rng.random(n_tokens) < 0.5
    allowed[hidden] |= rng.random((int(hidden.sum()), n_classes)) < 0.6
    single = allowed.sum(axis=1) == 1
    label_ids = np.where(single, np.argmax(allowed, axis=1), -1)
    unknown = allowed.all(axis=1) & ~single
    partial = PartialLabels(np.arange(n_classes), label_ids, allowed,
                            sequence_kinds(label_ids, unknown, np.diff(offsets)))
    structure = TreeStructure(n_classes, StatePairs.every(n_features, n_classes))
    return X, features, parents, offsets, allowed, partial, structure, rng


def _brute_force_loss(structure, X, parents, offsets, allowed, w, l2):
    """sum over trees of log Z - log (sum over the consistent labellings) + L2, enumerated."""
    blocks = structure.layout.views(w)
    unary = X @ structure.state_pairs.to_dense(blocks["state"]).T
    total = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if allowed[lo:hi].all():
            continue
        labellings = all_labellings(hi - lo, structure.n_classes)
        scores = all_scores(unary[lo:hi], blocks["transitions"], blocks["root"],
                            parents[lo:hi], labellings)
        consistent = allowed[lo + np.arange(hi - lo), labellings].all(axis=1)
        total += logsumexp(scores) - logsumexp(scores[consistent])
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_loss_and_gradient_match_enumeration_of_consistent_labellings(seed):
    X, features, parents, offsets, allowed, partial, structure, rng = _forest_problem(seed)
    objective = PartialLabelObjective(structure, features, offsets, partial, l2=0.3)
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    loss, grad = objective(w)
    np.testing.assert_allclose(
        loss, _brute_force_loss(structure, X, parents, offsets, allowed, w, 0.3), rtol=1e-10)
    numeric = approx_fprime(w, lambda v: _brute_force_loss(structure, X, parents, offsets,
                                                           allowed, v, 0.3), 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def _brute_force_link_loss(structure, X, features, parents, offsets, allowed, w):
    """As :func:`_brute_force_loss` with link features: each labelling scored link by link."""
    blocks = structure.layout.views(w)
    unary = X @ structure.state_pairs.to_dense(blocks["state"]).T
    edges = link_scores(features, structure.edge_pairs, blocks["edge"], blocks["transitions"])
    total = 0.0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if allowed[lo:hi].all():
            continue
        labellings = all_labellings(hi - lo, structure.n_classes)
        scores = np.array([labelling_score(unary[lo:hi], blocks["transitions"],
                                           blocks["root"], parents[lo:hi], labels,
                                           edges[lo:hi]) for labels in labellings])
        consistent = allowed[lo + np.arange(hi - lo), labellings].all(axis=1)
        total += logsumexp(scores) - logsumexp(scores[consistent])
    return total


@pytest.mark.parametrize("seed", [0, 3])
def test_tree_link_features_loss_and_gradient_match_enumeration(seed):
    X, features, parents, offsets, allowed, partial, structure, rng = _forest_problem(seed)
    structure = TreeStructure(3, structure.state_pairs,
                              StatePairs.every(X.shape[1], 9, np.array([0, 2, 3])))
    objective = PartialLabelObjective(structure, features, offsets, partial, l2=0.0)
    # the disallowed labels are the -inf unary potentials of the constrained pass
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    loss, grad = objective(w)
    np.testing.assert_allclose(
        loss, _brute_force_link_loss(structure, X, features, parents, offsets, allowed, w),
        rtol=1e-10)
    numeric = approx_fprime(w, lambda v: _brute_force_link_loss(
        structure, X, features, parents, offsets, allowed, v), 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def test_link_pairs_of_sets_are_the_pairs_their_links_allow():
    from skcrf._estimators.partial_labels import link_pairs_with_sets
    from skcrf.structures.tree.structure import link_label_ids

    X, features, parents, offsets, allowed, partial, structure, rng = _forest_problem(4)
    columns = np.array([True, False, True, True, False])
    known = StatePairs.observed(features, link_label_ids(parents, offsets, partial.label_ids,
                                                         3), 9, columns=columns)
    pairs = link_pairs_with_sets(known, features, offsets, partial, columns)
    expected = set()
    starts = np.repeat(offsets[:-1], np.diff(offsets))
    unknown = (partial.label_ids < 0) & allowed.all(axis=1)
    for v in range(features.indptr.shape[0] - 1):
        if parents[v] < 0:
            continue
        p = parents[v] + starts[v]
        if unknown[v] or unknown[p]:
            continue
        for k in features.indices[features.indptr[v]:features.indptr[v + 1]]:
            if columns[k]:
                expected |= {(int(k), 3 * a + b) for a in np.flatnonzero(allowed[p])
                             for b in np.flatnonzero(allowed[v])}
    got = {(int(f), int(label)) for f in range(X.shape[1])
           for label in pairs.labels[pairs.feature_ptr[f]:pairs.feature_ptr[f + 1]]}
    assert got == expected


def test_tree_crf_with_link_features_learns_from_partly_labelled_trees():
    X, y = _tree_corpus()
    crf = TreeCRF(alpha=0.01, max_iter=200, transition_features=["w"]).fit(
        X, _hidden(y, 0.4, 0))
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95


def _hidden(y, share, seed):
    rng = np.random.default_rng(seed)
    return [[None if rng.random() < share else label for label in labels] for labels in y]


def test_tree_crf_learns_from_partly_labelled_trees():
    X, y = _tree_corpus()
    crf = TreeCRF(alpha=0.01, max_iter=200).fit(X, _hidden(y, 0.4, 0))
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95


def test_tree_crf_takes_label_sets_and_fully_labelled_trees_fit_as_before():
    X, y = _tree_corpus(n_sequences=20)
    with_sets = [[{"A", "B"} if v % 3 == 1 else label for v, label in enumerate(labels)]
                 for labels in y]
    crf = TreeCRF(alpha=0.01, max_iter=50).fit(X, with_sets)
    assert list(crf.classes_) == ["A", "B"]
    # a y with no None and no set takes the fully labelled objective
    full = TreeCRF(alpha=0.01, max_iter=50).fit(X, y)
    listed = TreeCRF(alpha=0.01, max_iter=50).fit(X, [list(labels) for labels in y])
    np.testing.assert_array_equal(full.coef_.toarray() if sp.issparse(full.coef_)
                                  else full.coef_,
                                  listed.coef_.toarray() if sp.issparse(listed.coef_)
                                  else listed.coef_)


@pytest.mark.parametrize("solver", ["sgd", "arow"])
def test_tree_crf_learns_online_from_partly_labelled_trees(solver):
    # (the plain perceptron, hard EM from zero weights, settles on this toy at 91% of
    # the nodes right: its target, checked below, is the best consistent labelling)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = _tree_corpus()
    crf = TreeCRF(alpha=0.01, solver=solver, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 20 epochs are enough here
        crf.fit(X, _hidden(y, 0.4, 0))
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95


def test_an_online_step_on_a_constrained_tree_is_the_partial_gradient():
    # SGD without a penalty steps along -eta times the gradient of log Z - log Z_allowed
    from skcrf.learning.online import OnlineProblem
    from tests._online_checks import assert_step_along_gradient, one_sgd_step

    X, features, parents, offsets, allowed, partial, structure, rng = _forest_problem(5)
    problem = OnlineProblem(structure, features, offsets, partial.label_ids, allowed)
    q = int(np.flatnonzero(problem.constrained & (np.diff(offsets) > 2))[0])
    w0 = rng.normal(scale=0.5, size=structure.n_parameters)
    state = one_sgd_step(problem, q, w0)
    lo, hi = offsets[q], offsets[q + 1]
    one = np.array([0, hi - lo], dtype=np.int64)
    part = FeatureArrays(X[lo:hi].data, X[lo:hi].indices.astype(np.int32),
                         X[lo:hi].indptr.astype(np.int64), X.shape[1], parents[lo:hi])
    kinds = sequence_kinds(partial.label_ids[lo:hi],
                           allowed[lo:hi].all(axis=1) & (partial.label_ids[lo:hi] < 0),
                           np.array([hi - lo]))
    loss, grad = PartialLabelObjective(
        structure, part, one, PartialLabels(partial.classes, partial.label_ids[lo:hi],
                                            allowed[lo:hi], kinds), l2=0.0)(w0)
    assert_step_along_gradient(state, w0, loss, grad)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_margin_target_of_a_tree_is_its_best_consistent_labelling(seed):
    from skcrf.learning.partial import masked_structure

    X, features, parents, offsets, allowed, partial, structure, rng = _forest_problem(seed)
    w = rng.normal(size=structure.n_parameters)
    target = masked_structure(structure, np.where(allowed, 0.0, -np.inf)).decode_targets(
        features, offsets, w)
    blocks = structure.layout.views(w)
    unary = X @ structure.state_pairs.to_dense(blocks["state"]).T
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        labellings = all_labellings(hi - lo, 3)
        scores = all_scores(unary[lo:hi], blocks["transitions"], blocks["root"],
                            parents[lo:hi], labellings)
        consistent = allowed[lo + np.arange(hi - lo), labellings].all(axis=1)
        got = all_scores(unary[lo:hi], blocks["transitions"], blocks["root"], parents[lo:hi],
                         target[lo:hi][np.newaxis])[0]
        assert allowed[np.arange(lo, hi), target[lo:hi]].all()
        assert got == pytest.approx(scores[consistent].max(), rel=1e-12, abs=1e-12)


def test_tree_crf_partial_fit_takes_partial_labels():
    X, y = _tree_corpus()
    hidden = _hidden(y, 0.4, 0)
    crf = TreeCRF(solver="sgd", alpha=0.01, random_state=0)
    crf.partial_fit(X[:20], hidden[:20], classes=["A", "B"])
    for _ in range(10):
        crf.partial_fit(X[20:], hidden[20:])
        crf.partial_fit(X[:20], hidden[:20])
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95
