"""The semi-Markov structure's objective against brute force, and its identity with the chain."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.semimarkov.structure import SemiMarkovStructure
from skcrf.structures.semimarkov.segment_scores import SegmentScores, Segmentation, segment_codes
from tests._structure_checks import (assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads, random_features,
                                     random_lengths, random_segmentation)
from tests._threads import needs_two_threads
from tests.naive_semimarkov import labelled_segmentations, segmentation_score


def _problem(seed, n_sequences=5, n_features=5, n_labels=3, max_length=4, longest=3,
             binary=False):
    """Random features and a random gold segmentation with segments of at most ``longest``."""
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, n_sequences, max_length)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    dense = random_features(rng, n_tokens, n_features, binary)
    label_ids, starts = random_segmentation(rng, offsets, n_labels, longest)
    return sp.csr_matrix(dense), offsets, segment_codes(label_ids, starts, n_labels)


def _structure(X, offsets, codes, max_lengths, every=False, allow_repeats=True):
    return SemiMarkovStructure.for_training(as_feature_arrays(X), offsets, codes, max_lengths,
                                            all_possible_states=every,
                                            allow_repeats=allow_repeats)


def _gold_segments(codes, offsets, n_labels, lo, hi):
    seg = Segmentation.of_codes(codes, offsets, n_labels)
    bounds = [r for r in range(lo, hi) if seg.starts[r]] + [hi]
    return tuple((a - lo, b - lo, int(seg.label_ids[a])) for a, b in zip(bounds[:-1], bounds[1:]))


def _brute_force_loss(structure, X, offsets, codes, w, l2):
    scores = structure.scores(as_feature_arrays(X), w)
    total = 0.5 * l2 * (w @ w)
    C = structure.n_labels
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        potentials = (scores.state[lo:hi], scores.first[lo:hi], scores.last[lo:hi],
                      scores.length, scores.transitions, scores.start, scores.end)
        all_scores = [segmentation_score(*potentials, seg)
                      for seg in labelled_segmentations(hi - lo, C, structure.max_length)]
        gold = segmentation_score(*potentials, _gold_segments(codes, offsets, C, lo, hi))
        total += logsumexp(all_scores) - gold
    return total


def _dense_scores(structure, X, w):
    """The potentials recomputed from dense weights, independently of the kernels."""
    named = structure.coefficients(w)
    dense = X.toarray()
    return (dense @ named["coef"].T, dense @ named["first_coef"].T,
            dense @ named["last_coef"].T, named["length"], named["transitions"])


VARIANTS = {
    "observed": dict(max_lengths=[3, 3, 1]),
    "every": dict(max_lengths=[3, 3, 2], every=True),
    "runs": dict(max_lengths=[3, 3, 3], allow_repeats=False),
}


def _codes_for(variant, seed, **kwargs):
    X, offsets, codes = _problem(seed, **kwargs)
    C = 3
    seg = Segmentation.of_codes(codes, offsets, C)
    label_ids, starts = seg.label_ids.copy(), seg.starts.copy()
    if variant in ("observed", "every"):  # label 2 only in one-token segments
        starts[label_ids == 2] = True
    if variant == "runs":  # merge consecutive segments of one label
        same = np.zeros_like(starts)
        same[1:] = label_ids[1:] == label_ids[:-1]
        starts &= ~same
        starts[offsets[:-1][np.diff(offsets) > 0]] = True
        # a merged run may be too long: cut it at 3 tokens with another label
        run = 0
        for t in range(label_ids.shape[0]):
            run = 1 if starts[t] else run + 1
            if run > 3:
                label_ids[t] = (label_ids[t] + 1) % C
                starts[t] = True
                run = 1
                if t + 1 < label_ids.shape[0] and not starts[t + 1]:
                    starts[t + 1] = True
    return X, offsets, segment_codes(label_ids, starts, C)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_loss_equals_brute_force(variant, binary):
    X, offsets, codes = _codes_for(variant, 0, binary=binary)
    structure = _structure(X, offsets, codes, **VARIANTS[variant])
    loss = NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, codes, l2=0.3)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    expected = _brute_force_loss(structure, X, offsets, codes, w, 0.3)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)
    # the scores the kernels get equal the dense weights' products
    scores = structure.scores(as_feature_arrays(X), w)
    for got, want in zip((scores.state, scores.first, scores.last, scores.length,
                          scores.transitions), _dense_scores(structure, X, w)):
        np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradient_matches_finite_differences(variant):
    X, offsets, codes = _codes_for(variant, 2)
    structure = _structure(X, offsets, codes, **VARIANTS[variant])
    loss = NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, codes, l2=0.2)
    assert_gradient_matches_finite_differences(loss, seed=3)


def test_segments_of_one_token_without_length_and_boundary_weights_equal_the_chain():
    X, offsets, codes = _problem(4, n_sequences=30, max_length=8, longest=1)
    C = 3
    label_ids = Segmentation.of_codes(codes, offsets, C).label_ids
    features = as_feature_arrays(X)
    chain = ChainStructure.for_training(features, offsets, label_ids, C)
    # the semi-Markov structure with the chain's state pairs and nothing else
    pairs = chain.state_pairs
    semi = SemiMarkovStructure(StatePairs(pairs.feature_ptr, pairs.labels, 3 * C), [1] * C)
    loss_chain = NegativeLogLikelihood(chain, features, offsets, label_ids, l2=0.1)
    loss_semi = NegativeLogLikelihood(semi, features, offsets, codes, l2=0.1)
    w_chain = np.random.default_rng(5).normal(size=loss_chain.n_parameters)
    w_semi = semi.layout.zeros()
    for name in ("transitions", "start", "end"):
        semi.layout.view(w_semi, name)[...] = chain.layout.view(w_chain, name)
    semi.layout.view(w_semi, "token")[:] = chain.layout.view(w_chain, "state")
    value_chain, grad_chain = loss_chain(w_chain)
    value_semi, grad_semi = loss_semi(w_semi)
    np.testing.assert_allclose(value_semi, value_chain, rtol=1e-12)
    for name in ("transitions", "start", "end"):
        np.testing.assert_allclose(semi.layout.view(grad_semi, name),
                                   chain.layout.view(grad_chain, name), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(semi.layout.view(grad_semi, "token"),
                               chain.layout.view(grad_chain, "state"), rtol=1e-9, atol=1e-10)


def test_gold_statistics_count_segments():
    X = sp.csr_matrix(np.ones((5, 1)))
    offsets = np.array([0, 3, 3, 5], dtype=np.int64)
    # sequence 0: [0, 2) label 1, [2, 3) label 0; sequence 2: [3, 5) label 1
    codes = segment_codes([1, 1, 0, 1, 1], [True, False, True, True, False], 2)
    structure = _structure(X, offsets, codes, [1, 2])
    gold = structure.layout.views(structure.gold_statistics(as_feature_arrays(X), offsets,
                                                            codes))
    np.testing.assert_array_equal(gold["length"], [[1, 0], [0, 2]])
    np.testing.assert_array_equal(gold["transitions"], [[0, 0], [1, 0]])
    np.testing.assert_array_equal(gold["start"], [0, 2])
    np.testing.assert_array_equal(gold["end"], [1, 1])
    token = structure.token_pairs.to_dense(gold["token"])[:, 0]
    # state: 1 token of label 0, 4 of label 1; first and last: 2 segments of label 1,
    # and no weight for label 0, whose segments are single tokens (the state weights')
    np.testing.assert_array_equal(token, [1, 4, 0, 2, 0, 2])
    assert structure.token_pairs.n_pairs == 4


def test_gold_segment_longer_than_allowed_names_the_sequence():
    X = sp.csr_matrix(np.ones((4, 1)))
    offsets = np.array([0, 1, 4], dtype=np.int64)
    codes = segment_codes([0, 1, 1, 1], [True, True, False, False], 2)
    structure = SemiMarkovStructure(StatePairs.every(1, 6), [1, 2])
    with pytest.raises(ValueError, match=r"Sequence 1 has a segment of 3 tokens \(tokens 0:3"):
        structure.gold_statistics(as_feature_arrays(X), offsets, codes)


def test_forbidden_repeats_get_zero_probability():
    X, offsets, codes = _codes_for("runs", 6, n_sequences=20, max_length=8)
    structure = _structure(X, offsets, codes, [3, 3, 3], allow_repeats=False)
    features = as_feature_arrays(X)
    w = np.random.default_rng(7).normal(size=structure.n_parameters)
    from skcrf.structures.semimarkov.segment_scores import SegmentPosteriors, segment_decode

    scores = structure.scores(features, w)
    posteriors = SegmentPosteriors.of_scores(scores, offsets)
    assert not np.diag(posteriors.transition_counts).any()
    decoded = segment_decode(scores, offsets)
    first, _, labels, sequence = decoded.bounds(offsets)
    assert not ((sequence[1:] == sequence[:-1]) & (labels[1:] == labels[:-1])).any()
    named = structure.coefficients(w)
    again = SegmentScores.of_coefficients(features, named["coef"], named["first_coef"],
                                          named["last_coef"], named["length"],
                                          named["transitions"], named["start"], named["end"])
    for a, b in zip(scores.kernel_args(), again.kernel_args()):
        np.testing.assert_allclose(a, b, atol=1e-12)


@needs_two_threads
def test_loss_bitwise_identical_for_one_and_two_threads():
    X, offsets, codes = _problem(12, n_sequences=300, n_features=6, max_length=15)
    structure = _structure(X, offsets, codes, [3, 3, 3])
    loss = NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, codes, l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=13)
