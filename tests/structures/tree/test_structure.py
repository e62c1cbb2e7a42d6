"""The tree structure's objective against brute force, finite differences and the chain.

The loss and gradient of NegativeLogLikelihood(TreeStructure) equal the
enumerated negative log-likelihood and E[Phi] - Phi(gold); on path-shaped trees
they equal the order-1 chain's with ``start = root`` and no end weights.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.features.arrays import FeatureArrays
from skcrf.features.sequence_matrix import SequenceMatrix
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.tree.structure import TreeStructure
from tests._structure_checks import (FOREST_SHAPES, assert_fused_equals_unfused,
                                     assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads, forest_problem)
from tests._threads import needs_two_threads
from tests.naive_tree import layout_loss_and_gradient


def _problem(seed, n_sequences=5, n_features=6, n_classes=3, max_length=4, binary=False,
             shapes=FOREST_SHAPES):
    return forest_problem(seed, n_sequences, n_features, n_classes, max_length, binary, shapes)


def _structure(features, label_ids, n_classes, every=False):
    return TreeStructure.for_training(features, label_ids, n_classes, all_possible_states=every)


def _loss(structure, features, offsets, label_ids, l2, fused=True):
    return NegativeLogLikelihood(structure, features, offsets, label_ids, l2, fused=fused)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("every", [False, True])
@pytest.mark.parametrize("binary", [False, True])
def test_loss_and_gradient_equal_brute_force(binary, every, fused):
    features, dense, offsets, label_ids, n_classes = _problem(0, binary=binary)
    structure = _structure(features, label_ids, n_classes, every)
    loss = _loss(structure, features, offsets, label_ids, l2=0.3, fused=fused)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    value, grad = loss(w)
    expected_value, expected_grad = layout_loss_and_gradient(
        structure, dense, offsets, features.parents, label_ids, w, l2=0.3)
    np.testing.assert_allclose(value, expected_value, rtol=1e-10)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_gradient_matches_finite_differences(seed):
    features, _, offsets, label_ids, n_classes = _problem(2 + seed, n_sequences=8,
                                                          max_length=7)
    structure = _structure(features, label_ids, n_classes)
    loss = _loss(structure, features, offsets, label_ids, l2=0.2)
    assert_gradient_matches_finite_differences(loss, seed=3)


@pytest.mark.parametrize("binary", [False, True])
def test_fused_kernel_equals_unfused_path(binary):
    features, _, offsets, label_ids, n_classes = _problem(
        15, n_sequences=60, n_features=12, n_classes=4, max_length=12, binary=binary)
    structure = _structure(features, label_ids, n_classes)
    fused = _loss(structure, features, offsets, label_ids, l2=0.1)
    unfused = _loss(structure, features, offsets, label_ids, l2=0.1, fused=False)
    # 40: extreme enough for the log-space pass
    assert_fused_equals_unfused(fused, unfused, scales=(0.5, 40.0), seed=16)


def test_gold_statistics_by_hand():
    # sequence 0: token 1 is the root, 0 and 2 its children, 3 a child of 2;
    # sequence 1: two single-node trees; sequence 2 is empty
    X = sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 1], [2, 0], [0, 3], [1, 0]], float))
    offsets = np.array([0, 4, 6, 6], dtype=np.int64)
    parents = np.array([1, -1, 1, 2, -1, -1])
    label_ids = np.array([0, 1, 1, 0, 1, 0])
    features = FeatureArrays.of_sequences(SequenceMatrix(X, offsets, parents=parents))
    structure = TreeStructure(2, StatePairs.every(2, 2))
    gold = structure.layout.views(structure.gold_statistics(features, offsets, label_ids))
    # links [parent label, child label]: 1->0 (token 0), 1->1 (token 2), 1->0 (token 3)
    np.testing.assert_array_equal(gold["transitions"], [[0, 0], [2, 1]])
    # roots: token 1 (label 1), token 4 (label 1), token 5 (label 0)
    np.testing.assert_array_equal(gold["root"], [1, 2])
    # state pairs of every (feature, label), feature-major: value sums per label
    state = structure.state_pairs.to_dense(gold["state"])
    np.testing.assert_array_equal(state, [[1 + 2 + 1, 0], [1, 1 + 1 + 3]])


def test_no_links_give_no_transition_gradient():
    # only roots: the transitions appear in no labelling's score
    features, dense, offsets, label_ids, n_classes = _problem(4, shapes=("roots",))
    structure = _structure(features, label_ids, n_classes)
    loss = _loss(structure, features, offsets, label_ids, l2=0.0)
    w = np.random.default_rng(5).normal(size=loss.n_parameters)
    _, grad = loss(w)
    assert not structure.layout.view(grad, "transitions").any()
    # and the root weights act as a second state bias on every token
    root_grad = structure.layout.view(grad, "root")
    _, expected = layout_loss_and_gradient(structure, dense, offsets, features.parents,
                                           label_ids, w)
    np.testing.assert_allclose(root_grad, structure.layout.view(expected, "root"),
                               rtol=1e-10, atol=1e-12)


def test_expected_statistics_of_the_root_block_are_the_roots_marginals():
    features, _, offsets, label_ids, n_classes = _problem(6, n_sequences=12, max_length=6)
    structure = _structure(features, label_ids, n_classes)
    w = np.random.default_rng(7).normal(size=structure.n_parameters)
    log_z, expected = structure.expectation_terms(features, offsets)(w)
    assert log_z.shape == (len(offsets) - 1,)
    blocks = structure.layout.views(expected)
    n_roots = np.count_nonzero(features.parents < 0)
    n_links = features.parents.shape[0] - n_roots
    np.testing.assert_allclose(blocks["root"].sum(), n_roots, rtol=1e-12)
    np.testing.assert_allclose(blocks["transitions"].sum(), n_links, rtol=1e-12)


# --- the chain at the gradient level -----------------------------------------


def _chain_and_tree(seed, reversed_path=False):
    features, dense, offsets, label_ids, n_classes = _problem(
        seed, n_sequences=30, max_length=8, shapes=("reversed" if reversed_path else "path",))
    pairs = StatePairs.observed(features, label_ids, n_classes)
    tree = TreeStructure(n_classes, pairs)
    chain = ChainStructure(n_classes, pairs)
    chain_features = FeatureArrays(features.data, features.indices, features.indptr,
                                   features.n_features)  # no parents: a chain needs none
    return (_loss(tree, features, offsets, label_ids, 0.1),
            _loss(chain, chain_features, offsets, label_ids, 0.1), tree, chain)


def test_path_trees_equal_the_chain_with_start_root_and_end_zero():
    tree_loss, chain_loss, tree, chain = _chain_and_tree(8)
    w_tree = np.random.default_rng(9).normal(size=tree.n_parameters)
    w_chain = chain.layout.zeros()
    blocks_tree, blocks_chain = tree.layout.views(w_tree), chain.layout.views(w_chain)
    blocks_chain["state"][:] = blocks_tree["state"]
    blocks_chain["transitions"][:] = blocks_tree["transitions"]
    blocks_chain["start"][:] = blocks_tree["root"]  # end stays 0
    value_tree, grad_tree = tree_loss(w_tree)
    value_chain, grad_chain = chain_loss(w_chain)
    np.testing.assert_allclose(value_tree, value_chain, rtol=1e-12)
    g_tree, g_chain = tree.layout.views(grad_tree), chain.layout.views(grad_chain)
    for tree_block, chain_block in (("state", "state"), ("transitions", "transitions"),
                                    ("root", "start")):
        np.testing.assert_allclose(g_tree[tree_block], g_chain[chain_block], rtol=1e-9,
                                   atol=1e-10)


def test_reversed_paths_equal_the_chain_with_transposed_transitions_and_end_root():
    tree_loss, chain_loss, tree, chain = _chain_and_tree(10, reversed_path=True)
    w_tree = np.random.default_rng(11).normal(size=tree.n_parameters)
    w_chain = chain.layout.zeros()
    blocks_tree, blocks_chain = tree.layout.views(w_tree), chain.layout.views(w_chain)
    blocks_chain["state"][:] = blocks_tree["state"]
    blocks_chain["transitions"][:] = blocks_tree["transitions"].T
    blocks_chain["end"][:] = blocks_tree["root"]  # start stays 0
    value_tree, grad_tree = tree_loss(w_tree)
    value_chain, grad_chain = chain_loss(w_chain)
    np.testing.assert_allclose(value_tree, value_chain, rtol=1e-12)
    g_tree, g_chain = tree.layout.views(grad_tree), chain.layout.views(grad_chain)
    np.testing.assert_allclose(g_tree["state"], g_chain["state"], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(g_tree["transitions"], g_chain["transitions"].T, rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_allclose(g_tree["root"], g_chain["end"], rtol=1e-9, atol=1e-10)


def test_coefficients_are_named_and_dense():
    features, _, offsets, label_ids, n_classes = _problem(12)
    structure = _structure(features, label_ids, n_classes)
    w = np.arange(structure.n_parameters, dtype=float)
    named = structure.coefficients(w)
    blocks = structure.layout.views(w)
    assert named["coef"].shape == (n_classes, features.n_features)
    np.testing.assert_array_equal(named["transitions"], blocks["transitions"])
    np.testing.assert_array_equal(named["root"], blocks["root"])
    named["root"][:] = -1  # a copy: the weights stay
    assert (blocks["root"] >= 0).all()


@needs_two_threads
def test_loss_bitwise_identical_for_one_and_two_threads():
    features, _, offsets, label_ids, n_classes = _problem(13, n_sequences=300,
                                                          n_classes=4, max_length=15)
    structure = _structure(features, label_ids, n_classes)
    loss = _loss(structure, features, offsets, label_ids, l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=14)
