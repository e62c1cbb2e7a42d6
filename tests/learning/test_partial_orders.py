"""Partial labels on chains of order 2 and 3: the constrained objective against enumeration.

The loss is ``sum_q log Z_q - log Z_allowed_q``, with ``Z_allowed`` the sum
over the labellings consistent with each token's allowed labels, both
enumerated (:mod:`tests.naive_patterns`) with ``-inf`` potentials (a
forbidden label pair and a forbidden first label) in the structure.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.partial import PartialLabelObjective, masked_structure
from skcrf.structures._parameters import StatePairs
from skcrf.structures.patterns.chain import PatternChainStructure
from skcrf.structures.patterns.label_patterns import LabelPatterns
from tests._structure_checks import assert_loss_and_gradient, nonempty_sequences
from tests.learning.test_partial import (_assert_all_unknown_add_nothing,
                                         _assert_loss_is_the_oracles,
                                         _assert_no_labelling_named, _assert_threads_agree,
                                         _assert_todays_objective, _partial, _random_mask)
from tests.naive_patterns import enumerate_sequence


def _problem(seed, n_sequences=5, n_features=5, n_classes=3, max_length=4):
    rng = np.random.default_rng(seed)
    X, offsets = nonempty_sequences(rng, n_sequences, n_features, max_length)
    n_tokens = int(offsets[-1])
    gold = rng.integers(0, n_classes, size=n_tokens)
    # keep the gold labellings to the constraints of _structure (no pair 0 -> 1, no first 2)
    starts = set(offsets[:-1].tolist())
    for i in range(n_tokens):
        if i in starts and gold[i] == 2:
            gold[i] = 0
        elif i not in starts and gold[i - 1] == 0 and gold[i] == 1:
            gold[i] = 2
    return X, offsets, gold, n_classes, rng


def _structure(X, n_classes, order, forbid=True):
    structure = PatternChainStructure(n_classes, StatePairs.every(X.shape[1], n_classes),
                                      LabelPatterns.every(n_classes, order))
    if forbid:
        structure.transition_mask[0, 1] = -np.inf
        structure.start_mask[2] = -np.inf
    return structure


def _enumerated(structure, X, offsets, w, mask=None):
    blocks = structure.layout.views(w)
    unary = X.toarray() @ structure.state_pairs.to_dense(blocks["state"]).T
    if mask is not None:
        unary = unary + mask
    transitions, start, end = structure.masked_transitions(blocks)
    return [enumerate_sequence(unary[lo:hi], transitions, structure.patterns.rows,
                               blocks["patterns"], start, end)
            for lo, hi in zip(offsets[:-1], offsets[1:])]


def _brute_force_loss(structure, X, offsets, allowed, w, l2, keep=None):
    """Sum over sequences of -log p(consistent), by enumeration, + L2; with ``keep``,
    of -log p(consistent | lattice), the lattice being the labels ``keep`` allows."""
    outside = None if keep is None else np.where(keep, 0.0, -np.inf)
    mask = np.where(allowed, 0.0, -np.inf)
    free = _enumerated(structure, X, offsets, w, outside)
    constrained = _enumerated(structure, X, offsets, w, mask if keep is None else outside + mask)
    total = 0.5 * l2 * (w @ w)
    for (lo, hi), a, b in zip(zip(offsets[:-1], offsets[1:]), free, constrained):
        if not allowed[lo:hi].all():  # an all-unknown sequence tells nothing
            total += a["log_z"] - b["log_z"]
    return total


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_loss_and_gradient_match_enumeration_of_consistent_labellings(order, seed):
    X, offsets, gold, n_classes, rng = _problem(seed)
    allowed = _random_mask(rng, gold, n_classes)
    structure = _structure(X, n_classes, order)
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                      _partial(gold, allowed, offsets), l2=0.4)
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    assert_loss_and_gradient(objective, w,
                             _brute_force_loss(structure, X, offsets, allowed, w, 0.4))


@pytest.mark.parametrize("order", [2, 3])
def test_constrained_marginals_and_counts_match_enumeration(order):
    X, offsets, gold, n_classes, rng = _problem(5)
    allowed = _random_mask(rng, gold, n_classes, p_hidden=0.8)
    structure = _structure(X, n_classes, order)
    w = rng.normal(size=structure.n_parameters)
    mask = np.where(allowed, 0.0, -np.inf)
    log_z, marginals, pair_counts, pattern_counts = masked_structure(structure, mask).scores(
        as_feature_arrays(X), w).posteriors(offsets, with_counts=True)
    expected = _enumerated(structure, X, offsets, w, mask)
    np.testing.assert_allclose(log_z, [one["log_z"] for one in expected], rtol=1e-10)
    np.testing.assert_allclose(marginals, np.concatenate([one["marginals"] for one in expected]),
                               atol=1e-12)
    assert (marginals[~allowed] == 0).all()
    np.testing.assert_allclose(pair_counts, sum(one["pair_counts"] for one in expected),
                               atol=1e-10)
    np.testing.assert_allclose(pattern_counts, sum(one["pattern_counts"] for one in expected),
                               atol=1e-10)


@pytest.mark.parametrize("order", [2, 3])
def test_fully_labelled_sequences_take_todays_objective_bitwise(order):
    X, offsets, gold, n_classes, rng = _problem(3)
    features = as_feature_arrays(X)
    structure = PatternChainStructure.for_training(features, offsets, gold, n_classes, order)
    weights = rng.integers(1, 3, offsets.shape[0] - 1).astype(float)
    _assert_todays_objective(structure, features, offsets, gold, weights, rng)


def test_all_unknown_sequences_add_nothing():
    X, offsets, gold, n_classes, rng = _problem(6)
    _assert_all_unknown_add_nothing(_structure(X, n_classes, 2), X, offsets, gold, rng)


def test_one_and_two_threads_agree_bitwise():
    X, offsets, gold, n_classes, rng = _problem(8, n_sequences=40)
    allowed = _random_mask(rng, gold, n_classes)
    _assert_threads_agree(_structure(X, n_classes, 3), X, offsets, gold, allowed, rng)


def test_labels_that_admit_no_labelling_name_the_sequence():
    X, offsets, gold, n_classes, rng = _problem(9)
    allowed = np.ones((gold.shape[0], n_classes), dtype=bool)
    allowed[0] = [True, False, False]  # sequence 0: first token 0, then 1, forbidden
    allowed[1] = [False, True, False]
    _assert_no_labelling_named(_structure(X, n_classes, 2), X, offsets, gold, allowed)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), p_hidden=st.floats(0.0, 1.0),
       order=st.sampled_from([2, 3]))
def test_random_masks_match_enumeration(seed, p_hidden, order):
    X, offsets, gold, n_classes, rng = _problem(seed, n_sequences=3, max_length=4)
    allowed = _random_mask(rng, gold, n_classes, p_hidden)
    _assert_loss_is_the_oracles(_structure(X, n_classes, order), X, offsets, gold, allowed,
                                rng, _brute_force_loss)


def test_patterns_are_the_ngrams_of_known_labels():
    # an n-gram through an unknown token (-1) is not one of the labels around it
    offsets = np.array([0, 5], dtype=np.int64)
    patterns = LabelPatterns.seen(np.array([0, 1, -1, 2, 0]), offsets, 3, 2)
    assert patterns.n_patterns == 0
    patterns = LabelPatterns.seen(np.array([0, 1, 2, -1, 1]), offsets, 3, 2)
    assert patterns.rows.tolist() == [[0, 1, 2]]
