"""The estimators' side of the online solvers: their options, ``fit``, ``partial_fit``.

:class:`~skcrf._estimators.base.CRFEstimator` calls :func:`fit_online` from ``fit`` when
``solver`` is an online one, and :func:`partial_fit` from ``partial_fit``. The
solver's state is the fitted attribute ``solver_state_`` (plain values and
arrays, so that a model file holds it): ``partial_fit`` continues from it,
with the (feature, label) pairs a new batch brings added to the layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from .._utils.parallel import kernel_exceptions, kernel_threads
from .queries import given_label_ids
from .training import TrainingData, _is_fitted_attribute, _same_values
from .._utils.type_aliases import FeatureSequences, LabelSequences, SequenceWeights
from .partial_labels import (FREE, FULL, PartialLabels, encode_partial_labels,
                             holds_partial_labels)
from .._utils.validation import (check_finite_features, check_label_type, check_labels,
                          check_sequences, encode_labels)
from ..features.arrays import FeatureArrays, all_feature_names, take_sequences
from ..features.sequence_matrix import SequenceMatrix
from ..features.vectorizer import SequenceVectorizer, vectorizer_with_names
from ..learning._online_dense import online_structure
from ..learning.online import (SOLVERS, Calibration, OnlineOptions, OnlineProblem,
                              OnlineState, online, visits_of_weights)
from ..structures._parameters import StatePairs
from ..structures.patterns.label_patterns import LabelPatterns, row_codes, row_lengths
from .columns import compacted, grown_columns, used_columns
from .online_state import AVERAGED_BY_DEFAULT, checked_solver_state, state_parameter_mismatch
# partial_fit leaves out the sequences of weight 0 too (dask imports it from here)
from .sample_weights import nonzero_weights

#: The ``solver`` values that train online (and offer ``partial_fit``).
ONLINE_SOLVERS = tuple(SOLVERS)


def online_options(estimator, settings=None):
    """The :class:`OnlineOptions` of an estimator's parameters (checked here).

    ``settings`` are the fit's settings beside its parameters
    (:attr:`~skcrf._estimators.training.TrainingData.settings`): their
    ``online`` entry adds options no parameter names (CRFsuite's, which
    :class:`skcrf.compat.CRF` gives). None: none.
    """
    solver = estimator.solver
    average = estimator.average
    if isinstance(average, str):  # "auto"
        average = solver in AVERAGED_BY_DEFAULT
    average = int(average)  # True: from the first step; False: 0, none
    eta0 = estimator.eta0
    if solver == "sgd" and estimator.learning_rate == "optimal" and estimator.alpha == 0:
        raise ValueError(
            "solver='sgd' with learning_rate='optimal' needs alpha > 0 (its step sizes "
            "are 1 / (alpha / n_sequences * (t0 + t))); use learning_rate='constant' with "
            "a given eta0 for an unregularized fit.")
    if solver == "sgd" and estimator.learning_rate == "constant" and isinstance(eta0, str):
        raise ValueError("learning_rate='constant' needs a given eta0 (a float > 0); "
                         "eta0='auto' calibrates the 'optimal' schedule only.")
    # CRFsuite's settings that skcrf's parameters do not name (skcrf.compat gives them)
    extra = dict((settings or {}).get("online", {}))
    calibration = Calibration(**extra.pop("calibration", {}))
    return OnlineOptions(
        solver=solver, alpha=float(estimator.alpha), l1_ratio=float(estimator.l1_ratio),
        learning_rate=estimator.learning_rate,
        eta0=None if isinstance(eta0, str) else float(eta0), average=average,
        C=float(estimator.C), max_iter=int(estimator.max_iter), tol=float(estimator.tol),
        n_iter_no_change=int(estimator.n_iter_no_change), shuffle=bool(estimator.shuffle),
        rng=check_random_state(estimator.random_state), verbose=int(estimator.verbose),
        calibration=calibration, **extra)


def _check_eta0(options, total_weight):
    """Raise if a given ``eta0`` would decay the weights past zero in one SGD step."""
    if options.solver != "sgd" or options.eta0 is None:
        return
    decay = options.eta0 * options.l2 / total_weight
    if decay >= 1.0:
        raise ValueError(
            f"eta0={options.eta0:g} is too large for alpha={options.alpha:g}: one step would "
            f"shrink the weights by eta0 * alpha * (1 - l1_ratio) / n = {decay:.3g} >= 1 "
            f"of themselves (n: the summed sample weights, {total_weight:g}). Use a "
            f"smaller eta0, or eta0='auto' to calibrate it.")


def _validation_split(estimator, options, n_sequences):
    """Sequence ids held out for early stopping (at least one, at most all but one)."""
    if n_sequences < 2:
        raise ValueError("early_stopping needs at least 2 training sequences: one to "
                         "train on and one to validate on.")
    n_held = int(round(estimator.validation_fraction * n_sequences))
    n_held = min(max(n_held, 1), n_sequences - 1)
    return np.sort(options.rng.permutation(n_sequences)[:n_held])


def _check_targets(structure, features, offsets, targets):
    """Raise, naming the sequence, if the structure refuses the training targets.

    The gold statistics check them (a segment longer than its label allows,
    a forbidden transition): the online route reads them per sequence
    without that check.
    """
    structure.gold_statistics(features, offsets, targets)


def _check_partial_targets(structure, data, targets, weights):
    """:func:`_check_targets` of the fully labelled sequences; the allowed labels or None.

    With partial labels, a sequence every token of which is unknown gets
    weight 0 in ``weights`` (it tells nothing), and one whose allowed
    labels admit no labelling raises, naming it.
    """
    partial = getattr(data, "partial", None)
    if partial is None:
        _check_targets(structure, data.features, data.offsets, targets)
        return None
    full = np.flatnonzero(partial.kinds == FULL)
    features, offsets, rows = take_sequences(data.features, data.offsets, full)
    _check_targets(structure, features, offsets, targets[rows])
    weights[partial.kinds == FREE] = 0.0
    check_feasible_labels(structure, data.features, data.offsets, partial)
    return partial.allowed


def check_feasible_labels(structure, features, offsets, partial):
    """Raise, naming the first sequence whose allowed labels admit no labelling."""
    from ..learning.partial import masked_structure
    from .partial_labels import CONSTRAINED

    ids = np.flatnonzero(partial.kinds == CONSTRAINED)
    if not ids.shape[0]:
        return
    part, part_offsets, rows = take_sequences(features, offsets, ids)
    masked = masked_structure(structure, np.where(partial.allowed[rows], 0.0, -np.inf))
    log_z, _ = masked.expected_rows(part, part_offsets, np.zeros(structure.n_parameters))
    infeasible = np.flatnonzero(np.isneginf(log_z))
    if infeasible.shape[0]:
        raise ValueError(
            f"The labels of sequence {ids[infeasible[0]]} admit no labelling: no sequence "
            f"of its allowed labels keeps to the allowed transitions (first and last "
            f"labels included); {infeasible.shape[0]} such sequence(s). Widen its label "
            f"sets or fix its labels.")


def fit_online(estimator, problem, data, w0, sample_weight):
    """``(SolverResult, solver_state_)`` of a ``fit`` with an online solver."""
    # a structure the online solvers cannot step through (link or segment features)
    # refuses here, before calibration and the kernels' compilation
    structure = online_structure(problem.structure)
    structure.pair_blocks()
    options = online_options(estimator, data.settings)
    n_sequences = data.offsets.shape[0] - 1
    weights = np.ones(n_sequences) if sample_weight is None else np.array(sample_weight)
    targets = problem.targets
    allowed = _check_partial_targets(structure, data, targets, weights)
    validation = None
    if estimator.early_stopping:
        held = _validation_split(estimator, options, n_sequences)
        weights[held] = 0.0
        features, offsets, rows = take_sequences(data.features, data.offsets, held)
        validation = OnlineProblem(structure, features, offsets, targets[rows],
                                   None if allowed is None else allowed[rows])
    visits = visits_of_weights(weights)
    _check_eta0(options, float(visits[1].sum()))
    state = OnlineState.start(options, w0)
    training = OnlineProblem(structure, data.features, data.offsets, targets, allowed)
    with kernel_threads(estimator.n_jobs, hold_blas=True), \
            np.errstate(over="ignore", invalid="ignore"):
        result = online(training, state, options, visits=visits, validation=validation)
    return result, state_attribute(state, structure, options)


def state_attribute(state, structure, options):
    """The fitted attribute ``solver_state_``: the state, the layout's pairs and patterns.

    ``average`` (the first averaged step, 0 for none) ties ``average_sum`` to
    the parameter that made it: ``partial_fit`` refuses another.
    """
    attribute = state.as_dict()
    attribute["average"] = int(options.average)
    # the weights end with a dense block's (n_classes, n_dense), read as a block:
    # the pairs cover the sparse features only, and a later batch's block is read so
    n_dense = getattr(getattr(structure, "structure", None), "n_dense", 0)
    if n_dense:
        attribute["n_dense"] = int(n_dense)
    patterns = getattr(structure, "patterns", None)
    if patterns is not None:
        # the label patterns the weights' "patterns" block is laid out by: a later
        # batch's are added to them (the fitted label_patterns_ keep only the nonzero)
        attribute["label_patterns"] = patterns.rows
    attribute["pairs"] = {name: {"feature_ptr": pairs.feature_ptr, "labels": pairs.labels,
                                 "n_labels": int(pairs.n_labels)}
                          for name, pairs in structure.pair_blocks().items()}
    return attribute


def _stored_pairs(attribute):
    return {name: StatePairs(pairs["feature_ptr"], pairs["labels"], int(pairs["n_labels"]))
            for name, pairs in attribute["pairs"].items()}


def _pattern_union(attribute, patterns):
    """The stored label patterns and ``patterns`` together, and where the stored ones went."""
    rows = attribute.get("label_patterns")
    if rows is None:
        raise ValueError(
            "partial_fit cannot continue this model: its solver_state_ was saved without "
            "its label patterns (an older skcrf), so a batch's patterns cannot be added "
            "to them. Fit the model anew.")
    rows = np.asarray(rows, dtype=np.int64)
    stored, _ = LabelPatterns.from_rows(rows, patterns.n_classes, patterns.order)
    union = LabelPatterns(patterns.n_classes, patterns.order,
                          {k: np.union1d(stored.codes[k], patterns.codes[k])
                           for k in patterns.lengths})
    return union, union.index_of(row_lengths(rows), row_codes(rows, patterns.n_classes))


def _grown(structure, attribute, options):
    """The batch's structure with the stored pairs added, and the stored state moved into it."""
    state = OnlineState.from_dict(attribute)
    stored = _stored_pairs(attribute)
    batch = structure.pair_blocks()
    if set(stored) != set(batch):
        raise ValueError(
            "partial_fit cannot continue this model: its weights have the blocks "
            f"{sorted(stored)} but these parameters make {sorted(batch)}; the parameters "
            "that shape the model (order, transition_features, ...) must stay as they were "
            "at the first call.")
    union, moved, stored_sizes = {}, {}, {}
    for name in batch:
        union[name], moved[name], _ = stored[name].union(batch[name])
        stored_sizes[name] = stored[name].n_pairs
    patterns = getattr(structure, "patterns", None)
    if patterns is not None:
        # the label patterns of every batch so far: a later batch adds its own
        structure.patterns, moved["patterns"] = _pattern_union(attribute, patterns)
        stored_sizes["patterns"] = moved["patterns"].shape[0]
    grown = structure.with_pairs(union)
    layout = grown.layout
    # the stored layout: the same blocks in the same order, the pair blocks smaller
    sizes = [stored_sizes[name] if name in moved
             else layout.slices[name].stop - layout.slices[name].start
             for name in layout.shapes]
    if sum(sizes) != state.n_parameters:
        raise ValueError(
            "partial_fit cannot continue this model: its solver state holds "
            f"{state.n_parameters} weights, but its blocks make {sum(sizes)}; the parameters "
            "that shape the model must stay as they were at the first call.")
    positions = np.empty(state.n_parameters, dtype=np.int64)
    start = 0
    for name, size in zip(layout.shapes, sizes):
        target = layout.slices[name]
        positions[start:start + size] = (target.start + moved[name] if name in moved
                                         else np.arange(target.start, target.stop))
        start += size
    return grown, state.grown(positions, layout.n_parameters, options.variance)


