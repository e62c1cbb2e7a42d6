"""Training on unknown and ambiguous labels: the constrained objective against brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from skcrf._estimators.partial_labels import (CONSTRAINED, FREE, FULL, PartialLabels,
                                              sequence_kinds)
from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.learning.partial import PartialLabelObjective, masked_structure
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure, chain_posteriors
from tests._chain_loss import unpack
from tests._structure_checks import assert_loss_and_gradient, nonempty_sequences
from tests._threads import results_per_thread_count
from tests.naive import enumerate_sequence, path_score


def _problem(seed, n_sequences=5, n_features=6, n_classes=3, max_length=4):
    rng = np.random.default_rng(seed)
    X, offsets = nonempty_sequences(rng, n_sequences, n_features, max_length)
    n_tokens = int(offsets[-1])
    gold = rng.integers(0, n_classes, size=n_tokens)
    return X, offsets, gold, n_classes, rng


def _partial(gold, allowed, offsets):
    """PartialLabels of an allowed mask (the gold label where a token allows one label)."""
    single = allowed.sum(axis=1) == 1
    label_ids = np.where(single, np.argmax(allowed, axis=1), -1)
    unknown = allowed.all(axis=1) & ~single
    return PartialLabels(np.arange(allowed.shape[1]), label_ids, allowed,
                         sequence_kinds(label_ids, unknown, np.diff(offsets)))


def _random_mask(rng, gold, n_classes, p_hidden=0.5):
    """Each token: its gold label alone, or a random set holding it, or every label."""
    allowed = np.zeros((gold.shape[0], n_classes), dtype=bool)
    allowed[np.arange(gold.shape[0]), gold] = True
    hidden = rng.random(gold.shape[0]) < p_hidden
    allowed[hidden] |= rng.random((int(hidden.sum()), n_classes)) < 0.5
    return allowed


def _structure(X, n_classes, forbid=True):
    structure = ChainStructure(n_classes, StatePairs.every(X.shape[1], n_classes))
    if forbid:
        # -inf potentials: a forbidden transition and a forbidden first label
        structure.transition_mask[0, 1] = -np.inf
        structure.start_mask[2] = -np.inf
    return structure


def _brute_force_loss(structure, X, offsets, allowed, w, l2):
    """sum_q log Z_q - log sum over the labellings allowed by ``allowed`` + L2, by enumeration."""
    pair_weights, transitions, start, end = unpack(w, structure)
    transitions = transitions + structure.transition_mask
    start, end = start + structure.start_mask, end + structure.end_mask
    unary = X @ structure.state_pairs.to_dense(pair_weights).T
    total = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        n = hi - lo
        if allowed[lo:hi].all():
            continue  # tells nothing
        paths = list(itertools.product(range(structure.n_classes), repeat=n))
        scores = np.array([path_score(unary[lo:hi], transitions, start, end, p)
                           for p in paths])
        consistent = np.array([allowed[lo + np.arange(n), p].all() for p in paths])
        total += logsumexp(scores) - logsumexp(scores[consistent])
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_and_gradient_match_enumeration_of_consistent_labellings(seed):
    X, offsets, gold, n_classes, rng = _problem(seed)
    # the gold labellings keep to the constraints (no pair 0 -> 1, no first 2),
    # so every sequence has an allowed labelling
    starts = set(offsets[:-1].tolist())
    for i in range(gold.shape[0]):
        if i in starts and gold[i] == 2:
            gold[i] = 0
        elif i not in starts and gold[i - 1] == 0 and gold[i] == 1:
            gold[i] = 2
    allowed = _random_mask(rng, gold, n_classes)
    structure = _structure(X, n_classes)
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                      _partial(gold, allowed, offsets), l2=0.4)
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    assert_loss_and_gradient(objective, w,
                             _brute_force_loss(structure, X, offsets, allowed, w, 0.4))


def test_constrained_marginals_match_enumeration():
    X, offsets, gold, n_classes, rng = _problem(5)
    allowed = _random_mask(rng, gold, n_classes, p_hidden=0.8)
    structure = _structure(X, n_classes, forbid=False)
    w = rng.normal(size=structure.n_parameters)
    mask = np.where(allowed, 0.0, -np.inf)
    features = as_feature_arrays(X)
    posteriors = chain_posteriors(masked_structure(structure, mask).scores(features, w),
                                  offsets, True)
    pair_weights, transitions, start, end = unpack(w, structure)
    unary = X @ structure.state_pairs.to_dense(pair_weights).T + mask
    counts = np.zeros((n_classes, n_classes))
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        log_z, marginals, c, _ = enumerate_sequence(unary[lo:hi], transitions, start, end)
        counts += c
        np.testing.assert_allclose(posteriors.log_z[q], log_z, rtol=1e-10)
        np.testing.assert_allclose(posteriors.marginals[lo:hi], marginals, atol=1e-12)
        assert (posteriors.marginals[lo:hi][~allowed[lo:hi]] == 0).all()
    np.testing.assert_allclose(posteriors.transition_counts, counts, atol=1e-10)


@pytest.mark.parametrize("weights", [None, "random"])
def test_fully_labelled_sequences_take_todays_objective_bitwise(weights):
    X, offsets, gold, n_classes, rng = _problem(3)
    features = as_feature_arrays(X)
    structure = ChainStructure.for_training(features, offsets, gold, n_classes)
    sequence_weights = None if weights is None else rng.integers(1, 3, offsets.shape[0] - 1)
    _assert_todays_objective(structure, features, offsets, gold, sequence_weights, rng)


def _assert_todays_objective(structure, features, offsets, gold, sequence_weights, rng):
    """Fully labelled sequences: PartialLabelObjective is NegativeLogLikelihood, bitwise."""
    partial = _partial(gold, np.eye(structure.n_classes, dtype=bool)[gold], offsets)
    assert (partial.kinds == FULL).all()
    objective = PartialLabelObjective(structure, features, offsets, partial, l2=0.3,
                                      sequence_weights=sequence_weights)
    today = NegativeLogLikelihood(structure, features, offsets, gold, 0.3,
                                  sequence_weights=sequence_weights)
    w = rng.normal(size=structure.n_parameters)
    loss, grad = objective(w)
    expected_loss, expected_grad = today(w)
    assert loss == expected_loss
    np.testing.assert_array_equal(grad, expected_grad)


def test_singleton_sets_through_the_constrained_path_give_the_labelled_loss():
    # the same labels, one sequence forced through the masked forward-backward
    X, offsets, gold, n_classes, rng = _problem(4)
    allowed = np.eye(n_classes, dtype=bool)[gold]
    structure = _structure(X, n_classes, forbid=False)
    partial = _partial(gold, allowed, offsets)
    partial.kinds[0] = CONSTRAINED
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets, partial, 0.2)
    today = NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, gold, 0.2)
    w = rng.normal(size=structure.n_parameters)
    np.testing.assert_allclose(objective(w)[0], today(w)[0], rtol=1e-12)
    np.testing.assert_allclose(objective(w)[1], today(w)[1], rtol=1e-10, atol=1e-12)


def test_all_unknown_sequences_add_nothing():
    X, offsets, gold, n_classes, rng = _problem(6)
    _assert_all_unknown_add_nothing(_structure(X, n_classes), X, offsets, gold, rng)


def _assert_all_unknown_add_nothing(structure, X, offsets, gold, rng):
    """With every label allowed everywhere, the loss and gradient are the L2 penalty's."""
    n_classes = structure.n_classes
    partial = _partial(gold, np.ones((gold.shape[0], n_classes), dtype=bool), offsets)
    assert (partial.kinds == FREE).all()
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets, partial, 0.5)
    w = rng.normal(size=structure.n_parameters)
    loss, grad = objective(w)
    assert loss == 0.5 * 0.5 * (w @ w)
    np.testing.assert_array_equal(grad, 0.5 * w)


