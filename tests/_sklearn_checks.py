"""The scikit-learn checks of an estimator's parameters that every transformer's tests run."""

from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_cloneable,
    check_estimator_repr,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

#: Each is called as ``check(name, estimator)`` on an unfitted instance.
PARAMETER_CHECKS = [
    check_estimator_cloneable, check_estimator_repr, check_no_attributes_set_in_init,
    check_parameters_default_constructible, check_get_params_invariance, check_set_params,
    check_do_not_raise_errors_in_init_or_set_params,
]