def _listed_classes(classes):
    """partial_fit's ``classes`` as a list of hashable labels, or a ValueError saying why not."""
    if isinstance(classes, (str, bytes)) or not np.iterable(classes):
        raise ValueError(f"classes must be a list of labels; got {classes!r:.80}.")
    classes = list(classes)  # a generator too
    for i, label in enumerate(classes):
        try:
            hash(label)
        except TypeError:
            raise ValueError(f"classes[{i}] is {label!r:.60}, which cannot be a label (a "
                             f"label is a str, an int or another hashable value).") from None
    if not classes:
        raise ValueError("classes is empty: the first call to partial_fit needs every "
                         "label the training data may bring (at least two).")
    return classes


def _check_same_columns(estimator, X):
    """Raise if a later batch's SequenceMatrix names its columns otherwise than the model.

    Of the same width, its columns would otherwise be taken as the model's
    whatever they mean (and the model would save, then not load).
    """
    names = X.feature_names
    dicts = estimator.vectorizer_ is not None
    if names is None:
        if dicts:
            raise ValueError(
                f"X is a SequenceMatrix without feature names, but this "
                f"{type(estimator).__name__} was fitted on feature dicts: its columns "
                f"cannot be matched to the model's features. Pass feature dicts, or a "
                f"SequenceMatrix of the model's vectorizer_ (vectorizer_.transform).")
        return
    known = estimator.feature_names_
    if names.shape != known.shape or not np.array_equal(names, known):
        differ = np.flatnonzero(np.asarray(names) != np.asarray(known))
        at = int(differ[0]) if differ.size else 0
        raise ValueError(
            f"X's columns are not the model's features: column {at} is "
            f"{str(names[at])!r:.60}, the model's feature {at} is {str(known[at])!r:.60}. "
            + ("Pass feature dicts (a batch may bring new names), or a SequenceMatrix of "
               "the model's vectorizer_." if dicts else
               "A later batch's SequenceMatrix must have the first one's columns."))