def test_sample_weight_counts_as_repetition():
    X, offsets, gold, n_classes, rng = _problem(7, n_sequences=3)
    allowed = _random_mask(rng, gold, n_classes, p_hidden=0.7)
    structure = _structure(X, n_classes, forbid=False)
    features = as_feature_arrays(X)
    weighted = PartialLabelObjective(structure, features, offsets,
                                     _partial(gold, allowed, offsets), 0.1,
                                     sequence_weights=np.array([2.0, 1.0, 3.0]))
    ids = np.array([0, 0, 1, 2, 2, 2])
    lengths = np.diff(offsets)[ids]
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in ids])
    repeated_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    repeated = PartialLabelObjective(structure, as_feature_arrays(X[rows]), repeated_offsets,
                                     _partial(gold[rows], allowed[rows], repeated_offsets), 0.1)
    w = rng.normal(size=structure.n_parameters)
    np.testing.assert_allclose(weighted(w)[0], repeated(w)[0], rtol=1e-12)
    np.testing.assert_allclose(weighted(w)[1], repeated(w)[1], rtol=1e-10, atol=1e-12)


def test_one_and_two_threads_agree_bitwise():
    X, offsets, gold, n_classes, rng = _problem(8, n_sequences=40)
    allowed = _random_mask(rng, gold, n_classes)
    _assert_threads_agree(_structure(X, n_classes, forbid=False), X, offsets, gold, allowed,
                          rng)


