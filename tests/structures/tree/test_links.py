"""Link features of the tree structure: brute force, finite differences, the fused kernel,
and the plain tree they reduce to with zero weights."""

import numpy as np
import pytest
from scipy.special import logsumexp

from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.tree.structure import (TreeScores, TreeStructure, tree_decode,
                                   tree_labelling_scores, tree_posteriors)
from tests._structure_checks import (assert_fused_loss_equals_unfused,
                                     assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads,
                                     assert_zero_extra_weights_give_the_simpler, forest_problem)
from tests._threads import needs_two_threads
from tests.naive_tree import all_labellings, enumerate_forest_edges, labelling_score


def _problem(seed, n_sequences=5, n_features=5, n_classes=3, max_length=4, binary=False):
    return forest_problem(seed, n_sequences, n_features, n_classes, max_length, binary)


def _structure(features, offsets, label_ids, n_classes, every=False, columns=None):
    if columns is None:
        columns = np.ones(features.n_features, dtype=bool)
    return TreeStructure.for_training(features, label_ids, n_classes, all_possible_states=every,
                                      transition_columns=columns, offsets=offsets)


def _dense_edges(structure, dense, w):
    """Each token's link scores from the dense weights, without the kernels."""
    named = structure.coefficients(w)
    C = structure.n_classes
    V = named["edge_coef"].toarray().reshape(-1, C, C)
    return np.einsum("tf,fab->tab", dense, V) + named["transitions"], named


def _brute_force_loss(structure, dense, offsets, parents, label_ids, w, l2):
    edges, named = _dense_edges(structure, dense, w)
    unary = dense @ named["coef"].T
    total = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        labellings = all_labellings(hi - lo, structure.n_classes)
        scores = [labelling_score(unary[lo:hi], None, named["root"], parents[lo:hi], y,
                                  edges=edges[lo:hi]) for y in labellings]
        gold = labelling_score(unary[lo:hi], None, named["root"], parents[lo:hi],
                               label_ids[lo:hi], edges=edges[lo:hi])
        total += logsumexp(scores) - gold
    return total


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("binary", [False, True])
def test_loss_equals_brute_force(binary, every, fused):
    features, dense, offsets, label_ids, C = _problem(0, binary=binary)
    structure = _structure(features, offsets, label_ids, C, every)
    loss = NegativeLogLikelihood(structure, features, offsets, label_ids, l2=0.3, fused=fused)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    expected = _brute_force_loss(structure, dense, offsets, features.parents, label_ids, w,
                                 0.3)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)
    np.testing.assert_allclose(structure.scores(features, w).edges,
                               _dense_edges(structure, dense, w)[0], atol=1e-12)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_gradient_matches_finite_differences(fused):
    features, dense, offsets, label_ids, C = _problem(2)
    structure = _structure(features, offsets, label_ids, C,
                           columns=np.arange(features.n_features) % 2 == 0)
    loss = NegativeLogLikelihood(structure, features, offsets, label_ids, l2=0.2, fused=fused)
    assert_gradient_matches_finite_differences(loss, seed=3)


def test_viterbi_marginals_and_scores_match_brute_force():
    features, dense, offsets, label_ids, C = _problem(4, n_sequences=8)
    structure = _structure(features, offsets, label_ids, C)
    w = np.random.default_rng(5).normal(size=structure.n_parameters)
    scores = structure.scores(features, w)
    parents = features.parents
    posteriors = tree_posteriors(scores, parents, offsets, True)
    decoded = tree_decode(scores, parents, offsets)
    given = tree_labelling_scores(scores, parents, offsets, label_ids)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo:
            continue
        log_z, marginals, pairs, best, _ = enumerate_forest_edges(
            scores.unary[lo:hi], scores.edges[lo:hi], scores.root, parents[lo:hi])
        np.testing.assert_allclose(posteriors.log_z[q], log_z, rtol=1e-10)
        np.testing.assert_allclose(posteriors.marginals[lo:hi], marginals, atol=1e-10)
        np.testing.assert_allclose(posteriors.pair_marginals[lo:hi], pairs, atol=1e-10)
        np.testing.assert_array_equal(decoded[lo:hi], best)
        np.testing.assert_allclose(
            given[q], labelling_score(scores.unary[lo:hi], None, scores.root, parents[lo:hi],
                                      label_ids[lo:hi], edges=scores.edges[lo:hi]))


def test_zero_link_feature_weights_give_the_plain_tree():
    features, dense, offsets, label_ids, C = _problem(6, n_sequences=20, max_length=7)
    links = _structure(features, offsets, label_ids, C)
    plain = TreeStructure(C, links.state_pairs)
    w = assert_zero_extra_weights_give_the_simpler(plain, links, features, features, offsets,
                                                   label_ids, seed=7)
    named = links.coefficients(w)
    plain_scores = TreeScores.of_coefficients(features, named["coef"], named["transitions"],
                                              named["root"])
    link_scores = TreeScores.of_coefficients(features, named["coef"], named["transitions"],
                                             named["root"], named["edge_coef"])
    np.testing.assert_array_equal(tree_decode(link_scores, features.parents, offsets),
                                  tree_decode(plain_scores, features.parents, offsets))


@pytest.mark.parametrize("seed", range(6))
def test_fused_equals_unfused_on_random_problems(seed):
    rng = np.random.default_rng(seed)
    scale = [0.5, 3.0, 60.0][seed % 3]  # the last makes the scaled pass give up
    features, dense, offsets, label_ids, C = _problem(
        seed, n_sequences=40, max_length=int(rng.integers(3, 15)), binary=bool(seed % 2),
        n_classes=int(rng.integers(2, 5)))
    structure = _structure(features, offsets, label_ids, C, every=bool(seed % 2),
                           columns=rng.random(features.n_features) < 0.6)
    w = rng.normal(scale=scale, size=structure.n_parameters)
    assert_fused_loss_equals_unfused(structure, features, offsets, label_ids, w)


def test_coefficients_round_trip():
    features, dense, offsets, label_ids, C = _problem(8)
    structure = _structure(features, offsets, label_ids, C)
    w = np.random.default_rng(9).normal(size=structure.n_parameters)
    named = structure.coefficients(w)
    assert named["edge_coef"].shape == (features.n_features, C * C)
    np.testing.assert_allclose(structure.weights(named), w, atol=1e-12)


@needs_two_threads
def test_fused_loss_bitwise_identical_for_one_and_two_threads():
    features, dense, offsets, label_ids, C = _problem(12, n_sequences=300, max_length=15)
    structure = _structure(features, offsets, label_ids, C)
    loss = NegativeLogLikelihood(structure, features, offsets, label_ids, l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=13)
