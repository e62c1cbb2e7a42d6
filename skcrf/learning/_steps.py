"""The vector steps of L-BFGS / OWL-QN, each in one pass over the parameters.

Written as numpy expressions, an iteration makes about 75 passes over
vectors of every weight, most of them through temporaries; here each step
makes one, reading and writing the solver's own buffers. The sums run in a
fixed order (four running sums, added at the end), whatever the machine's
BLAS or thread count: a solve is reproducible bit for bit.
"""

import numpy as np

from ..inference._batch import compiled


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
    n = w.shape[0]
    m = n - n % 4
    p0 = p1 = p2 = p3 = 0.0
    v0 = v1 = v2 = v3 = 0.0
    for i in range(0, m, 4):
        q0 = _pseudo(grad[i], w[i], l1)
        q1 = _pseudo(grad[i + 1], w[i + 1], l1)
        q2 = _pseudo(grad[i + 2], w[i + 2], l1)
        q3 = _pseudo(grad[i + 3], w[i + 3], l1)
        pseudo[i] = q0
        pseudo[i + 1] = q1
        pseudo[i + 2] = q2
        pseudo[i + 3] = q3
        p0 += q0 * q0
        p1 += q1 * q1
        p2 += q2 * q2
        p3 += q3 * q3
        v0 += w[i] * w[i]
        v1 += w[i + 1] * w[i + 1]
        v2 += w[i + 2] * w[i + 2]
        v3 += w[i + 3] * w[i + 3]
    for i in range(m, n):
        q = _pseudo(grad[i], w[i], l1)
        pseudo[i] = q
        p0 += q * q
        v0 += w[i] * w[i]
    return (p0 + p1) + (p2 + p3), (v0 + v1) + (v2 + v3)


@compiled()
def negate_dot(direction, pseudo, z):
    """``direction = -pseudo``; return ``z @ direction``."""
    n = direction.shape[0]
    m = n - n % 4
    t0 = t1 = t2 = t3 = 0.0
    for i in range(0, m, 4):
        d0 = -pseudo[i]
        d1 = -pseudo[i + 1]
        d2 = -pseudo[i + 2]
        d3 = -pseudo[i + 3]
        direction[i] = d0
        direction[i + 1] = d1
        direction[i + 2] = d2
        direction[i + 3] = d3
        t0 += z[i] * d0
        t1 += z[i + 1] * d1
        t2 += z[i + 2] * d2
        t3 += z[i + 3] * d3
    for i in range(m, n):
        direction[i] = -pseudo[i]
        t0 += z[i] * direction[i]
    return (t0 + t1) + (t2 + t3)


@compiled()
def axpy_dot(direction, a, x, z):
    """``direction += a * x``; return ``z @ direction`` (the updated one)."""
    n = direction.shape[0]
    m = n - n % 4
    t0 = t1 = t2 = t3 = 0.0
    for i in range(0, m, 4):
        d0 = direction[i] + a * x[i]
        d1 = direction[i + 1] + a * x[i + 1]
        d2 = direction[i + 2] + a * x[i + 2]
        d3 = direction[i + 3] + a * x[i + 3]
        direction[i] = d0
        direction[i + 1] = d1
        direction[i + 2] = d2
        direction[i + 3] = d3
        t0 += z[i] * d0
        t1 += z[i + 1] * d1
        t2 += z[i + 2] * d2
        t3 += z[i + 3] * d3
    for i in range(m, n):
        direction[i] += a * x[i]
        t0 += z[i] * direction[i]
    return (t0 + t1) + (t2 + t3)


@compiled()
def scale_dot(direction, gamma, z):
    """``direction *= gamma``; return ``z @ direction`` (the scaled one)."""
    n = direction.shape[0]
    m = n - n % 4
    t0 = t1 = t2 = t3 = 0.0
    for i in range(0, m, 4):
        d0 = direction[i] * gamma
        d1 = direction[i + 1] * gamma
        d2 = direction[i + 2] * gamma
        d3 = direction[i + 3] * gamma
        direction[i] = d0
        direction[i + 1] = d1
        direction[i + 2] = d2
        direction[i + 3] = d3
        t0 += z[i] * d0
        t1 += z[i + 1] * d1
        t2 += z[i + 2] * d2
        t3 += z[i + 3] * d3
    for i in range(m, n):
        direction[i] *= gamma
        t0 += z[i] * direction[i]
    return (t0 + t1) + (t2 + t3)


@compiled()
def _kept(d, p, owlqn):
    """A direction component after OWL-QN's sign rule (see :func:`descent_slope`)."""
    return 0.0 if owlqn and d * p >= 0.0 else d


