"""Random training problems and checks that the structure tests of every family repeat."""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import approx_fprime

from skcrf.features.arrays import FeatureArrays
from skcrf.features.sequence_matrix import SequenceMatrix
from skcrf.learning.objective import NegativeLogLikelihood
from tests._threads import assert_same_for_one_and_two_threads
from tests.naive_tree import batch_of_forests

#: Every forest shape of tests.naive_tree, taken in turn by the sequences of a batch
FOREST_SHAPES = ("random", "path", "reversed", "star", "roots")


def random_lengths(rng, n_sequences, max_length):
    """Sequence lengths 0..max_length, always one of length 1 and one full one."""
    lengths = rng.integers(0, max_length + 1, size=n_sequences)
    lengths[0], lengths[1] = 1, max_length
    return lengths


def random_features(rng, n_tokens, n_features, binary, density=0.5):
    """Dense (n_tokens, n_features) token features, ``density`` of them present."""
    present = rng.random((n_tokens, n_features)) < density
    return present * (1.0 if binary else rng.normal(size=(n_tokens, n_features)))


def nonempty_sequences(rng, n_sequences, n_features, max_length):
    """``(X as CSR, offsets)`` of sequences of 1..max_length tokens, the first a full one."""
    lengths = rng.integers(1, max_length + 1, size=n_sequences)
    lengths[0] = max_length
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    X = sp.csr_matrix(random_features(rng, int(offsets[-1]), n_features, binary=False))
    return X, offsets


def chain_problem(seed, n_sequences, n_features, n_classes, max_length, binary, density=0.5):
    """``(X as CSR, offsets, label ids, n_classes)`` of random sequences and labels."""
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, n_sequences, max_length)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    dense = random_features(rng, n_tokens, n_features, binary, density)
    label_ids = rng.integers(0, n_classes, size=n_tokens)
    return sp.csr_matrix(dense), offsets, label_ids, n_classes


def forest_problem(seed, n_sequences, n_features, n_classes, max_length, binary,
                   shapes=FOREST_SHAPES):
    """``(FeatureArrays with parents, dense features, offsets, label ids, n_classes)``."""
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, n_sequences, max_length)
    parents, offsets = batch_of_forests(rng, lengths,
                                        [shapes[q % len(shapes)] for q in range(n_sequences)])
    n_tokens = int(offsets[-1])
    dense = random_features(rng, n_tokens, n_features, binary)
    label_ids = rng.integers(0, n_classes, size=n_tokens)
    X = SequenceMatrix(sp.csr_matrix(dense), offsets, parents=parents)
    return FeatureArrays.of_sequences(X), dense, offsets, label_ids, n_classes


def random_segmentation(rng, offsets, n_labels, longest):
    """``(label ids, segment starts)`` of a random gold segmentation, segments <= longest."""
    label_ids = np.zeros(offsets[-1], dtype=np.int64)
    starts = np.zeros(offsets[-1], dtype=bool)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        a = lo
        while a < hi:
            b = min(hi, a + int(rng.integers(1, longest + 1)))
            label_ids[a:b] = rng.integers(n_labels)
            starts[a] = True
            a = b
    return label_ids, starts


def assert_zero_extra_weights_give_the_simpler(simple, rich, simple_features, rich_features,
                                               offsets, labels, seed):
    """``rich`` with ``simple``'s weights and 0 for its own is ``simple`` (fused or not).

    Returns the rich structure's weights.
    """
    w_simple = np.random.default_rng(seed).normal(size=simple.n_parameters)
    w = rich.layout.zeros()
    for name in simple.layout.shapes:
        rich.layout.view(w, name)[...] = simple.layout.view(w_simple, name)
    for fused in (True, False):
        a = NegativeLogLikelihood(simple, simple_features, offsets, labels, l2=0.0, fused=fused)
        b = NegativeLogLikelihood(rich, rich_features, offsets, labels, l2=0.0, fused=fused)
        (loss_a, grad_a), (loss_b, grad_b) = a(w_simple), b(w)
        np.testing.assert_allclose(loss_b, loss_a, rtol=1e-12)
        for name in simple.layout.shapes:
            np.testing.assert_allclose(rich.layout.view(grad_b, name),
                                       simple.layout.view(grad_a, name), atol=1e-10)
    return w


def assert_fused_loss_equals_unfused(structure, features, offsets, labels, w):
    """At weights ``w``, the fused objective's loss and gradient are the unfused path's."""
    fused = NegativeLogLikelihood(structure, features, offsets, labels, l2=0.1)(w)
    unfused = NegativeLogLikelihood(structure, features, offsets, labels, l2=0.1,
                                    fused=False)(w)
    np.testing.assert_allclose(fused[0], unfused[0], rtol=1e-10)
    np.testing.assert_allclose(fused[1], unfused[1], rtol=1e-8, atol=1e-8)


def assert_fused_equals_unfused(fused, unfused, scales, seed):
    """The fused kernel's loss and gradient are the unfused path's at each weight scale."""
    assert fused.terms is not unfused.terms
    for scale in scales:
        w = np.random.default_rng(seed).normal(scale=scale, size=fused.n_parameters)
        value, grad = fused(w)
        value_u, grad_u = unfused(w)
        np.testing.assert_allclose(value, value_u, rtol=1e-11)
        np.testing.assert_allclose(grad, grad_u, rtol=1e-9, atol=1e-9)


def assert_gradient_matches_finite_differences(loss, seed):
    """At random weights (scale 0.5), the gradient is the loss's finite differences."""
    w = np.random.default_rng(seed).normal(scale=0.5, size=loss.n_parameters)
    _assert_gradient_at(loss, w, loss(w)[1])


def assert_loss_and_gradient(objective, w, expected_loss):
    """At ``w`` the loss is an oracle's ``expected_loss``, the gradient its finite differences."""
    loss, grad = objective(w)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-10)
    _assert_gradient_at(objective, w, grad)


def _assert_gradient_at(loss, w, grad):
    numeric = approx_fprime(w, lambda v: loss(v)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def assert_loss_same_for_one_and_two_threads(loss, seed):
    """The loss and gradient at random weights are the same bits under one and two threads."""
    w = np.random.default_rng(seed).normal(size=loss.n_parameters)
    assert_same_for_one_and_two_threads(lambda: loss(w))
