"""Random training problems and checks that the structure tests of every family repeat."""

import numpy as np
import scipy.sparse as sp

from tests._threads import assert_same_for_one_and_two_threads


def random_lengths(rng, n_sequences, max_length):
    """Sequence lengths 0..max_length, always one of length 1 and one full one."""
    lengths = rng.integers(0, max_length + 1, size=n_sequences)
    lengths[0], lengths[1] = 1, max_length
    return lengths


def random_features(rng, n_tokens, n_features, binary, density=0.5):
    """Dense (n_tokens, n_features) token features, ``density`` of them present."""
    present = rng.random((n_tokens, n_features)) < density
    return present * (1.0 if binary else rng.normal(size=(n_tokens, n_features)))


def chain_problem(seed, n_sequences, n_features, n_classes, max_length, binary, density=0.5):
    """``(X as CSR, offsets, label ids, n_classes)`` of random sequences and labels."""
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, n_sequences, max_length)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    dense = random_features(rng, n_tokens, n_features, binary, density)
    label_ids = rng.integers(0, n_classes, size=n_tokens)
    return sp.csr_matrix(dense), offsets, label_ids, n_classes


def assert_fused_equals_unfused(fused, unfused, scales, seed):
    """The fused kernel's loss and gradient are the unfused path's at each weight scale."""
    assert fused.terms is not unfused.terms
    for scale in scales:
        w = np.random.default_rng(seed).normal(scale=scale, size=fused.n_parameters)
        value, grad = fused(w)
        value_u, grad_u = unfused(w)
        np.testing.assert_allclose(value, value_u, rtol=1e-11)
        np.testing.assert_allclose(grad, grad_u, rtol=1e-9, atol=1e-9)


def assert_loss_same_for_one_and_two_threads(loss, seed):
    """The loss and gradient at random weights are the same bits under one and two threads."""
    w = np.random.default_rng(seed).normal(size=loss.n_parameters)
    assert_same_for_one_and_two_threads(lambda: loss(w))
