"""The order-1 scaled pass on lanes equals the one-sequence pass, lane by lane.

Log Z, marginals and backward messages bitwise; the transition counts (summed
in another order) to rounding. A lane that fails the precision checks is
reported as NaN and leaves the other lanes as they would be alone.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.inference._logspace import FLOOR
from skcrf.inference.chain._order1_passes import scaled_forward_backward
from skcrf.inference.chain._order1_lanes import (LANE_BUDGET, LANE_MAX, LANE_MIN, LANE_VECTOR,
                                           lane_forward_backward, lane_groups, lane_workspace)
from skcrf.structures._parameters import StatePairs
from tests._chain_loss import chain_loss


def _one_sequence(exp_trans, exp_start, exp_end, emission, shift, transposed=True):
    """The one-sequence pass: (log Z, marginals, messages, transition counts).

    With ``transposed`` the backward step reads the transposed transitions,
    as the chain does; without, their columns in place, as the chain with
    transition features does.
    """
    n, n_classes = emission.shape
    emission = emission.copy()
    alpha, beta = np.empty((n, n_classes)), np.empty((n, n_classes))
    marginals = np.empty((n, n_classes))
    exp_trans_t = np.ascontiguousarray(exp_trans.T)[np.newaxis]
    log_z = scaled_forward_backward(
        np.zeros((n, n_classes)), np.zeros((1, n_classes, n_classes)), np.zeros(n_classes),
        np.zeros(n_classes), 0, n, 0, exp_trans[np.newaxis],
        exp_trans_t if transposed else exp_trans_t[:0], exp_start, exp_end, False,
        shift, emission, alpha, beta, np.empty(n), np.empty((2, n_classes), np.bool_),
        np.empty(n_classes), marginals)
    counts = np.zeros((n_classes, n_classes))
    for r in range(1, n):
        counts += alpha[r - 1][:, None] * exp_trans * emission[r][None, :]
    return log_z, marginals, emission, counts


def _lanes(exp_trans, exp_start, exp_end, emissions, shifts):
    k, n, n_classes = emissions.shape
    lanes = lane_workspace(n, n_classes, LANE_MAX)
    for block in lanes:
        block[...] = np.nan  # what a lane does not own must not reach it
    lanes[0][:n, :, :k] = emissions.transpose(1, 2, 0)
    lanes[7][:k] = shifts
    lane_forward_backward(exp_trans, exp_start, exp_end, n, k, lanes, np.bool_(True))
    return lanes


@pytest.mark.parametrize("n_classes, n, k", [(3, 2, 4), (9, 17, 32), (5, 40, 7), (22, 6, 13),
                                             (7, 11, 9), (2, 5, 6), (4, 3, 4)])
def test_each_lane_is_the_one_sequence_pass(n_classes, n, k):
    rng = np.random.default_rng(n_classes * 100 + n)
    exp_trans = np.exp(rng.normal(size=(n_classes, n_classes)) - 3)
    exp_start, exp_end = np.exp(-rng.random(n_classes)), np.exp(-rng.random(n_classes))
    emissions = np.exp(rng.normal(scale=3, size=(k, n, n_classes)))
    emissions /= emissions.max(axis=2, keepdims=True)
    shifts = rng.normal(size=k)
    lanes = _lanes(exp_trans, exp_start, exp_end, emissions, shifts)
    alpha, beta, messages, counts, log_z = lanes[1], lanes[2], lanes[0], lanes[6], lanes[7]
    for lane in range(k):
        expected = _one_sequence(exp_trans, exp_start, exp_end, emissions[lane], shifts[lane])
        assert log_z[lane] == expected[0]
        np.testing.assert_array_equal(alpha[:n, :, lane] * beta[:n, :, lane], expected[1])
        np.testing.assert_array_equal(messages[1:n, :, lane], expected[2][1:])
        np.testing.assert_allclose(counts[:, :, lane], expected[3], rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("k", [5, 13, 31])
def test_padding_lanes_copy_the_first_and_stop_at_the_vector_width(k):
    """A group of k lanes runs on k rounded up to LANE_VECTOR, the extra lanes
    copies of lane 0; lanes past them are neither read nor written."""
    rng = np.random.default_rng(k)
    n_classes, n = 6, 9
    exp_trans = np.exp(rng.normal(size=(n_classes, n_classes)) - 2)
    exp_start, exp_end = np.exp(-rng.random(n_classes)), np.exp(-rng.random(n_classes))
    emissions = rng.random((k, n, n_classes)) + 0.05
    lanes = _lanes(exp_trans, exp_start, exp_end, emissions, rng.normal(size=k))
    padded = -(-k // LANE_VECTOR) * LANE_VECTOR
    log_z = lanes[7]
    assert np.isfinite(log_z[:k]).all()
    np.testing.assert_array_equal(log_z[k:padded], log_z[0])
    np.testing.assert_array_equal(lanes[1][:n, :, k:padded],
                                  np.repeat(lanes[1][:n, :, :1], padded - k, axis=2))
    assert np.isnan(log_z[padded:]).all() and np.isnan(lanes[0][:, :, padded:]).all()


def test_a_lane_that_underflows_fails_alone():
    rng = np.random.default_rng(3)
    n_classes, n, k = 4, 5, 6
    exp_trans = np.exp(rng.normal(size=(n_classes, n_classes)))
    exp_start = exp_end = np.ones(n_classes)
    emissions = rng.random((k, n, n_classes)) + 0.1
    emissions[2, 3, 1] = 1e-300  # below the floor: lane 2 must be redone exactly
    lanes = _lanes(exp_trans, exp_start, exp_end, emissions, np.zeros(k))
    for lane in range(k):
        alone = _one_sequence(exp_trans, exp_start, exp_end, emissions[lane], 0.0)[0]
        if lane == 2:
            assert np.isnan(alone) and np.isnan(lanes[7][lane])
        else:
            assert lanes[7][lane] == alone


def test_groups_hold_runs_of_one_length():
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(0, 12, size=300), np.full(70, 5), [1] * 9,
                              [LANE_BUDGET] * 5])
    rng.shuffle(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    lo, hi = 3, lengths.shape[0] - 2
    order, ends, longest = lane_groups(offsets, lo, hi, 9)
    assert sorted(order) == list(range(lo, hi))
    starts = np.concatenate([[0], ends[:-1]])
    grouped_longest = 0
    for a, b in zip(starts, ends):
        group_lengths = lengths[order[a:b]]
        assert (group_lengths == group_lengths[0]).all()
        assert b - a == 1 or LANE_MIN <= b - a <= LANE_MAX
        if b - a > 1:
            assert group_lengths[0] >= 2  # one-token sequences have no pass to share
            assert group_lengths[0] * 9 * LANE_MAX <= LANE_BUDGET
            grouped_longest = max(grouped_longest, group_lengths[0])
        else:
            # a single is a run too short for lanes, or of lengths lanes skip
            run = np.count_nonzero(lengths[order] == group_lengths[0])
            assert run < LANE_MIN or group_lengths[0] < 2 or \
                group_lengths[0] * 9 * LANE_MAX > LANE_BUDGET
    assert longest == grouped_longest > 0


def test_training_loss_with_lanes_equals_unfused_path_when_some_lanes_fail():
    # many sequences of few lengths, so that the fused kernel groups them; one
    # active feature per token, so that weights of +-590 stay inside the
    # exponentiated-weight route; the rare feature 0 carries them, and the
    # tokens that have it underflow the scaled pass: their sequences' lanes
    # are redone exactly, the others are not
    rng = np.random.default_rng(11)
    lengths = rng.choice([3, 4, 6], size=120)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens, n_features, n_classes = int(offsets[-1]), 10, 5
    columns = rng.integers(1, n_features, size=n_tokens)
    columns[rng.random(n_tokens) < 0.03] = 0
    X = sp.csr_matrix((np.ones(n_tokens), (np.arange(n_tokens), columns)),
                      shape=(n_tokens, n_features))
    labels = rng.integers(0, n_classes, size=n_tokens)
    pairs = StatePairs.observed(X, labels, n_classes)
    fused = chain_loss(X, offsets, labels, pairs, l2=0.1)
    unfused = chain_loss(X, offsets, labels, pairs, l2=0.1, fused=False)
    for rare in (1.0, 590.0):
        w = rng.normal(size=fused.n_parameters)
        state = fused.structure.layout.views(w)["state"]
        first = slice(pairs.feature_ptr[0], pairs.feature_ptr[1])
        state[first] = rare * (-1.0) ** np.arange(state[first].shape[0])
        value, grad = fused(w)
        value_u, grad_u = unfused(w)
        np.testing.assert_allclose(value, value_u, rtol=1e-11)
        np.testing.assert_allclose(grad, grad_u, rtol=1e-9, atol=1e-9)
    unary = X @ pairs.to_dense(state).T
    spread = unary.max(axis=1) - unary.min(axis=1)
    assert (spread > -np.log(FLOOR)).any() and (spread < 100).any()
