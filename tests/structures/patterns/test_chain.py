"""Chains of order 2 or more: the objective against brute force, and the identities between orders.

The loss equals the enumerated negative log-likelihood, the gradient equals
finite differences, the fused kernel equals the unfused path, results do not
depend on the thread count, and a chain whose longer patterns weigh nothing
is the shorter one: order ``d`` with only (``d' + 1``)-grams is order ``d'``,
zero pattern weights are order 1, and every trigram kept at order 2 is the
dense order-2 chain.
"""

import numpy as np
import pytest

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.patterns import chain as pattern_chain
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.patterns.label_patterns import LabelPatterns
from skcrf.structures.patterns.chain import PatternChainStructure
from tests._structure_checks import (assert_fused_equals_unfused,
                                     assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads,
                                     assert_zero_extra_weights_give_the_simpler, chain_problem)
from tests.naive_patterns import enumerate_sequence


def _problem(seed, n_sequences=6, n_features=5, n_classes=3, max_length=5, binary=False):
    return chain_problem(seed, n_sequences, n_features, n_classes, max_length, binary)


def _structure(X, offsets, label_ids, n_classes, order, **options):
    return PatternChainStructure.for_training(as_feature_arrays(X), offsets, label_ids,
                                              n_classes, order, **options)


def _loss(structure, X, offsets, label_ids, l2=0.2, fused=True):
    return NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, label_ids, l2,
                                 fused=fused)


def _brute_force_loss(structure, X, offsets, label_ids, w, l2):
    blocks = structure.layout.views(w)
    state = structure.state_pairs.to_dense(blocks["state"])
    unary = X.toarray() @ state.T
    transitions, start, end = structure.masked_transitions(blocks)
    total = 0.5 * l2 * (w @ w)
    rows = structure.patterns.rows
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        one = enumerate_sequence(unary[lo:hi], transitions, rows, blocks["patterns"], start,
                                 end)
        gold = next(score for score, path in one["ranked"]
                    if path == tuple(label_ids[lo:hi]))
        total += one["log_z"] - gold
    return total


@pytest.mark.parametrize("order,options", [
    (3, {}), (4, {}), (3, {"all_possible_transitions": True}), (2, {"min_pattern_freq": 2})])
@pytest.mark.parametrize("binary", [False, True])
def test_loss_equals_brute_force(order, options, binary):
    X, offsets, label_ids, n_classes = _problem(0, binary=binary)
    structure = _structure(X, offsets, label_ids, n_classes, order, **options)
    loss = _loss(structure, X, offsets, label_ids, l2=0.3)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    expected = _brute_force_loss(structure, X, offsets, label_ids, w, 0.3)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("order", [3, 4])
def test_gradient_matches_finite_differences(order, fused):
    X, offsets, label_ids, n_classes = _problem(2)
    structure = _structure(X, offsets, label_ids, n_classes, order)
    assert structure.patterns.n_patterns > 0
    loss = _loss(structure, X, offsets, label_ids, fused=fused)
    assert_gradient_matches_finite_differences(loss, seed=3)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("order", [2, 3, 4])
def test_fused_kernel_equals_unfused_path(order, binary):
    X, offsets, label_ids, n_classes = _problem(4, n_sequences=80, n_features=12,
                                                n_classes=4, max_length=9, binary=binary)
    structure = _structure(X, offsets, label_ids, n_classes, order)
    fused = _loss(structure, X, offsets, label_ids, l2=0.1)
    unfused = _loss(structure, X, offsets, label_ids, l2=0.1, fused=False)
    # 8: pattern weights past the scaled pass's guard (the exact pass runs);
    # 400: past the exponentiated-weight route of binary features
    assert_fused_equals_unfused(fused, unfused, scales=(0.5, 8.0, 400.0), seed=5)


def test_fused_objective_does_not_depend_on_the_thread_count():
    X, offsets, label_ids, n_classes = _problem(9, n_sequences=3000, n_features=8,
                                                max_length=6, binary=True)
    structure = _structure(X, offsets, label_ids, n_classes, 3)
    loss = _loss(structure, X, offsets, label_ids)
    assert_loss_same_for_one_and_two_threads(loss, seed=10)