def _batch_data(estimator, X, y, classes, first):
    """A batch's :class:`TrainingData`, in the model's vocabulary (grown) and classes."""
    X = check_sequences(X)
    if len(X) == 0:
        raise ValueError("X is empty: partial_fit needs at least one sequence.")
    vectorizer = None if first else estimator.vectorizer_
    columns = width = None
    if isinstance(X, SequenceMatrix):
        X._check_consistency()
        if not first and X.n_features + X.n_dense != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.n_features + X.n_dense} features ({X.n_dense} of them dense), "
                f"but {type(estimator).__name__} was fitted "
                f"with {estimator.n_features_in_}: a SequenceMatrix keeps its width from one "
                f"partial_fit to the next (SequenceHasher makes a fixed width of any "
                f"vocabulary).")
        if not first:
            _check_same_columns(estimator, X)
        columns = (used_columns(X) if first
                   else estimator.__dict__.get("feature_columns_"))
        if columns is not None:
            # a wide nameless stream keeps the columns that occur; a later batch's
            # new ones are appended, as new feature names are
            width = X.n_features
            if not first:
                columns = grown_columns(X, columns)
            X = compacted(X, columns)
        matrix = X
    elif first:
        vectorizer = SequenceVectorizer()
        matrix = vectorizer.fit_transform(X)
    else:
        if vectorizer is None:
            raise TypeError(
                f"This {type(estimator).__name__} was fitted on a SequenceMatrix; pass one "
                f"to partial_fit too (or fit on feature dicts).")
        with kernel_exceptions():
            batch = SequenceVectorizer(sort=False, separator=vectorizer.separator,
                                       dtype=vectorizer.dtype).fit_transform(X)
        known = vectorizer.vocabulary_
        new = [name for name in batch.feature_names.tolist() if name not in known]
        if new:
            # new names take new columns: the weights of the old ones stay in place
            vectorizer = vectorizer_with_names(list(vectorizer.feature_names_) + new,
                                               separator=vectorizer.separator,
                                               dtype=vectorizer.dtype)
        matrix = vectorizer.transform(batch)
    if matrix.offsets[-1] == 0:
        raise ValueError("X has no tokens: every sequence is empty.")
    check_finite_features(matrix)
    if first:
        if classes is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every label "
                "the training data may bring (a later batch may not bring another).")
        classes = _listed_classes(classes)
        all_classes, _ = encode_labels([classes], [len(classes)])
    else:
        all_classes = estimator.classes_
        if classes is not None:
            extra = set(_listed_classes(classes)) - set(all_classes.tolist())
            if extra:
                raise ValueError(
                    f"classes brings {', '.join(sorted(map(repr, extra))[:3])}, which the "
                    f"first call to partial_fit did not: the labels are fixed by the first "
                    f"call (classes_ = {all_classes.tolist()[:10]!r}).")
    if all_classes.shape[0] < 2:
        raise ValueError(
            f"classes holds a single label ({all_classes[0]!r}); a CRF needs at least two.")
    partial = None
    if holds_partial_labels(y):
        refusal = estimator._partial_labels_refusal()
        if refusal is not None:
            raise ValueError(f"y holds unknown (None) or ambiguous (set) labels, which "
                             f"partial_fit cannot train on {refusal}.")
        partial = partial_labels_in(encode_partial_labels(y, matrix.lengths), all_classes)
        label_ids = partial.label_ids
    else:
        labels = check_labels(y, matrix.lengths)
        check_label_type(labels, all_classes)
        label_ids = given_label_ids(labels, matrix.offsets, all_classes)
    names = all_feature_names(matrix)
    if names is None and not first and columns is None:
        # the model's own "x0", "x1", ...: a hashed stream's million names, made once
        names = estimator.feature_names_
    # a later batch reads the block as the first did: a state saved before the
    # online solvers read dense blocks holds the dense values' weights as pairs
    keep_dense = (estimator._reads_dense_block(True)
                  if first else bool(estimator.solver_state_.get("n_dense", 0)))
    data = TrainingData(FeatureArrays.of_sequences(matrix, keep_dense), matrix.offsets,
                        all_classes, label_ids, names, vectorizer)
    data.n_dense = matrix.n_dense
    data.partial = partial
    data.columns, data.input_width = columns, width
    return data


