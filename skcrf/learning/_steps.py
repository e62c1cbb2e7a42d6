"""The vector steps of L-BFGS / OWL-QN, each in one pass over the parameters.

Written as numpy expressions, an iteration makes about 75 passes over
vectors of every weight, most of them through temporaries; here each step
makes one, reading and writing the solver's own buffers. Every sum runs in
a fixed order, whatever the machine's BLAS or thread count, so a solve is
reproducible bit for bit: element ``i`` goes to running sum ``i % 4`` (four
independent sums, which the compiler keeps in one vector register), and the
four are added at the end (:func:`_total`).
"""

import numpy as np

from ..inference._runtime.batch import compiled

#: The running sums of every reduction here.
LANES = 4


@compiled()
def _total(sums):
    """The four running sums of a pass, added in a fixed order."""
    return (sums[0] + sums[1]) + (sums[2] + sums[3])


@compiled()
def _pseudo(g, wi, l1):
    """One component of the pseudo-gradient (see :func:`pseudo_gradient`), by selects."""
    up = g + l1
    down = g - l1
    at_zero = up if up < 0.0 else (down if down > 0.0 else 0.0)
    return up if wi > 0.0 else (down if wi < 0.0 else at_zero)


@compiled()
def pseudo_gradient(w, grad, l1, pseudo):
    """Write the OWL-QN pseudo-gradient of ``loss + l1 * ||w||_1`` into ``pseudo``.

    Where ``w_i != 0`` it is ``grad_i + l1 * sign(w_i)``; where ``w_i == 0``
    the one-sided derivative that points downhill, or 0 when neither does
    (Andrew & Gao, 2007); with ``l1 == 0`` the gradient itself. Returns
    ``(pseudo @ pseudo, w @ w)``, the squared norms of the stopping test.
    """
    squares = np.zeros(LANES)
    w_squares = np.zeros(LANES)
    for i in range(w.shape[0]):
        p = _pseudo(grad[i], w[i], l1)
        pseudo[i] = p
        squares[i % LANES] += p * p
        w_squares[i % LANES] += w[i] * w[i]
    return _total(squares), _total(w_squares)


@compiled()
def axpby_dot(direction, a, b, x, z):
    """``direction = a * direction + b * x``; return ``z @ direction`` (the new one).

    The two-loop recursion's steps: an update (``a = 1``), the scaling by the
    initial Hessian (``b = 0``) and the start from the pseudo-gradient
    (``a = 0``, which never reads ``direction``), each fused with the product
    the next step needs.
    """
    sums = np.zeros(LANES)
    for i in range(direction.shape[0]):
        d = b * x[i] if a == 0.0 else a * direction[i] + b * x[i]
        direction[i] = d
        sums[i % LANES] += z[i] * d
    return _total(sums)


@compiled()
def descent_slope(direction, pseudo, owlqn):
    """Return ``pseudo @ direction`` after OWL-QN's sign rule, if ``owlqn``.

    The rule zeroes the components of ``direction`` that do not point
    against the pseudo-gradient (``direction_i * pseudo_i >= 0``).
    """
    sums = np.zeros(LANES)
    for i in range(direction.shape[0]):
        d = direction[i]
        if owlqn and d * pseudo[i] >= 0.0:
            d = 0.0
        direction[i] = d
        sums[i % LANES] += pseudo[i] * d
    return _total(sums)


@compiled()
def trial_point(w, direction, step, pseudo, owlqn, w_new):
    """``w_new = w + step * direction``, kept in the orthant of ``w`` if ``owlqn``.

    The orthant of a zero weight is the side opposite its pseudo-gradient;
    a coordinate that would leave its orthant lands on 0. Returns
    ``(||w_new||_1, pseudo @ (w_new - w))``: the L1 term and the
    Armijo test's predicted decrease.
    """
    norms = np.zeros(LANES)
    sums = np.zeros(LANES)
    for i in range(w.shape[0]):
        wi = w[i]
        v = wi + step * direction[i]
        if owlqn:
            orthant = np.sign(wi) if wi != 0.0 else -np.sign(pseudo[i])
            v = v if np.sign(v) == orthant else 0.0
        w_new[i] = v
        norms[i % LANES] += abs(v)
        sums[i % LANES] += pseudo[i] * (v - wi)
    return _total(norms), _total(sums)


@compiled()
def curvature_pair(w_new, w, grad_new, grad, s, y):
    """``s = w_new - w`` and ``y = grad_new - grad``; return ``(s @ y, y @ y)``."""
    sy = np.zeros(LANES)
    yy = np.zeros(LANES)
    for i in range(w.shape[0]):
        si = w_new[i] - w[i]
        yi = grad_new[i] - grad[i]
        s[i] = si
        y[i] = yi
        sy[i % LANES] += si * yi
        yy[i % LANES] += yi * yi
    return _total(sy), _total(yy)


@compiled()
def l1_norm(w):
    """``||w||_1``, in the fixed order of every sum here."""
    sums = np.zeros(LANES)
    for i in range(w.shape[0]):
        sums[i % LANES] += abs(w[i])
    return _total(sums)
