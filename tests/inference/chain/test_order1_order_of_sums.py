"""The order-1 scaled pass adds every cell's terms in the textbook order.

Its loops take four labels (or four tokens) per pass over a row, for speed;
each cell must still add its terms one by one in label (or token) order, so
that the one-sequence pass, the lanes and the transition-feature chain agree
bitwise. The references here are plain Python loops in that order (Python
floats are IEEE doubles, rounded as the compiled code rounds them). The
kernels may fuse each multiply-add into one instruction, rounded once
(``compiled(contract=True)``), which the processor decides: the references
do what the kernels do here (:func:`_multiply_add`).
"""

from fractions import Fraction

import numpy as np
import pytest

from skcrf.inference.chain._order1_passes import scaled_forward_backward
from skcrf.inference._products import add_vector_matrix
from skcrf.inference.chain.order1 import scaled_from_emission

SHAPES = [(1, 1), (3, 2), (4, 4), (5, 3), (9, 7), (13, 5), (44, 6)]


def _problem(n_classes, n, seed):
    rng = np.random.default_rng(seed)
    exp_trans = np.exp(rng.normal(size=(n_classes, n_classes)) - 2)
    exp_start, exp_end = np.exp(-rng.random(n_classes)), np.exp(-rng.random(n_classes))
    emission = np.exp(rng.normal(scale=2, size=(n, n_classes)))
    emission /= emission.max(axis=1, keepdims=True)
    return exp_trans, exp_start, exp_end, emission


def _pass(exp_trans, exp_start, exp_end, emission, transposed):
    n, n_classes = emission.shape
    emission = emission.copy()
    alpha, beta = np.empty((n, n_classes)), np.empty((n, n_classes))
    exp_trans_t = np.ascontiguousarray(exp_trans.T)[np.newaxis]
    log_z = scaled_forward_backward(
        np.zeros((n, n_classes)), np.zeros((1, n_classes, n_classes)), np.zeros(n_classes),
        np.zeros(n_classes), 0, n, 0, exp_trans[np.newaxis],
        exp_trans_t if transposed else exp_trans_t[:0], exp_start, exp_end, False, 0.0,
        emission, alpha, beta, np.empty(n), np.empty((2, n_classes), np.bool_),
        np.empty(n_classes), np.empty((n, n_classes)))
    return log_z, alpha, beta, emission


def _fused_here():
    """Whether the compiled kernels fuse multiply-adds on this processor.

    ``0.1 * 10 - 1`` is 0 with two roundings and 2**-54 with one.
    """
    out = np.array([-1.0])
    add_vector_matrix(np.array([0.1]), np.array([[10.0]]), out)
    return out[0] != 0.0


FUSED = _fused_here()


def _multiply_add(a, b, c):
    """``a * b + c`` as the kernels compute it: rounded once if they fuse, else twice.

    float() of a Fraction rounds exactly, as a fused multiply-add does.
    """
    if FUSED:
        return float(Fraction(a) * Fraction(b) + Fraction(c))
    return a * b + c


def _reference_pass(exp_trans, exp_start, exp_end, emission):
    """Forward and backward values, each cell summed term by term in label order."""
    n, n_classes = emission.shape
    E = exp_trans.tolist()
    alpha = [[0.0] * n_classes for _ in range(n)]
    norm = [0.0] * n
    total = 0.0
    for j in range(n_classes):
        alpha[0][j] = float(exp_start[j]) * float(emission[0, j])
        total += alpha[0][j]
    norm[0] = total
    alpha[0] = [a * (1.0 / total) for a in alpha[0]]
    for r in range(1, n):
        for j in range(n_classes):
            cell = 0.0
            for i in range(n_classes):
                cell = _multiply_add(alpha[r - 1][i], E[i][j], cell)
            alpha[r][j] = cell * float(emission[r, j])
        total = 0.0
        for j in range(n_classes):
            total += alpha[r][j]
        norm[r] = total
        alpha[r] = [a * (1.0 / total) for a in alpha[r]]
    final = 0.0
    for j in range(n_classes):
        final += alpha[n - 1][j] * float(exp_end[j])
    beta = [[0.0] * n_classes for _ in range(n)]
    beta[n - 1] = [float(exp_end[j]) / final for j in range(n_classes)]
    messages = [list(map(float, row)) for row in emission]
    for r in range(n - 2, -1, -1):
        inverse = 1.0 / norm[r + 1]
        messages[r + 1] = [messages[r + 1][j] * (beta[r + 1][j] * inverse)
                           for j in range(n_classes)]
        for i in range(n_classes):
            cell = 0.0
            for j in range(n_classes):
                cell = _multiply_add(E[i][j], messages[r + 1][j], cell)
            beta[r][i] = cell
    return np.array(alpha), np.array(beta), np.array(messages)


@pytest.mark.parametrize("n_classes, n", SHAPES)
def test_forward_and_backward_add_in_label_order(n_classes, n):
    problem = _problem(n_classes, n, seed=n_classes * 10 + n)
    log_z, alpha, beta, messages = _pass(*problem, transposed=True)
    ref_alpha, ref_beta, ref_messages = _reference_pass(*problem)
    assert np.isfinite(log_z)
    np.testing.assert_array_equal(alpha, ref_alpha)
    np.testing.assert_array_equal(beta, ref_beta)
    np.testing.assert_array_equal(messages[1:], ref_messages[1:])


@pytest.mark.parametrize("n_classes, n", SHAPES)
def test_transposed_and_in_place_columns_agree_bitwise(n_classes, n):
    problem = _problem(n_classes, n, seed=n_classes + n)
    transposed = _pass(*problem, transposed=True)
    in_place = _pass(*problem, transposed=False)
    assert transposed[0] == in_place[0]
    for a, b in zip(transposed[1:], in_place[1:]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_classes, n", SHAPES + [(3, 9), (6, 12)])
def test_transition_counts_add_in_token_order(n_classes, n):
    exp_trans, exp_start, exp_end, emission = _problem(n_classes, n, seed=7 * n + n_classes)
    alpha, beta = np.empty((n, n_classes)), np.empty((n, n_classes))
    messages = emission.copy()
    counts = np.zeros((n_classes, n_classes))
    log_z = scaled_from_emission(
        messages, np.zeros((n_classes, n_classes)), np.zeros(n_classes), np.zeros(n_classes),
        0, n, exp_trans, np.ascontiguousarray(exp_trans.T), exp_start, exp_end, False, 0.0,
        messages, alpha, beta, np.empty(n), np.empty((2, n_classes), np.bool_), True,
        np.empty((n, n_classes)), counts, np.empty(n_classes))
    assert np.isfinite(log_z)
    reference = np.zeros((n_classes, n_classes))
    for i in range(n_classes):
        for j in range(n_classes):
            cell = 0.0
            for r in range(1, n):
                cell = _multiply_add(float(alpha[r - 1, i]) * float(exp_trans[i, j]),
                            float(messages[r, j]), cell)
            reference[i, j] = cell
    np.testing.assert_array_equal(counts, reference)
