"""What a fit works on: its data, its problem, and the swap that makes it atomic.

:class:`TrainingData` is the checked input, :class:`TrainingProblem` what a
structure makes of it for the solver, :func:`atomic_fit` the wrapper that
builds a model aside and swaps it in whole. Used by
:class:`~skcrf._estimators.base.CRFEstimator` and by :mod:`skcrf.dask`.
"""

import functools
import sys

import numpy as np

from .._utils.parallel import kernel_exceptions
from ..learning.objective import NegativeLogLikelihood
from ..learning.partial import PartialLabelObjective


def _user_stacklevel():
    """``stacklevel`` that makes a warning raised by the caller point at user code.

    Counts the frames of skcrf and of scikit-learn's ``_fit_context``
    wrapper (sklearn.base) between the caller and the first other frame, so
    that it stays right whatever wrappers ``fit`` has.
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("skcrf.", "sklearn.base")):
        frame = frame.f_back
        level += 1
    return level


def _is_fitted_attribute(name):
    """Whether ``name`` is a learned attribute (scikit-learn's rule: a trailing underscore)."""
    return name.endswith("_") and not name.startswith("__")


def _is_fitted_attribute_set(estimator):
    """Whether ``estimator`` holds a fitted model (a warm start's previous one)."""
    return any(_is_fitted_attribute(name) for name in vars(estimator))


def atomic_fit(fit):
    """Make ``fit`` build the new state aside and swap it in at once at its end.

    ``fit`` runs on a shadow estimator: the same class and parameters, no
    fitted attributes. Only when it returns does the shadow's state replace
    the estimator's, in one assignment of ``__dict__``. So a concurrent
    ``predict`` (which reads a snapshot of that dict, see
    :meth:`CRFEstimator._fitted_model`) sees the old model or the new one,
    never a mix, and a fit that raises (bad input, divergence, Ctrl-C, out
    of memory) leaves the previous model as it was. Attributes a previous fit
    set and this one does not (``transition2_coef_`` after ``order=2``) go.
    A Ctrl-C or MemoryError inside a kernel comes out as itself, not as the
    SystemError numba wraps it in (:func:`~skcrf._utils.parallel.kernel_exceptions`).
    """

    @functools.wraps(fit)
    def swapping_fit(self, *args, **kwargs):
        shadow = object.__new__(type(self))
        shadow.__dict__.update(
            (name, value) for name, value in vars(self).items()
            if not _is_fitted_attribute(name))
        if getattr(self, "warm_start", False) and _is_fitted_attribute_set(self):
            # the previous model, for _fit's starting point (it removes it)
            shadow._previous_model = self._fitted_model()
        with kernel_exceptions():
            fit(shadow, *args, **kwargs)
        # one reference assignment: a reader has the old dict or the new one
        self.__dict__ = shadow.__dict__
        return self

    return swapping_fit


def _same_values(a, b):
    """Whether ``a`` and ``b`` are arrays of equal shape and values (labels or names)."""
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    # as Python lists: arrays of different dtypes (str and int labels) compare unequal
    return a.shape == b.shape and a.tolist() == b.tolist()


#: The settings a fit takes beside its parameters (see :attr:`TrainingData.settings`).
FIT_SETTINGS = ("boundary_weights", "online")


def checked_settings(settings):
    """A copy of one fit's ``settings`` (None: none), refusing a name no fit reads."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(FIT_SETTINGS))
    if unknown:
        # a misspelt setting would otherwise train silently without it
        raise TypeError(f"unknown fit settings {unknown}; the settings are {list(FIT_SETTINGS)}.")
    return settings


class TrainingData:
    """A training set as the structures take it: features, offsets and label ids.

    Attributes
    ----------
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    classes : ndarray of shape (n_classes,)
    label_ids : ndarray of int64 of shape (n_tokens,)
    feature_names : ndarray of object or None
    vectorizer : SequenceVectorizer or None
        The vectorizer fitted on dict input; None for a SequenceMatrix.
    segment_feature_names : ndarray of object or None
        Names of the features of candidate segments (``features.segments``).
    partial : PartialLabels or None
        With unknown tokens or label sets in ``y``: what is known of each
        token's label (:mod:`skcrf._estimators.partial_labels`); ``label_ids``
        is then -1 where a token has no single label. None otherwise.
    n_dense : int
        How many of the last columns of ``features`` are a dense block's.
    settings : dict
        Settings of this one fit that no estimator parameter names, given as
        an argument of the estimator's ``_fit`` (empty for every other fit):
        :class:`skcrf.compat.CRF` trains its :class:`~skcrf.CRFClassifier` as
        CRFsuite does with ``boundary_weights`` (False: an order-1 chain
        without start and end weights, which stay 0) and ``online`` (extra
        fields of the online solvers' ``OnlineOptions``). They live on the
        data of the fit, never on the estimator: nothing of them reaches its
        fitted state, its model file or ``get_params``.
    """

    def __init__(self, features, offsets, classes, label_ids, feature_names, vectorizer):
        self.features = features
        self.offsets = offsets
        self.classes = classes
        self.label_ids = label_ids
        self.feature_names = feature_names
        self.vectorizer = vectorizer
        self.segment_feature_names = None
        # each sequence's sample weight (None: all 1), for the messages of a failed fit
        self.sequence_weights = None
        self.partial = None
        #: columns of ``features`` that came from a dense block (the last ones)
        self.n_dense = 0
        self.settings = {}

    @property
    def lengths(self):
        return np.diff(self.offsets)


class TrainingProblem:
    """What ``fit`` solves, as a structure sets it up from :class:`TrainingData`.

    Attributes
    ----------
    structure : object
        The structure (e.g. :class:`~skcrf.structures.chain.order1.ChainStructure`):
        its parameter layout, gold statistics and expectations.
    targets : ndarray of int64 of shape (n_tokens,)
        What the structure's gold statistics read: class ids, or the segment
        codes of a semi-Markov model.
    attributes : dict
        Fitted attributes fixed by the data alone (``classes_`` and the like),
        by attribute name.
    coefficient_names : dict
        Attribute name of each block of ``structure.coefficients(w)``, by
        block name; blocks a structure does not have are skipped.
    """

    def __init__(self, structure, targets, attributes, coefficient_names):
        self.structure = structure
        self.targets = targets
        self.attributes = attributes
        self.coefficient_names = coefficient_names

    @property
    def n_parameters(self):
        return self.structure.n_parameters

    def objective(self, data, l2, sequence_weights=None):
        """The :class:`NegativeLogLikelihood` of ``data`` under this problem.

        ``sequence_weights`` (one per sequence, or None for all 1) weigh the
        sequences' loss terms.
        """
        if data.partial is not None:
            return PartialLabelObjective(self.structure, data.features, data.offsets,
                                         data.partial, l2=l2, sequence_weights=sequence_weights)
        return NegativeLogLikelihood(self.structure, data.features, data.offsets,
                                     self.targets, l2=l2, sequence_weights=sequence_weights)

    def starting_point(self, w0):
        """Where the solver starts, given the estimator's (zero, or a warm start's weights).

        Called after :meth:`objective`; a problem that learns a better start
        while building its objective returns it here.
        """
        return w0

    def fitted_attributes(self, w):
        """The fitted attributes of the weight vector ``w``, by attribute name."""
        named = self.structure.coefficients(w)
        attributes = dict(self.attributes)
        attributes.update((attribute, named[block])
                          for block, attribute in self.coefficient_names.items()
                          if block in named)
        return attributes
