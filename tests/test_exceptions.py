"""Every exception class of skcrf survives pickle with its message (issue 32, item 11).

Errors raised in worker processes (joblib's loky workers under
``cross_validate(n_jobs=2)``, Dask workers) come back pickled:
FeatureValueError's constructor took four more arguments than pickle gives
it, so the user saw ``TypeError: missing 4 required positional arguments``
or ``BrokenProcessPool`` instead of the message naming the bad value.
"""

import importlib
import inspect
import pickle
import pkgutil

import pytest
from sklearn.model_selection import cross_validate

import skcrf
from skcrf import CRFClassifier
from skcrf.datasets._download import SourceFailed
from skcrf.features._dict_arrays import FeatureValueError


def _exception_classes():
    classes = set()
    for module in pkgutil.walk_packages(skcrf.__path__, "skcrf."):
        if module.name.startswith(("skcrf.plotting", "skcrf.__main__")):
            continue  # matplotlib is optional; __main__ runs the command line
        for _, cls in inspect.getmembers(importlib.import_module(module.name),
                                         inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__.startswith("skcrf"):
                classes.add(cls)
    return sorted(classes, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


# the arguments a class's constructor takes, where a message alone does not do
_ARGUMENTS = {FeatureValueError: (3, 1, "w", object(), "a value of an unknown type"),
              SourceFailed: ("https://example.org/esp.train", "timed out", "unreachable")}


def test_the_exception_classes_are_found():
    names = {cls.__name__ for cls in _exception_classes()}
    assert {"FeatureValueError", "ModelVersionWarning", "CommandError",
            "PartitionError"} <= names


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda cls: cls.__qualname__)
def test_every_exception_class_pickles_with_its_message(cls):
    error = cls(*_ARGUMENTS.get(cls, ("what went wrong, and where",)))
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls and str(copy) == str(error)
    if cls is FeatureValueError:
        assert (copy.sequence, copy.token, copy.key, copy.why) == (3, 1, "w",
                                                                   "a value of an unknown type")
        assert copy.relocated(5, 0).sequence == 5


def test_a_bad_feature_value_in_a_worker_process_is_reported_as_itself():
    X = [[{"w": "a"}, {"w": "b"}]] * 6
    y = [["A", "B"]] * 6
    X[4] = [{"w": "a"}, {"w": {"nested": 1}}]
    with pytest.raises(TypeError, match=r"Sequence \d, token 1, feature 'w'"):
        cross_validate(CRFClassifier(max_iter=5), X, y, cv=2, n_jobs=2,
                       error_score="raise")
