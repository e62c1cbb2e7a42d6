"""sklearn-crfsuite's CRF class, trained and applied by skcrf."""

import math
import numbers
import warnings
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import metadata_routing
from sklearn.utils.validation import check_is_fitted

from .._chain import CRFClassifier
from .._utils.tags import sequence_tags
from .._estimators.fitted_state import Fitted, FittedState, Integer, TypeOf, saved_as
from .._estimators.queries import plain_dict_features
from ..features.vectorizer import SequenceVectorizer
from ..metrics import flat_accuracy_score

#: Each CRFsuite trainer's options (sklearn-crfsuite's names), and skcrf's solver for it.
_ALGORITHM_OPTIONS = {
    "lbfgs": ("c1", "c2", "max_iterations", "num_memories", "epsilon", "period", "delta",
              "linesearch", "max_linesearch"),
    "l2sgd": ("c2", "max_iterations", "period", "delta", "calibration_eta",
              "calibration_rate", "calibration_samples", "calibration_candidates",
              "calibration_max_trials"),
    "ap": ("max_iterations", "epsilon"),
    "pa": ("pa_type", "c", "error_sensitive", "averaging", "max_iterations", "epsilon"),
    "arow": ("variance", "gamma", "max_iterations", "epsilon"),
}
_SOLVERS = {"lbfgs": "lbfgs", "l2sgd": "sgd", "ap": "perceptron", "pa": "passive_aggressive",
            "arow": "arow"}

#: Options no CRFsuite trainer of skcrf's takes.
_UNSUPPORTED = ("trainer_cls",)

#: L-BFGS options skcrf fixes at CRFsuite's defaults: any other value is refused.
_FIXED_LBFGS = {"num_memories": 6, "epsilon": 1e-5, "period": 10, "linesearch": "MoreThuente",
                "max_linesearch": 20}

#: max_iterations=None means "until convergence" in CRFsuite's L-BFGS.
_UNLIMITED_ITERATIONS = 10_000

#: CRFsuite's default max_iterations of its online trainers.
_DEFAULT_EPOCHS = {"l2sgd": 1000, "ap": 100, "pa": 100, "arow": 100}

#: calibration_* option -> skcrf's Calibration field, with CRFsuite's defaults.
_CALIBRATION = {"calibration_eta": ("eta", 0.1), "calibration_rate": ("rate", 2.0),
                "calibration_samples": ("samples", 1000),
                "calibration_candidates": ("candidates", 10),
                "calibration_max_trials": ("max_trials", 20)}


#: Types of feature values that are never nested dicts.
_PLAIN_VALUES = frozenset({str, float, int, bool})


def _token_dict(token, q, i):
    """Token ``i`` of sequence ``q`` as a feature dict, in python-crfsuite's forms.

    A dict passes, its nested dicts flattened (``{"w": {"a": 1.0}}`` is the
    attribute ``"w:a"``); a list of attribute names weighs each 1.
    """
    if type(token) is dict and _PLAIN_VALUES.issuperset(map(type, token.values())):
        # the usual token, checked by the types of its values in one C-level pass: an
        # isinstance test per value against the Mapping ABC was a third of tagging
        # one sentence
        return token
    if isinstance(token, Mapping):
        if any(isinstance(value, Mapping) for value in token.values()):
            return _flattened(token, "", q, i)
        return token
    if isinstance(token, (list, tuple)):
        return {str(name): 1.0 for name in token}
    raise TypeError(f"Sequence {q}, token {i}: a token must be a dict of features or a list "
                    f"of attribute names; got a {type(token).__name__}.")


def _flattened(features, prefix, q, i):
    """A nested feature dict as one level: each nested key after its parents' and ``:``.

    A name given twice (``"w:a"`` and ``{"w": {"a": ...}}``) adds its values,
    as two keys of one token that make the same name do in
    :class:`~skcrf.SequenceVectorizer`.
    """
    flat = {}
    for key, value in features.items():
        name = f"{prefix}{key}"
        items = (_flattened(value, f"{name}:", q, i).items() if isinstance(value, Mapping)
                 else [(name, value)])
        for name, value in items:
            if name not in flat:
                flat[name] = value
            elif all(isinstance(v, numbers.Real) for v in (flat[name], value)):
                flat[name] += value
            else:
                raise ValueError(f"Sequence {q}, token {i}: the attribute {name!r} is given "
                                 f"twice, once nested.")
    return flat


