"""Settings of one fit that no estimator parameter names: :func:`training_settings`.

:class:`skcrf.compat.CRF` trains its :class:`~skcrf.CRFClassifier` as CRFsuite
does, with a few settings CRFClassifier's own parameters do not have (a chain
without start and end weights, CRFsuite's options of its online trainers).
They are arguments of that one fit, not state of the estimator: they live in a
context variable while ``fit`` runs, so that nothing is set on the estimator
before the fit and removed after, nothing of them reaches its fitted state or
its model file, and a fit in another thread does not see them.
"""

from contextlib import contextmanager
from contextvars import ContextVar

_SETTINGS = ContextVar("skcrf_training_settings", default={})


@contextmanager
def training_settings(**settings):
    """Run the fits inside the ``with`` block with these settings.

    Parameters
    ----------
    boundary_weights : bool, optional
        False trains an order-1 chain without start and end weights (they stay 0).
    online : dict, optional
        Extra fields of the online solvers' options (``OnlineOptions``).
    """
    token = _SETTINGS.set(dict(settings))
    try:
        yield
    finally:
        _SETTINGS.reset(token)


def training_setting(name, default):
    """The setting ``name`` of the fit under way, or ``default``."""
    return _SETTINGS.get().get(name, default)
