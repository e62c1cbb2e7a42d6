"""One unpenalized SGD step of the online solver, checked against a partial-label objective.

The chain, semi-Markov and tree tests of online training on partial labels
share it: without a penalty the step from ``w0`` is ``-eta`` times the
gradient of ``log Z - log Z_allowed`` of the one sequence visited.
"""

import numpy as np
import pytest

from skcrf.learning import _online_kernels as kernels
from skcrf.learning.online import OnlineOptions, OnlineState


def one_sgd_step(problem, q, w0):
    """The state after one SGD step (no penalty, ``eta0=0.05``) on sequence ``q`` from ``w0``."""
    options = OnlineOptions(solver="sgd", alpha=0.0, eta0=0.05, average=0,
                            rng=np.random.RandomState(0))
    state = OnlineState.start(options, w0)
    problem.run(state, options.settings(1.0, 0.05), np.array([q]), np.array([1.0]),
                problem.scratch())
    return state


def assert_step_along_gradient(state, w0, loss, grad):
    """The step's loss is ``loss`` and the step is a positive multiple of ``-grad``."""
    assert state.counters[kernels.LOSS] == pytest.approx(loss, rel=1e-10)
    step = w0 - state.counters[kernels.SCALE] * state.w
    eta = (step @ grad) / (grad @ grad)
    assert eta > 0
    np.testing.assert_allclose(step, eta * grad, rtol=1e-9, atol=1e-12)