def _sequences(X):
    return [[_token_dict(token, q, i) for i, token in enumerate(sequence)]
            for q, sequence in enumerate(X)]


def _summaries(classifier):
    """sklearn-crfsuite's views of a fitted CRFClassifier, by attribute name."""
    classes = classifier.classes_.tolist()
    names = [str(name) for name in classifier.feature_names_]
    coef = classifier.coef_
    # as CRFsuite's model, the attributes that carry a non-zero weight
    weighted = np.flatnonzero(np.any(coef != 0, axis=0))
    attributes = [names[j] for j in weighted.tolist()]
    rows, columns = np.nonzero(coef)
    n_classes = len(classes)
    n_weights = weighted.shape[0] * n_classes + n_classes * n_classes + 2 * n_classes
    return {
        "classes_": classes,
        "attributes_": attributes,
        "state_features_": {(names[j], classes[k]): float(coef[k, j])
                            for k, j in zip(rows.tolist(), columns.tolist())},
        "transition_features_": {(a, b): float(classifier.transition_coef_[i, j])
                                 for i, a in enumerate(classes)
                                 for j, b in enumerate(classes)},
        "size_": int(n_weights * coef.itemsize
                     + sum(len(name.encode("utf-8")) for name in attributes)),
    }


def _views_are_the_estimators(crf):
    """What the CRF shows (classes, weights) is what its estimator_ has; its vocabulary
    makes the estimator's features."""
    width = len(crf.vectorizer_.feature_names_)
    if width != crf.estimator_.n_features_in_:
        raise ValueError(f"vectorizer_ makes {width} features, but estimator_ was fitted on "
                         f"{crf.estimator_.n_features_in_}")
    for name, value in _summaries(crf.estimator_).items():
        if getattr(crf, name) != value:
            raise ValueError(f"{name} is not what estimator_ holds")


def _check_params(crf):
    crf._classifier()
    crf._min_freq()


@saved_as("skcrf.compat.CRF")
class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``: same arguments, attributes and methods, trained by skcrf.

    A drop-in for ``sklearn_crfsuite.CRF``: the tokens' feature dicts go
    through a :class:`~skcrf.SequenceVectorizer` (string values become
    ``"key:value"`` attributes, as in CRFsuite) into a
    :class:`~skcrf.CRFClassifier` trained by skcrf's solver of CRFsuite's
    ``algorithm``; for L-BFGS with ``alpha = c1 + 2 * c2`` and ``l1_ratio =
    c1 / alpha``, the same objective as CRFsuite's. As CRFsuite's, the
    model has no start and end weights, whatever the trainer
    (``estimator_.start_coef_`` and ``end_coef_`` stay 0), so
    :func:`skcrf.compat.save_crfsuite` writes it as a CRFsuite model file
    exactly.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"} or None, default=None
        CRFsuite's trainer, run by skcrf's solver of the same algorithm:
        ``"lbfgs"`` (None; OWL-QN with ``c1 > 0``) by L-BFGS, ``"l2sgd"`` by
        ``solver="sgd"`` (``alpha = 2 * c2``, pure L2, the learning rate
        calibrated as CRFsuite does), ``"ap"`` by the averaged
        ``"perceptron"``, ``"pa"`` by ``"passive_aggressive"`` and
        ``"arow"`` by ``"arow"`` (``C = 1 / gamma``). Each takes its own
        options below, as CRFsuite does; an option of another trainer
        raises a ValueError.
    min_freq : int or float, default=None
        Drop attributes seen in fewer than this many training tokens (a
        float counts as the next whole number: 0.5 keeps every attribute,
        2.0 those seen twice). None keeps every attribute.
    all_possible_states : bool, default=None
        Give every (attribute, label) pair a weight, not only those seen.
    all_possible_transitions : bool, default=None
        Accepted for compatibility: skcrf always learns a weight for every
        pair of labels, as CRFsuite does with True.
    c1, c2 : float, default=None
        L1 and L2 coefficients; None means CRFsuite's 0 and 1 (l2sgd: ``c2``
        only).
    max_iterations : int, default=None
        Most L-BFGS iterations (None: until convergence), or epochs of an
        online trainer (None: CRFsuite's 1000 for l2sgd, 100 for the others).
        Reaching it is silent, as in CRFsuite (:class:`~skcrf.CRFClassifier`
        warns).
    num_memories, epsilon, period, linesearch, max_linesearch : default=None
        CRFsuite's L-BFGS settings. skcrf runs with CRFsuite's defaults (6,
        1e-5, 10, "MoreThuente", 20 — a line search of its own kind); another
        value raises a ValueError. For ap, pa and arow, ``epsilon`` stops
        training once an epoch's mean loss falls below it (CRFsuite's rule;
        default 0: never); for l2sgd, ``period`` epochs in a row improving by
        less than ``delta`` stop it (``n_iter_no_change`` and ``tol``).
    delta : float, default=None
        Stop when the objective improved by less than this (relative) over
        the last ``period`` iterations; None is 1e-5 (l2sgd: 1e-6).
    calibration_eta, calibration_rate, calibration_samples, \
