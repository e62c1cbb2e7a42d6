"""Segment features in the semi-Markov structure: brute force over all segmentations, and the
fused kernel against the unfused path."""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.features.arrays import FeatureArrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.semimarkov.structure import SemiMarkovStructure
from skcrf.structures.semimarkov.segment_scores import (SegmentScores, Segmentation, segment_codes,
                                             segment_decode, segment_role_posteriors)
from tests._structure_checks import (assert_fused_loss_equals_unfused,
                                     assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads,
                                     assert_zero_extra_weights_give_the_simpler, random_lengths,
                                     random_segmentation)
from tests._threads import needs_two_threads
from tests.naive_semimarkov import enumerate_sequence, segmentation_score


def _problem(seed, n_sequences=5, n_features=4, n_segment_features=5, span_length=2,
             n_labels=3, max_length=4, longest=3, binary=False, scale=1.0):
    """Random token and segment features, a random gold segmentation (segments <= longest).

    Returns the FeatureArrays (with ``segments``), the dense token and segment
    matrices, offsets and the gold codes.
    """
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, n_sequences, max_length)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    L = span_length

    def values(shape, density):
        present = rng.random(shape) < density
        return present * (1.0 if binary else rng.normal(scale=scale, size=shape))

    x = values((n_tokens, n_features), 0.5)
    segments = values((n_tokens * L, n_segment_features), 0.4)
    room = np.repeat(offsets[1:], lengths) - np.arange(n_tokens)
    inside = np.arange(n_tokens * L) % L < np.repeat(room, L)
    segments[~inside] = 0.0  # no candidate segment crosses its sequence's end
    features = FeatureArrays.from_sparse(sp.csr_matrix(x))
    features.segments = FeatureArrays.from_sparse(sp.csr_matrix(segments))
    features.segment_length = L
    label_ids, starts = random_segmentation(rng, offsets, n_labels, longest)
    return features, x, segments, offsets, segment_codes(label_ids, starts, n_labels)


def _structure(features, offsets, codes, max_lengths=(3, 3, 3), every=False):
    return SemiMarkovStructure.for_training(features, offsets, codes, list(max_lengths),
                                            all_possible_states=every)


def _dense_potentials(structure, x, segments, L, w):
    """The potentials from the dense weights and features, without the kernels."""
    named = structure.coefficients(w)
    spans = (segments @ named["segment_coef"].T).reshape(x.shape[0], L, -1)
    return (x @ named["coef"].T, x @ named["first_coef"].T, x @ named["last_coef"].T,
            named["length"], named["transitions"], named["start"], named["end"], spans)


def _gold(codes, offsets, n_labels, lo, hi):
    seg = Segmentation.of_codes(codes, offsets, n_labels)
    bounds = [r for r in range(lo, hi) if seg.starts[r]] + [hi]
    return tuple((a - lo, b - lo, int(seg.label_ids[a]))
                 for a, b in zip(bounds[:-1], bounds[1:]))


def _brute_force_loss(structure, x, segments, L, offsets, codes, w, l2):
    state, first, last, length, transitions, start, end, spans = _dense_potentials(
        structure, x, segments, L, w)
    total = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        potentials = (state[lo:hi], first[lo:hi], last[lo:hi], length, transitions, start,
                      end)
        log_z = enumerate_sequence(*potentials, spans[lo:hi])[0]
        gold = segmentation_score(*potentials, _gold(codes, offsets, structure.n_labels,
                                                     lo, hi), spans[lo:hi])
        total += log_z - gold
    return total


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("every", [False, True])
def test_loss_equals_brute_force(every, binary, fused):
    features, x, segments, offsets, codes = _problem(0, binary=binary)
    structure = _structure(features, offsets, codes, every=every)
    assert structure.segment_pairs is not None
    loss = NegativeLogLikelihood(structure, features, offsets, codes, l2=0.3, fused=fused)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    expected = _brute_force_loss(structure, x, segments, 2, offsets, codes, w, 0.3)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)
    # the span scores the kernels get equal the dense weights' products
    scores = structure.scores(features, w)
    np.testing.assert_allclose(scores.spans,
                               _dense_potentials(structure, x, segments, 2, w)[-1],
                               atol=1e-12)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("span_length", [1, 2, 4])
