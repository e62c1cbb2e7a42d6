"""Docstring sections the estimators share (filled in by ``_utils.docstrings.fill_sections``)."""

SECTIONS = {
    # the solver's settings of the estimators that point to CRFClassifier for the details
    "solver_parameters": """\
    alpha : float, default=0.3
        Regularization strength, as in :class:`CRFClassifier`.
    l1_ratio : float, default=1/3
        Elastic-net mixing: 0 is pure L2, 1 pure L1.
    max_iter : int, default=300
        Maximum number of L-BFGS iterations. Reaching it emits a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    tol : float, default=1e-3
        Stop once the objective improved by less than ``tol`` (relative) over
        the last 10 iterations.
    solver : {"lbfgs", "sgd", "perceptron", "passive_aggressive", "arow"}, default="lbfgs"
        L-BFGS (OWL-QN with ``l1_ratio > 0``) over all the data, or an online
        solver, one step per sequence, with :meth:`partial_fit` (see
        :class:`CRFClassifier`'s ``solver``).
    learning_rate, eta0, average, C, shuffle, random_state, n_iter_no_change, \
early_stopping, validation_fraction
        The online solvers' settings, as in :class:`CRFClassifier`.
""",
    "feature_attributes": """\
    n_features_in_ : int
        Number of token features (columns of ``X``).
    feature_names_ : ndarray of str of shape (n_features,)
        Name of every feature (column of ``coef_``).
    feature_columns_ : ndarray of int64 of shape (n_features,)
        Only for a wide ``X`` without feature names (such as
        :class:`SequenceHasher`'s) of which at least 65,536 columns never
        occur in training: the column of ``X`` of each column of ``coef_``.
        The model keeps the columns the training data holds (``x<j>`` in
        ``feature_names_``), so its size follows the data, not the width; a
        column it lacks adds 0 to every score. Otherwise ``coef_`` has a
        column per column of ``X``.
    vectorizer_ : SequenceVectorizer or None
        The vectorizer fitted on dict input; None when ``fit`` received a
        :class:`SequenceMatrix`.
""",
    "solver_attributes": """\
    n_iter_ : int
        Number of solver iterations (epochs for an online solver; 1 after
        :meth:`partial_fit`).
    loss_curve_ : list of float
        Objective value after each iteration (an online solver's loss of
        each epoch, every :meth:`partial_fit` call's appended).
    solver_state_ : dict
        Only with an online solver: what :meth:`partial_fit` continues from
        (the weights as the solver holds them, the step count, averages,
        penalties, the learning rate and the layout of the weights).
""",
}