def partial_labels_in(partial, classes):
    """``partial`` (:class:`PartialLabels`) over the model's ``classes`` (a superset)."""
    extra = [label for label in partial.classes.tolist()
             if label not in set(classes.tolist())]
    if extra:
        raise ValueError(f"y brings {', '.join(map(repr, extra[:3]))} (alone or in a set), "
                         f"which is not a label of the model: classes_ are "
                         f"{classes.tolist()[:10]!r}.")
    column = np.searchsorted(classes, partial.classes)
    allowed = np.zeros((partial.allowed.shape[0], classes.shape[0]), dtype=bool)
    allowed[:, column] = partial.allowed
    unknown = partial.allowed.all(axis=1) & (partial.label_ids < 0)
    allowed[unknown] = True  # any class of the model, not only those this batch names
    label_ids = np.where(partial.label_ids >= 0, column[partial.label_ids], -1)
    return PartialLabels(classes, label_ids, allowed, partial.kinds)


def partial_fit(estimator, X, y, classes, sample_weight):
    """The body of ``partial_fit``: one epoch over the batch, from the stored state.

    Builds the new model aside and swaps it in at the end, as ``fit`` does: a
    batch that fails leaves the model as it was.
    """
    if estimator.solver not in ONLINE_SOLVERS:
        raise ValueError(
            f"partial_fit needs an online solver; solver={estimator.solver!r} trains on "
            f"all the data at once. Use solver='sgd', 'perceptron', 'passive_aggressive' "
            f"or 'arow' (or fit).")
    attribute = estimator.__dict__.get("solver_state_")
    first = attribute is None
    if first and "classes_" in estimator.__dict__:
        # a model fitted by L-BFGS: starting the online state from zero would discard it
        raise ValueError(
            f"This {type(estimator).__name__} was fitted with a batch solver and has no "
            f"solver_state_ for partial_fit to continue: a first partial_fit would start "
            f"from zero weights and discard the fitted model. Fit it with solver="
            f"{estimator.solver!r} (warm_start=True starts from its weights), then call "
            f"partial_fit; or call partial_fit on an unfitted clone to start anew.")
    if not first:
        checked_solver_state(estimator, attribute, parameters=False)
    if not first and attribute["solver"] != estimator.solver:
        raise ValueError(
            f"This model was trained with solver={attribute['solver']!r}; partial_fit "
            f"continues with it. Set solver={attribute['solver']!r}, or fit anew.")
    mismatch = None if first else state_parameter_mismatch(estimator, attribute)
    if mismatch:
        raise ValueError(mismatch)
    shadow = object.__new__(type(estimator))
    shadow.__dict__.update(vars(estimator) if not first else (
        (name, value) for name, value in vars(estimator).items()
        if not _is_fitted_attribute(name)))
    with kernel_exceptions():
        _partial_fit(shadow, X, y, classes, sample_weight, attribute)
    estimator.__dict__ = shadow.__dict__
    return estimator


