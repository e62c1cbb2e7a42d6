"""The classes a model file may name: an allow-list that the estimators' modules fill.

Persistence imports no estimator (that was a circle: the format imported
``skcrf.compat``, which imports persistence to save). Instead a class
becomes loadable when its module registers it, with the declaration of its
fitted state (:class:`skcrf._estimators.fitted_state.FittedState`): which attributes
a file may set on it, and the check a loaded one must pass before anything
reads it. ``import skcrf`` imports no estimator module (its names load on
first use), so a file may name a class whose module has not registered it
yet: the module is then imported by its name (:data:`_MODULES`), which is
no import at import time and so no circle.

A declaration is any object with:

- ``attribute_names``: the attributes (besides its parameters) a file may
  set; any other name is refused, so a file cannot shadow a method;
- ``unsaved_params``: parameters that are not part of the model (where
  ``fit`` writes a copy of it), saved as None and never read from a file;
- ``check(estimator)``: raise a ValueError naming the attribute unless the
  loaded estimator's parameters and fitted state agree with each other.
"""

from importlib import import_module

__all__ = ["declaration_of", "estimator_classes", "model_class", "register_model_class"]

# name in a file -> (class, declaration), in registration order
_CLASSES = {}

#: name in a file -> the module whose import registers it
_MODULES = {
    "skcrf.CRFClassifier": "skcrf._chain",
    "skcrf.CRFClassifierCV": "skcrf._cv",
    "skcrf.CalibratedCRF": "skcrf._calibration",
    "skcrf.SemiMarkovCRF": "skcrf._semimarkov",
    "skcrf.TreeCRF": "skcrf._tree",
    "skcrf.TokenFeaturizer": "skcrf.features.featurizer",
    "skcrf.SequenceVectorizer": "skcrf.features.vectorizer",
    "skcrf.SequenceHasher": "skcrf.features.hasher",
    "skcrf.features.WordVectorizer": "skcrf.features.word_vectors",
    "skcrf.features.WordClusters": "skcrf.features.distributional",
    "skcrf.features.DenseWindow": "skcrf.features.dense_window",
    "skcrf.compat.CRF": "skcrf.compat._crf",
    "sklearn.pipeline.Pipeline": "skcrf._estimators.fitted_state",
}


def _import_all():
    """Import every module that registers a class (the allow-list complete)."""
    for module in _MODULES.values():
        import_module(module)


def register_model_class(name, cls, declaration):
    """Allow model files to name ``cls`` as ``name``, checked by ``declaration``.

    Registering a class again under its name (a module reloaded) replaces it.
    """
    for known, (other, _) in _CLASSES.items():
        if known != name and other is cls:
            raise ValueError(f"{cls.__qualname__} is registered already, as {known!r}.")
    _CLASSES[name] = (cls, declaration)


def estimator_classes():
    """The allow-list of classes a model file may name, by the name it uses.

    Returns
    -------
    classes : dict of str to type
        ``"skcrf.CRFClassifier"`` and the like to the class.
    """
    _import_all()
    return {name: cls for name, (cls, _) in _CLASSES.items()}


def model_class(name):
    """``(class, declaration)`` registered as ``name``, or None."""
    if name not in _CLASSES and name in _MODULES:
        import_module(_MODULES[name])
    return _CLASSES.get(name)


def declaration_of(cls):
    """The declaration ``cls`` was registered with, or None."""
    for known, declaration in _CLASSES.values():
        if known is cls:
            return declaration
    return None
