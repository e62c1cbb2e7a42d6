"""The public API's type hints: complete where promised, resolvable, shipped (py.typed)."""

import inspect
import sys
import typing
from pathlib import Path

import pytest

from skcrf import CRFClassifier, SemiMarkovCRF, inspection, load_model, metrics, save_model, tags

REPO = Path(__file__).resolve().parents[1]

ANNOTATED = [
    CRFClassifier.__init__, CRFClassifier.fit,
    SemiMarkovCRF.__init__, SemiMarkovCRF.fit, SemiMarkovCRF.predict_segments,
    save_model, load_model,
    *(getattr(metrics, name) for name in metrics.__all__
      if inspect.isfunction(getattr(metrics, name))),
    *(getattr(tags, name) for name in tags.__all__ if inspect.isfunction(getattr(tags, name))),
    *(getattr(inspection, name) for name in inspection.__all__
      if inspect.isfunction(getattr(inspection, name))),
]


@pytest.mark.parametrize("function", ANNOTATED, ids=lambda f: f.__qualname__)
def test_every_parameter_and_the_return_are_annotated(function):
    hints = typing.get_type_hints(function)  # also proves every name resolves
    parameters = [name for name in inspect.signature(function).parameters
                  if name not in ("self", "cls")]
    assert [name for name in parameters if name not in hints] == []
    assert "return" in hints


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_py_typed_marker_is_shipped():
    import tomllib

    assert (REPO / "skcrf" / "py.typed").is_file()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["skcrf"]