calibration_candidates, calibration_max_trials : default=None
        l2sgd's calibration of the learning rate: the first rate tried, the
        factor between rates, the sequences of the sample, the rates tried
        in each direction and in all (see
        ``skcrf.learning.online.Calibration``); None is CRFsuite's
        0.1, 2, 1000, 10, 20.
    pa_type : {0, 1, 2}, default=None
        pa's update: 0 without slack, 1 PA-I (None), 2 PA-II.
    c : float, default=None
        pa's aggressiveness (None: 1).
    error_sensitive : bool, default=None
        pa's margin grows with the square root of the wrong labels (None: True).
    averaging : bool, default=None
        pa averages its weights (None: True).
    variance, gamma : float, default=None
        arow's initial variance and trade-off (None: 1 and 1).
    trainer_cls : default=None
        Anything but None raises a ValueError.
    verbose : bool, default=False
        Print the objective every iteration.
    model_filename : str, default=None
        If given, the fitted model is also saved there with
        :func:`skcrf.save_model` (skcrf's format, not CRFsuite's). It is not
        part of the model: a loaded CRF has None.
    keep_tempfiles : bool, default=False
        Accepted for compatibility; skcrf writes no temporary files.

    Attributes
    ----------
    classes_ : list of str
        The labels, sorted.
    state_features_ : dict
        ``{(attribute, label): weight}`` for every nonzero state weight.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` for every pair of labels.
    attributes_ : list of str
        The attributes (feature names) that carry a non-zero weight for some
        label, as CRFsuite's model keeps them; ``estimator_.feature_names_``
        has them all.
    size_ : int
        Bytes of the weights of these attributes (one per label), of the
        transition, start and end weights, and of the attributes' names;
        CRFsuite reports its model file's size, which holds much the same.
    training_log_ : None
        CRFsuite's training log has no counterpart; see
        ``estimator_.loss_curve_``.
    estimator_ : CRFClassifier
        The fitted model doing the work.
    vectorizer_ : SequenceVectorizer
        The fitted attribute vocabulary.

    See Also
    --------
    skcrf.CRFClassifier : The estimator underneath, with skcrf's own parameters.
    """

    _fitted_state = FittedState(
        {"vectorizer_": Fitted(SequenceVectorizer), "estimator_": Fitted(CRFClassifier),
         "classes_": TypeOf(list), "attributes_": TypeOf(list),
         "state_features_": TypeOf(dict), "transition_features_": TypeOf(dict),
         "size_": Integer(), "training_log_": TypeOf(type(None))},
        rules=[_views_are_the_estimators], check_params=_check_params,
        # where fit saves a copy is no part of the model: a loaded CRF refitted
        # must not write over the file a model file names
        unsaved_params=("model_filename",))

    # X_dev and y_dev are not metadata to route: no set_fit_request
    __metadata_request__fit = {"X_dev": metadata_routing.UNUSED,
                               "y_dev": metadata_routing.UNUSED}

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    def __sklearn_tags__(self):
        # sequences of feature dicts (or attribute lists), not a 2-D array; ragged y
        return sequence_tags(super().__sklearn_tags__(), "dict", y_required=True)

    def _classifier(self):
        """The CRFClassifier these arguments describe, and the options of CRFsuite's online
        trainer that its parameters do not name; unsupported arguments raise ValueError."""
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm not in _ALGORITHM_OPTIONS:
            raise ValueError(
                f"algorithm={self.algorithm!r} is not one of CRFsuite's trainers skcrf runs: "
                f"{', '.join(map(repr, _ALGORITHM_OPTIONS))}.")
        unsupported = [name for name in _UNSUPPORTED if getattr(self, name) is not None]
        if unsupported:
            raise ValueError(f"{', '.join(unsupported)} is not supported by skcrf.")
        own = _ALGORITHM_OPTIONS[algorithm]
        other = [name for options in _ALGORITHM_OPTIONS.values() for name in options
                 if name not in own and getattr(self, name) is not None]
        if other:
            names = list(dict.fromkeys(other))
            raise ValueError(f"{', '.join(names)} "
                             f"{'is not an option' if len(names) == 1 else 'are not options'} "
                             f"of algorithm={algorithm!r} (CRFsuite refuses them too); its "
                             f"options are {', '.join(own)}.")
        if algorithm == "lbfgs":
            return self._lbfgs_classifier(), {}
        return self._online_classifier(algorithm)

    def _lbfgs_classifier(self):
        for name, default in _FIXED_LBFGS.items():
            value = getattr(self, name)
            if value is not None and value != default:
                raise ValueError(f"{name}={value!r} is not supported: skcrf's L-BFGS runs with "
                                 f"CRFsuite's default {name}={default!r}.")
        c1 = 0.0 if self.c1 is None else float(self.c1)
        c2 = 1.0 if self.c2 is None else float(self.c2)
        if c1 < 0 or c2 < 0:
            raise ValueError(f"c1 and c2 must be >= 0; got c1={c1}, c2={c2}.")
        alpha = c1 + 2.0 * c2
        return CRFClassifier(
            alpha=alpha, l1_ratio=c1 / alpha if alpha > 0 else 0.0,
            max_iter=(_UNLIMITED_ITERATIONS if self.max_iterations is None
                      else self.max_iterations),
            tol=1e-5 if self.delta is None else self.delta,
            all_possible_states=bool(self.all_possible_states),
            verbose=int(bool(self.verbose)))

    def _online_classifier(self, algorithm):
        """The CRFClassifier of an online trainer and its extra options, CRFsuite's defaults
        where None."""
        epochs = (_DEFAULT_EPOCHS[algorithm] if self.max_iterations is None
                  else int(self.max_iterations))
        params = {"solver": _SOLVERS[algorithm], "max_iter": epochs,
                  "all_possible_states": bool(self.all_possible_states),
                  "verbose": int(bool(self.verbose))}
        extra = {}
        if algorithm == "l2sgd":
            c2 = 1.0 if self.c2 is None else float(self.c2)
            if not c2 > 0:
                raise ValueError(f"l2sgd needs c2 > 0 (its learning rate is 1 / (c2 * t)); "
                                 f"got c2={c2}.")
            params.update(alpha=2.0 * c2, l1_ratio=0.0, average=False,
                          tol=1e-6 if self.delta is None else float(self.delta),
                          n_iter_no_change=10 if self.period is None else int(self.period))
            extra["calibration"] = {
                field: default if getattr(self, name) is None else getattr(self, name)
                for name, (field, default) in _CALIBRATION.items()}
        else:
            # CRFsuite's epsilon rule (mean loss below it) replaces the stall rule
            params.update(tol=0.0, n_iter_no_change=epochs, average=False)
            extra["epsilon"] = 0.0 if self.epsilon is None else float(self.epsilon)
        if algorithm == "ap":
            params["average"] = True
        elif algorithm == "pa":
            pa_type = 1 if self.pa_type is None else int(self.pa_type)
            if pa_type not in (0, 1, 2):
                raise ValueError(f"pa_type must be 0, 1 or 2; got {self.pa_type!r}.")
            params.update(C=1.0 if self.c is None else float(self.c),
                          average=True if self.averaging is None else bool(self.averaging))
            extra.update(pa_type=pa_type, error_sensitive=(
                True if self.error_sensitive is None else bool(self.error_sensitive)))
        elif algorithm == "arow":
            gamma = 1.0 if self.gamma is None else float(self.gamma)
            variance = 1.0 if self.variance is None else float(self.variance)
            if not (gamma > 0 and variance > 0):
                raise ValueError(f"arow needs gamma > 0 and variance > 0; got gamma={gamma}, "
                                 f"variance={variance}.")
            params["C"] = 1.0 / gamma
            extra["variance"] = variance
        return CRFClassifier(**params), extra

    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train on feature-dict sequences ``X`` and label sequences ``y``.

        Parameters
        ----------
        X : list of lists of dict (or of lists of attribute names)
            One feature dict per token.
        y : list of lists of str
            One label per token.
        X_dev, y_dev : default=None
            sklearn-crfsuite logs the accuracy on them during training; skcrf
            does not use them.

        Returns
        -------
        self : CRF
        """
        classifier, online = self._classifier()
        vectorizer = SequenceVectorizer(separator=":", min_freq=self._min_freq())
        # CRFsuite's chain has no start or end weights, whatever the trainer: without
        # them the model is CRFsuite's own, and skcrf.compat.save_crfsuite writes it
        # exactly. Settings of this fit, not of the fitted model (nor of its file).
        with warnings.catch_warnings():
            # CRFsuite stops at max_iterations without a word, and so does its
            # interface here; CRFClassifier itself warns
            warnings.simplefilter("ignore", ConvergenceWarning)
            classifier._fit_with_settings(vectorizer.fit_transform(_sequences(X)), y,
                                          settings={"boundary_weights": False,
                                                    "online": online})
        self.vectorizer_ = vectorizer
        self.estimator_ = classifier
        for name, value in _summaries(classifier).items():
            setattr(self, name, value)
        self.training_log_ = None
        if self.model_filename is not None:
            from .._persistence import save_model

            save_model(self, self.model_filename)
        return self

    def _min_freq(self):
        """SequenceVectorizer's ``min_freq`` (a count of tokens) for this ``min_freq``."""
        value = self.min_freq
        if value is None:
            return 1
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(value) or value < 0):
            raise ValueError(f"CRF(min_freq={value!r}): min_freq must be a number >= 0 (or "
                             f"None), the fewest training tokens an attribute is kept with.")
        return max(1, math.ceil(value))

    def _transform(self, X):
        # sklearn's check reads the estimator's tags first, a cost every one-sentence
        # predict would pay: call it only to raise its error
        if "estimator_" not in self.__dict__:
            check_is_fitted(self, "estimator_")
        # a sentence of plain dicts is what _sequences returns as it is: the
        # vectorizer checks their types once, rather than _sequences per token too
        matrix = self.vectorizer_._plain_transform(X)
        return matrix if matrix is not None else self.vectorizer_.transform(_sequences(X))

    def _plain_labels(self, X):
        """:meth:`predict`'s label arrays of a few sequences of plain dicts, or None.

        The one-sentence path (see :func:`~skcrf._estimators.queries.plain_dict_features`):
        the vectorizer's rows go to the estimator without the SequenceMatrix
        between them. None for anything else, an unfitted CRF included, which
        :meth:`_transform` then checks and words.
        """
        estimator = self.__dict__.get("estimator_")
        if (type(X) is not list or estimator is None
                # the estimator reads the vectorizer's columns as they are
                or "feature_columns_" in estimator.__dict__
                or getattr(estimator, "n_dense_features_in_", 0)
                or len(self.vectorizer_.feature_names_) != estimator.n_features_in_):
            return None
        plain = plain_dict_features(self.vectorizer_, X)
        if plain is None:
            return None
        features, offsets = plain
        model = estimator._fitted_model()
        return model._split(model.classes_[model._label_ids(features, offsets)], offsets)

    def predict(self, X):
        """Most likely labels: a list of lists of str, one per sequence."""
        labels = self._plain_labels(X)
        if labels is None:
            features = self._transform(X)  # it raises NotFittedError on an unfitted CRF
            labels = self.estimator_.predict(features)
        return [sequence.tolist() for sequence in labels]

    def predict_single(self, xseq):
        """Most likely labels of one sequence, as a list of str."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X):
        """Per sequence, per token, a dict of each label's probability."""
        features = self._transform(X)  # first: it raises NotFittedError on an unfitted CRF
        return [[dict(zip(self.classes_, row.tolist())) for row in marginals]
                for marginals in self.estimator_.predict_marginals(features)]

    def predict_marginals_single(self, xseq):
        """Per token of one sequence, a dict of each label's probability."""
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Token accuracy, as sklearn-crfsuite computes it."""
        return flat_accuracy_score(y, self.predict(X))