def _partial_fit(estimator, X, y, classes, sample_weight, attribute):
    first = attribute is None
    options = online_options(estimator)
    X, y, weights = nonzero_weights(X, y, sample_weight)
    data = _batch_data(estimator, X, y, classes, first)
    data.sequence_weights = weights
    problem = estimator._partial_training_problem(data, first)
    structure = problem.structure = online_structure(problem.structure)
    structure.pair_blocks()  # link or segment features refuse here, before any kernel
    if first:
        state = OnlineState.start(options, np.zeros(structure.n_parameters))
    else:
        structure, state = _grown(structure, attribute, options)
        problem.structure = structure
    n_sequences = data.offsets.shape[0] - 1
    weights = np.ones(n_sequences) if weights is None else np.array(weights)
    allowed = _check_partial_targets(structure, data, problem.targets, weights)
    visits = visits_of_weights(weights)
    _check_eta0(options, float(visits[1].sum()))
    batch = OnlineProblem(structure, data.features, data.offsets, problem.targets, allowed)
    with kernel_threads(estimator.n_jobs, hold_blas=True), \
            np.errstate(over="ignore", invalid="ignore"):
        result = online(batch, state, options, visits=visits, n_epochs=1)
    estimator._check_training(result, data)
    for name, value in problem.fitted_attributes(result.w).items():
        setattr(estimator, name, value)
    loss_curve = [] if first else list(estimator.loss_curve_)
    estimator._store_training(data, result)
    estimator.loss_curve_ = loss_curve + result.loss_curve
    estimator.solver_state_ = state_attribute(state, structure, options)