@compiled()
def descent_slope(direction, pseudo, owlqn):
    """Return ``pseudo @ direction`` after OWL-QN's sign rule, if ``owlqn``.

    The rule zeroes the components of ``direction`` that do not point
    against the pseudo-gradient (``direction_i * pseudo_i >= 0``).
    """
    n = direction.shape[0]
    m = n - n % 4
    t0 = t1 = t2 = t3 = 0.0
    for i in range(0, m, 4):
        d0 = _kept(direction[i], pseudo[i], owlqn)
        d1 = _kept(direction[i + 1], pseudo[i + 1], owlqn)
        d2 = _kept(direction[i + 2], pseudo[i + 2], owlqn)
        d3 = _kept(direction[i + 3], pseudo[i + 3], owlqn)
        direction[i] = d0
        direction[i + 1] = d1
        direction[i + 2] = d2
        direction[i + 3] = d3
        t0 += pseudo[i] * d0
        t1 += pseudo[i + 1] * d1
        t2 += pseudo[i + 2] * d2
        t3 += pseudo[i + 3] * d3
    for i in range(m, n):
        d = _kept(direction[i], pseudo[i], owlqn)
        direction[i] = d
        t0 += pseudo[i] * d
    return (t0 + t1) + (t2 + t3)


@compiled()
def _trial(wi, d, step, p, owlqn):
    """One component of :func:`trial_point`'s ``w_new``."""
    v = wi + step * d
    if not owlqn:
        return v
    orthant = np.sign(wi) if wi != 0.0 else -np.sign(p)
    return v if np.sign(v) == orthant else 0.0


@compiled()
def trial_point(w, direction, step, pseudo, owlqn, w_new):
    """``w_new = w + step * direction``, kept in the orthant of ``w`` if ``owlqn``.

    The orthant of a zero weight is the side opposite its pseudo-gradient;
    a coordinate that would leave its orthant lands on 0. Returns
    ``(||w_new||_1, pseudo @ (w_new - w))``: the L1 term and the
    Armijo test's predicted decrease.
    """
    n = w.shape[0]
    m = n - n % 4
    a0 = a1 = a2 = a3 = 0.0
    t0 = t1 = t2 = t3 = 0.0
    for i in range(0, m, 4):
        v0 = _trial(w[i], direction[i], step, pseudo[i], owlqn)
        v1 = _trial(w[i + 1], direction[i + 1], step, pseudo[i + 1], owlqn)
        v2 = _trial(w[i + 2], direction[i + 2], step, pseudo[i + 2], owlqn)
        v3 = _trial(w[i + 3], direction[i + 3], step, pseudo[i + 3], owlqn)
        w_new[i] = v0
        w_new[i + 1] = v1
        w_new[i + 2] = v2
        w_new[i + 3] = v3
        a0 += abs(v0)
        a1 += abs(v1)
        a2 += abs(v2)
        a3 += abs(v3)
        t0 += pseudo[i] * (v0 - w[i])
        t1 += pseudo[i + 1] * (v1 - w[i + 1])
        t2 += pseudo[i + 2] * (v2 - w[i + 2])
        t3 += pseudo[i + 3] * (v3 - w[i + 3])
    for i in range(m, n):
        v = _trial(w[i], direction[i], step, pseudo[i], owlqn)
        w_new[i] = v
        a0 += abs(v)
        t0 += pseudo[i] * (v - w[i])
    return (a0 + a1) + (a2 + a3), (t0 + t1) + (t2 + t3)


@compiled()
def curvature_pair(w_new, w, grad_new, grad, s, y):
    """``s = w_new - w`` and ``y = grad_new - grad``; return ``(s @ y, y @ y)``."""
    n = w.shape[0]
    m = n - n % 4
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    for i in range(0, m, 4):
        s0 = w_new[i] - w[i]
        s1 = w_new[i + 1] - w[i + 1]
        s2 = w_new[i + 2] - w[i + 2]
        s3 = w_new[i + 3] - w[i + 3]
        y0 = grad_new[i] - grad[i]
        y1 = grad_new[i + 1] - grad[i + 1]
        y2 = grad_new[i + 2] - grad[i + 2]
        y3 = grad_new[i + 3] - grad[i + 3]
        s[i] = s0
        s[i + 1] = s1
        s[i + 2] = s2
        s[i + 3] = s3
        y[i] = y0
        y[i + 1] = y1
        y[i + 2] = y2
        y[i + 3] = y3
        a0 += s0 * y0
        a1 += s1 * y1
        a2 += s2 * y2
        a3 += s3 * y3
        b0 += y0 * y0
        b1 += y1 * y1
        b2 += y2 * y2
        b3 += y3 * y3
    for i in range(m, n):
        s[i] = w_new[i] - w[i]
        y[i] = grad_new[i] - grad[i]
        a0 += s[i] * y[i]
        b0 += y[i] * y[i]
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@compiled()
def l1_norm(w):
    """``||w||_1``, in four running sums."""
    n = w.shape[0]
    m = n - n % 4
    a0 = a1 = a2 = a3 = 0.0
    for i in range(0, m, 4):
        a0 += abs(w[i])
        a1 += abs(w[i + 1])
        a2 += abs(w[i + 2])
        a3 += abs(w[i + 3])
    for i in range(m, n):
        a0 += abs(w[i])
    return (a0 + a1) + (a2 + a3)