def test_gradient_matches_finite_differences(span_length, fused):
    """With segments shorter and longer than the segment features' length."""
    features, x, segments, offsets, codes = _problem(2, span_length=span_length)
    structure = _structure(features, offsets, codes)
    loss = NegativeLogLikelihood(structure, features, offsets, codes, l2=0.2, fused=fused)
    assert_gradient_matches_finite_differences(loss, seed=3)


def test_viterbi_and_marginals_match_brute_force():
    features, x, segments, offsets, codes = _problem(4, n_sequences=8)
    structure = _structure(features, offsets, codes)
    w = np.random.default_rng(5).normal(size=structure.n_parameters)
    scores = structure.scores(features, w)
    decoded = segment_decode(scores, offsets)
    log_z, roles = segment_role_posteriors(scores, offsets)
    state, first, last, length, transitions, start, end, spans = _dense_potentials(
        structure, x, segments, 2, w)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo:
            continue
        found = enumerate_sequence(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                   transitions, start, end, spans[lo:hi])
        np.testing.assert_allclose(log_z[q], found[0], rtol=1e-10)
        np.testing.assert_allclose(roles[lo:hi], found[1], atol=1e-10)
        best = _gold(segment_codes(decoded.label_ids, decoded.starts, 3), offsets, 3, lo, hi)
        assert best == found[6]


def test_zero_segment_weights_give_the_plain_structure():
    features, x, segments, offsets, codes = _problem(6, n_sequences=12, max_length=6)
    with_segments = _structure(features, offsets, codes)
    plain_features = FeatureArrays.from_sparse(sp.csr_matrix(x))
    plain = SemiMarkovStructure(with_segments.token_pairs, with_segments.max_lengths)
    assert_zero_extra_weights_give_the_simpler(plain, with_segments, plain_features, features,
                                               offsets, codes, seed=7)


@pytest.mark.parametrize("seed", range(6))
def test_fused_equals_unfused_on_random_problems(seed):
    rng = np.random.default_rng(seed)
    scale = [0.5, 3.0, 40.0][seed % 3]  # the last makes the scaled pass give up
    features, x, segments, offsets, codes = _problem(
        seed, n_sequences=40, max_length=int(rng.integers(3, 12)),
        span_length=int(rng.integers(1, 5)), binary=bool(seed % 2), scale=1.0)
    structure = _structure(features, offsets, codes, max_lengths=(3, 3, 4),
                           every=bool(seed % 2))
    w = rng.normal(scale=scale, size=structure.n_parameters)
    assert_fused_loss_equals_unfused(structure, features, offsets, codes, w)


def test_coefficients_round_trip_to_the_same_scores():
    features, x, segments, offsets, codes = _problem(8)
    structure = _structure(features, offsets, codes)
    w = np.random.default_rng(9).normal(size=structure.n_parameters)
    named = structure.coefficients(w)
    assert named["segment_coef"].shape == (3, segments.shape[1])
    again = SegmentScores.of_coefficients(
        features, named["coef"], named["first_coef"], named["last_coef"], named["length"],
        named["transitions"], named["start"], named["end"], named["segment_coef"])
    scores = structure.scores(features, w)
    np.testing.assert_allclose(again.spans, scores.spans, atol=1e-12)
    np.testing.assert_allclose(structure.weights(named), w * _kept(structure), atol=1e-12)


def _kept(structure):
    """1 where a weight is trained, 0 where the structure forbids it (its weight comes back 0)."""
    kept = np.ones(structure.n_parameters)
    structure.layout.view(kept, "length")[np.isneginf(structure.length_mask)] = 0.0
    structure.layout.view(kept, "transitions")[np.isneginf(structure.transition_mask)] = 0.0
    return kept


@needs_two_threads
def test_fused_loss_bitwise_identical_for_one_and_two_threads():
    features, x, segments, offsets, codes = _problem(12, n_sequences=300, max_length=15,
                                                     span_length=3)
    structure = _structure(features, offsets, codes)
    loss = NegativeLogLikelihood(structure, features, offsets, codes, l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=13)