#: The online solvers' parameters and their defaults (older pickles lack them).
ONLINE_DEFAULTS = {"learning_rate": "optimal", "eta0": "auto", "average": "auto", "C": 1.0,
                   "shuffle": True, "random_state": None, "n_iter_no_change": 5,
                   "early_stopping": False, "validation_fraction": 0.1}


class OnlineTraining:
    """What the online solvers add to every CRF estimator: ``partial_fit`` and its hook."""

    def __setstate__(self, state):
        # models pickled before the online solvers lack their parameters
        names = self._get_param_names()
        for name, default in ONLINE_DEFAULTS.items():
            if name in names:
                state.setdefault(name, default)
        super().__setstate__(state)

    def partial_fit(self, X: FeatureSequences, y: LabelSequences, classes: Any = None,
                    sample_weight: SequenceWeights = None) -> OnlineTraining:
        """One epoch of the online solver over a batch, continuing from the last call.

        The first call fixes the labels (``classes``) and starts the solver;
        each later call takes one pass over its batch from where the previous
        one stopped (the step count, the averages, the penalties, the
        learning rate: ``solver_state_``). With feature dicts a batch may
        bring new feature names, whose weights start at zero, and every batch
        may bring new (feature, label) pairs; a :class:`SequenceMatrix` keeps
        its width and its columns' names (:class:`SequenceHasher` gives a
        stream of any vocabulary a fixed width). A later order-2 batch adds
        its label patterns to the earlier ones.

        The parameters that sized ``solver_state_`` stay as at the first
        call: another ``average``, or an L1 penalty turned on or off, is
        refused (the state cannot be made up for the steps already taken).
        A model fitted by L-BFGS has no such state: ``partial_fit`` refuses
        it rather than start from zero weights.

        The penalty ``alpha`` counts once per call, as for a training set of
        the batch alone: over ``k`` batches of equal size, ``alpha / k`` trains
        as ``fit`` on their concatenation with ``alpha``. With
        ``shuffle=False``, a given ``eta0`` (or a solver other than SGD) and
        a layout that does not depend on the data (a SequenceMatrix with
        ``all_possible_states=True``), calls over batches give bit for bit
        the weights of ``fit(max_iter=1)`` on their concatenation.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        y : list of sequences of labels
            As in ``fit``: with :class:`~skcrf.CRFClassifier`, a token's
            label may be None (unknown) or a set of labels.
        classes : array-like, default=None
            Every label the data may bring; required at the first call, where
            it fixes ``classes_`` (a later batch may not bring another).
        sample_weight : array-like of shape (n_sequences,), default=None
            Each sequence's weight, as in ``fit``.

        Returns
        -------
        self : estimator
            The updated estimator.
        """
        self._validate_params()
        return partial_fit(self, X, y, classes, sample_weight)

    def _partial_training_problem(self, data, first):
        """The :class:`TrainingProblem` of a ``partial_fit`` batch, in the model's classes.

        ``data.classes`` are the model's (fixed by the first call); ``first``
        says whether this is the first call. By default the problem of
        :meth:`_training_problem`, which must keep those classes.
        """
        problem = self._training_problem(data)
        if not _same_values(problem.attributes["classes_"], data.classes):
            raise ValueError(
                "partial_fit: this batch's tags were repaired into another set of labels "
                "(see the warning); give the tags well-formed, or drop allowed_transitions.")
        return problem