def _blocks(structure, w):
    blocks = structure.layout.views(w)
    return {name: blocks[name] for name in ("state", "transitions", "start", "end")}


def _with_weights(structure, shared, pattern_weights):
    w = structure.layout.zeros()
    blocks = structure.layout.views(w)
    for name, values in shared.items():
        blocks[name][...] = values
    blocks["patterns"][:] = pattern_weights
    return w


@pytest.mark.parametrize("low,high", [(2, 3), (2, 4), (3, 4)])
def test_order_d_with_only_shorter_patterns_is_the_lower_order(low, high):
    X, offsets, label_ids, n_classes = _problem(6, n_sequences=30, max_length=8)
    lower = _structure(X, offsets, label_ids, n_classes, low)
    higher = _structure(X, offsets, label_ids, n_classes, high)
    rng = np.random.default_rng(7)
    w_low = rng.normal(size=lower.n_parameters)
    shared = _blocks(lower, w_low)
    # the same weights for the n-grams both keep, 0 for the longer ones
    weights = np.zeros(higher.patterns.n_patterns)
    index = higher.patterns.index_of(
        lower.patterns.rows.shape[1] - (lower.patterns.rows < 0).sum(axis=1),
        _codes(lower.patterns.rows, n_classes))
    weights[index] = lower.layout.views(w_low)["patterns"]
    w_high = _with_weights(higher, shared, weights)
    value_low, grad_low = _loss(lower, X, offsets, label_ids)(w_low)
    value_high, grad_high = _loss(higher, X, offsets, label_ids)(w_high)
    np.testing.assert_allclose(value_high, value_low, rtol=1e-11)
    for name in ("state", "transitions", "start", "end"):
        np.testing.assert_allclose(higher.layout.views(grad_high)[name],
                                   lower.layout.views(grad_low)[name], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(higher.layout.views(grad_high)["patterns"][index],
                               lower.layout.views(grad_low)["patterns"], rtol=1e-9,
                               atol=1e-10)


def _codes(rows, n_classes):
    from skcrf.structures.patterns.label_patterns import row_codes

    return row_codes(rows, n_classes)


def test_zero_pattern_weights_are_the_order_1_chain():
    X, offsets, label_ids, n_classes = _problem(8, n_sequences=30, max_length=8)
    first = ChainStructure.for_training(as_feature_arrays(X), offsets, label_ids, n_classes)
    third = _structure(X, offsets, label_ids, n_classes, 3)
    assert_zero_extra_weights_give_the_simpler(first, third, as_feature_arrays(X),
                                               as_feature_arrays(X), offsets, label_ids, seed=9)


def test_every_trigram_at_order_2_is_the_dense_order_2_chain(monkeypatch):
    X, offsets, label_ids, n_classes = _problem(10, n_sequences=30, max_length=8)
    dense = ChainStructure.for_training(as_feature_arrays(X), offsets, label_ids, n_classes,
                                        order=2)
    every = _structure(X, offsets, label_ids, n_classes, 2, all_possible_transitions=True)
    assert every.patterns.n_patterns == n_classes ** 3
    assert pattern_chain.uses_dense_order2(every.patterns)
    w_dense = np.random.default_rng(11).normal(size=dense.n_parameters)
    trigram = dense.layout.views(w_dense)["trigram"]
    w_every = _with_weights(every, _blocks(dense, w_dense), trigram.ravel())
    value_d, grad_d = _loss(dense, X, offsets, label_ids)(w_dense)
    results = [_loss(every, X, offsets, label_ids)(w_every)]
    # the same trigrams through the automaton (the pattern kernels) instead
    monkeypatch.setattr(pattern_chain, "DENSE_TRIGRAM_FRACTION", 2.0)
    assert not pattern_chain.uses_dense_order2(every.patterns)
    results.append(_loss(every, X, offsets, label_ids)(w_every))
    for value, grad in results:
        np.testing.assert_allclose(value, value_d, rtol=1e-11)
        blocks = every.layout.views(grad)
        for name in ("state", "transitions", "start", "end"):
            np.testing.assert_allclose(blocks[name], dense.layout.views(grad_d)[name],
                                       rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(blocks["patterns"],
                                   dense.layout.views(grad_d)["trigram"].ravel(), rtol=1e-9,
                                   atol=1e-10)


def test_coefficients_leave_out_zero_weights_and_weights_put_them_back():
    X, offsets, label_ids, n_classes = _problem(12, n_sequences=30, max_length=8)
    structure = _structure(X, offsets, label_ids, n_classes, 3)
    w = np.random.default_rng(13).normal(size=structure.n_parameters)
    blocks = structure.layout.views(w)
    blocks["patterns"][::2] = 0.0
    named = structure.coefficients(w)
    assert named["label_patterns"].shape == ((blocks["patterns"] != 0).sum(), 4)
    np.testing.assert_array_equal(named["pattern_coef"], blocks["patterns"][1::2])
    np.testing.assert_array_equal(structure.weights(named), w)
    # rows in another order, and a pattern this structure does not keep
    missing = next(code for code in range(n_classes ** 3)
                   if code not in set(structure.patterns.codes[3].tolist()))
    extra = [-1, missing // n_classes ** 2, missing // n_classes % n_classes,
             missing % n_classes]
    order = np.random.default_rng(14).permutation(named["pattern_coef"].shape[0])
    shuffled = {**named, "label_patterns": np.vstack([named["label_patterns"][order], extra]),
                "pattern_coef": np.append(named["pattern_coef"][order], 5.0)}
    np.testing.assert_array_equal(structure.weights(shuffled), w)
    assert structure.weights({**named, "pattern_coef": named["pattern_coef"][:-1]}) is None


def test_label_patterns_seen_every_and_refused():
    offsets = np.array([0, 5, 7], dtype=np.int64)
    labels = np.array([0, 1, 0, 1, 0, 1, 1])
    seen = LabelPatterns.seen(labels, offsets, 2, 3)
    assert sorted(map(tuple, seen.rows)) == [(-1, 0, 1, 0), (-1, 1, 0, 1), (0, 1, 0, 1),
                                             (1, 0, 1, 0)]
    assert LabelPatterns.seen(labels, offsets, 2, 3, min_freq=2).n_patterns == 1  # 010 twice
    allowed = np.array([[True, True], [False, True]])
    every = LabelPatterns.every(2, 3, allowed)
    # no pattern holds the forbidden pair (1, 0)
    assert all(not any(a == 1 and b == 0 for a, b in zip(r[r >= 0][:-1], r[r >= 0][1:]))
               for r in every.rows)
    assert every.n_patterns == 4 + 5
    with pytest.raises(ValueError, match="all_possible_transitions=True"):
        LabelPatterns.every(200, 3)
    with pytest.raises(ValueError, match="label pattern 1 is"):
        LabelPatterns.from_rows(np.array([[-1, 0, 1, 0], [0, -1, 1, 1]]), 2, 3)
    with pytest.raises(ValueError, match="repeats pattern 0"):
        LabelPatterns.from_rows(np.array([[-1, 0, 1, 0], [-1, 0, 1, 0]]), 2, 3)
    with pytest.raises(ValueError, match="shape"):
        LabelPatterns.from_rows(np.array([[0, 1, 0]]), 2, 3)
    with pytest.raises(ValueError, match="beyond what skcrf can index"):
        LabelPatterns.seen(labels, offsets, 10 ** 6, 3)


def test_pattern_counts_and_scores_of_a_labelling():
    offsets = np.array([0, 5, 5, 7], dtype=np.int64)
    labels = np.array([0, 1, 0, 1, 0, 1, 1])
    patterns, _ = LabelPatterns.from_rows(np.array([[-1, 0, 1, 0], [0, 1, 0, 1]]), 2, 3)
    # 0 1 0 1 0 holds 0 1 0 twice and 0 1 0 1 once; 1 1 holds neither
    np.testing.assert_array_equal(patterns.counts(labels, offsets), [2, 1])
    np.testing.assert_allclose(patterns.labelling_scores(labels, offsets, [1.0, 10.0]),
                               [12.0, 0.0, 0.0])