def _assert_threads_agree(structure, X, offsets, gold, allowed, rng):
    """The partial-label loss and gradient are the same bits under one and two threads."""
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                      _partial(gold, allowed, offsets), 0.3)
    w = rng.normal(size=structure.n_parameters)
    (loss1, grad1), (loss2, grad2) = results_per_thread_count(lambda: objective(w))
    assert loss1 == loss2
    np.testing.assert_array_equal(grad1, grad2)


def test_labels_that_admit_no_labelling_name_the_sequence():
    X, offsets, gold, n_classes, rng = _problem(9)
    allowed = np.ones((gold.shape[0], n_classes), dtype=bool)
    allowed[0] = [True, False, False]  # sequence 0 (4 tokens): first token 0,
    allowed[1] = [False, True, False]  # then 1, which the structure forbids
    _assert_no_labelling_named(_structure(X, n_classes), X, offsets, gold, allowed)


def _assert_no_labelling_named(structure, X, offsets, gold, allowed):
    """Sequence 0's allowed labels admit no labelling the structure allows: the error says so."""
    with pytest.raises(ValueError, match="sequence 0 admit no labelling"):
        PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                              _partial(gold, allowed, offsets), 0.1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), p_hidden=st.floats(0.0, 1.0))
def test_random_masks_match_enumeration(seed, p_hidden):
    X, offsets, gold, n_classes, rng = _problem(seed, n_sequences=3, max_length=3)
    allowed = _random_mask(rng, gold, n_classes, p_hidden)
    _assert_loss_is_the_oracles(_structure(X, n_classes, forbid=False), X, offsets, gold,
                                allowed, rng, _brute_force_loss)


def _assert_loss_is_the_oracles(structure, X, offsets, gold, allowed, rng, brute_force_loss):
    """At random weights the partial-label loss (L2 0.2) is ``brute_force_loss``'s."""
    objective = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                      _partial(gold, allowed, offsets), 0.2)
    w = rng.normal(size=structure.n_parameters)
    np.testing.assert_allclose(objective(w)[0],
                               brute_force_loss(structure, X, offsets, allowed, w, 0.2),
                               rtol=1e-10)


def test_generic_masked_path_agrees_with_the_chains_shared_pass(monkeypatch):
    # the path other structures take: their own free terms, the masked unfused ones
    import skcrf.learning.partial as partial_module

    X, offsets, gold, n_classes, rng = _problem(10)
    allowed = _random_mask(rng, gold, n_classes)
    structure = _structure(X, n_classes, forbid=False)
    w = rng.normal(size=structure.n_parameters)
    shared = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                   _partial(gold, allowed, offsets), 0.3)(w)
    monkeypatch.setattr(partial_module, "ChainStructure", type("Other", (), {}))
    generic = PartialLabelObjective(structure, as_feature_arrays(X), offsets,
                                    _partial(gold, allowed, offsets), 0.3)(w)
    np.testing.assert_allclose(generic[0], shared[0], rtol=1e-12)
    np.testing.assert_allclose(generic[1], shared[1], rtol=1e-10, atol=1e-12)
