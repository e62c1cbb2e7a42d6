"""What every fitted CRF estimator holds, and the rules it must follow, checked at load.

Declared apart from :class:`~skcrf._estimators.base.CRFEstimator` (as
:mod:`.chain_state` and :mod:`.semimarkov_state` are for their estimators):
the declaration is data, the estimator is behaviour.
"""

import numpy as np

from .._utils.parallel import effective_n_threads
from ..features._vectors import vector_names
from ..features.vectorizer import SequenceVectorizer
from . import online as _online
from .columns import check_feature_columns
from .fitted_state import (Array, Fitted, FittedState, IfPresent, Integer, Labels, Names, RealList,
                           TypeOf)


def _vectorizer_makes_the_features(model):
    """A model's own vectorizer makes its ``n_features_in_`` features, named alike."""
    vectorizer = model.vectorizer_
    if vectorizer is not None and vectorizer.feature_names_ + vector_names(
            getattr(vectorizer, "vector_widths_", {})) != model.feature_names_.tolist():
        raise ValueError(
            f"vectorizer_ makes {len(vectorizer.feature_names_)} features, which are not "
            f"the {model.n_features_in_} of feature_names_")


def _solver_state_is_usable(model):
    """An online solver's ``solver_state_`` fits the model (partial_fit's kernels trust it)."""
    state = vars(model).get("solver_state_")
    if state is not None:
        _online.checked_solver_state(model, state)


def forbidden_where_not_allowed(model, attribute="transition_coef_"):
    """``attribute`` is ``-inf`` exactly where ``allowed_transitions_`` is False."""
    allowed = model.allowed_transitions_
    transitions = getattr(model, attribute)
    forbidden = np.isneginf(transitions)
    if not np.array_equal(forbidden, ~allowed):
        a, b = (int(i) for i in np.argwhere(forbidden == allowed)[0])
        raise ValueError(
            f"{attribute}[{a}, {b}] is {float(transitions[a, b])!r}, but "
            f"allowed_transitions_[{a}, {b}] is {bool(allowed[a, b])}: a transition is "
            f"-inf exactly where it is not allowed")


def _check_crf_params(model):
    """scikit-learn's parameter checks, and an ``n_jobs`` the kernels can run with (not 0)."""
    model._validate_params()
    effective_n_threads(model.n_jobs)


#: The fitted attributes every CRF estimator has; an estimator declares its own
#: by extending it (see :mod:`skcrf._estimators.fitted_state`). ``classes_`` and
#: ``n_features_in_`` come first: they set the sizes the weights must have.
ESTIMATOR_STATE = FittedState(
    {"classes_": Labels("n_classes", min_size=2),
     "n_features_in_": Integer(),
     "feature_names_": Names("n_features"),
     "feature_columns_": IfPresent(Array(("n_features",), np.int64)),
     "n_dense_features_in_": IfPresent(Integer()),
     "vectorizer_": Fitted(SequenceVectorizer, none_ok=True),
     "n_iter_": Integer(),
     "loss_curve_": RealList(),
     "solver_state_": IfPresent(TypeOf(dict))},
    rules=[check_feature_columns, _vectorizer_makes_the_features,
           _solver_state_is_usable],
    check_params=_check_crf_params)
