"""Partial labels on a pruned lattice (order >= 2, ``prune_threshold``) against enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf import CRFClassifier
from skcrf._estimators.partial_labels import CONSTRAINED, FULL
from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.partial import PartialLabelObjective
from skcrf.learning.partial_lattice import pruned_partial_objective, pruner_candidates
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure
from tests._structure_checks import assert_loss_and_gradient
from tests.learning.test_partial import _partial, _random_mask
from tests.learning.test_partial_orders import _brute_force_loss, _problem, _structure


def _keep(rng, gold, allowed, p_keep=0.4):
    """Random candidates holding the gold labels and every label of a token's set."""
    keep = rng.random(allowed.shape) < p_keep
    keep[np.arange(gold.shape[0]), gold] = True
    in_set = ~allowed.all(axis=1)
    keep[in_set] |= allowed[in_set]
    return keep


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_loss_and_gradient_match_enumeration_over_the_lattice(order, seed):
    X, offsets, gold, n_classes, rng = _problem(seed)
    allowed = _random_mask(rng, gold, n_classes)
    partial = _partial(gold, allowed, offsets)
    assert (partial.kinds == FULL).any() and (partial.kinds == CONSTRAINED).any()
    keep = _keep(rng, gold, allowed)
    structure = _structure(X, n_classes, order)
    objective = pruned_partial_objective(structure, as_feature_arrays(X), offsets, partial,
                                         keep, 0.3)
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    assert_loss_and_gradient(objective, w,
                             _brute_force_loss(structure, X, offsets, allowed, w, 0.3, keep))


@pytest.mark.parametrize("order", [2, 3])
def test_keeping_every_label_is_the_exact_partial_objective(order):
    X, offsets, gold, n_classes, rng = _problem(4)
    allowed = _random_mask(rng, gold, n_classes)
    partial = _partial(gold, allowed, offsets)
    structure = _structure(X, n_classes, order)
    features = as_feature_arrays(X)
    weights = rng.integers(1, 3, offsets.shape[0] - 1).astype(float)
    pruned = pruned_partial_objective(structure, features, offsets, partial,
                                      np.ones_like(allowed), 0.2, weights)
    exact = PartialLabelObjective(structure, features, offsets, partial, 0.2, weights)
    w = rng.normal(size=structure.n_parameters)
    np.testing.assert_allclose(pruned(w)[0], exact(w)[0], rtol=1e-10)
    np.testing.assert_allclose(pruned(w)[1], exact(w)[1], rtol=1e-8, atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), p_hidden=st.floats(0.0, 1.0),
       threshold=st.sampled_from([0.2, 0.6, 0.99]))
def test_the_pruner_keeps_every_label_of_a_set_and_a_consistent_labelling(seed, p_hidden,
                                                                         threshold):
    X, offsets, gold, n_classes, rng = _problem(seed, n_sequences=4)
    allowed = _random_mask(rng, gold, n_classes, p_hidden)
    partial = _partial(gold, allowed, offsets)
    lower = ChainStructure(n_classes, StatePairs.every(X.shape[1], n_classes))
    lower.transition_mask[0, 1] = -np.inf
    lower.start_mask[2] = -np.inf
    features = as_feature_arrays(X)
    w1 = rng.normal(scale=2.0, size=lower.n_parameters)
    keep = pruner_candidates(lower, w1, features, offsets, partial, threshold)
    in_set = ~allowed.all(axis=1)
    assert keep[in_set][allowed[in_set]].all()
    # every constrained sequence keeps a consistent labelling: a finite loss
    structure = _structure(X, n_classes, 2)
    w = rng.normal(size=structure.n_parameters)
    loss = pruned_partial_objective(structure, features, offsets, partial, keep, 0.1)(w)[0]
    assert np.isfinite(loss)
    np.testing.assert_allclose(
        loss, _brute_force_loss(structure, X, offsets, allowed, w, 0.1, keep),
        rtol=1e-9)


@pytest.mark.parametrize("order", [2, 3])
def test_a_pruned_fit_trains_on_partial_labels(order):
    from tests.test_chain_pruning import _noisy_corpus, _problem as fit_problem

    X, y = _noisy_corpus(n_sequences=80, seed=6)
    rng = np.random.default_rng(0)
    hidden = [[None if rng.random() < 0.3 else
               ({label, "L0"} if rng.random() < 0.2 else label) for label in labels]
              for labels in y]
    model = CRFClassifier(alpha=0.5, order=order, prune_threshold=0.05, max_iter=60)
    problem, _, data = fit_problem(model, X, hidden)
    assert problem.lattice.cand_ptr[-1] < 4 * data.partial.allowed.shape[0]  # it prunes
    model.fit(X, hidden)
    assert model.pruner_threshold_ == 0.05
    assert model.label_patterns_.shape[1] == order + 1
    full = CRFClassifier(alpha=0.5, order=order, prune_threshold=0.05, max_iter=60).fit(X, y)
    assert model.score(X, y) > full.score(X, y) - 0.1
