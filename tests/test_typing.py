"""The public API's type hints: complete where promised, resolvable, shipped (py.typed)."""

import inspect
import sys
import typing
from pathlib import Path

import pytest

from skcrf import (
    CRFClassifier,
    SemiMarkovCRF,
    SequenceVectorizer,
    TokenFeaturizer,
    TreeCRF,
    datasets,
    inspection,
    load_model,
    metrics,
    save_model,
    tags,
)

# what every CRF estimator answers once fitted (defined once, in skcrf/_base.py)
QUERIES = ["predict", "predict_marginals", "predict_proba", "predict_nbest",
           "sequence_log_proba", "score"]

REPO = Path(__file__).resolve().parents[1]

ANNOTATED = [
    CRFClassifier.__init__, CRFClassifier.fit,
    SemiMarkovCRF.__init__, SemiMarkovCRF.fit, SemiMarkovCRF.predict_segments,
    save_model, load_model,
    *(getattr(estimator, name) for estimator in (CRFClassifier, SemiMarkovCRF, TreeCRF)
      for name in QUERIES),
    *(getattr(TokenFeaturizer, name)
      for name in ("fit", "transform", "fit_transform", "transform_dicts")),
    *(getattr(SequenceVectorizer, name)
      for name in ("fit", "transform", "fit_transform", "get_feature_names_out")),
    *(getattr(datasets, name) for name in datasets.__all__),
    *(getattr(metrics, name) for name in metrics.__all__
      if inspect.isfunction(getattr(metrics, name))),
    *(getattr(tags, name) for name in tags.__all__ if inspect.isfunction(getattr(tags, name))),
    *(getattr(inspection, name) for name in inspection.__all__
      if inspect.isfunction(getattr(inspection, name))),
]


def test_the_list_covers_every_public_function_of_datasets():
    assert all(inspect.isfunction(getattr(datasets, name)) for name in datasets.__all__)
    assert {"fetch_conll2000", "fetch_ud", "load_conllu", "iter_conll"} <= set(datasets.__all__)


@pytest.mark.parametrize("function", ANNOTATED,
                         ids=lambda f: f"{f.__module__}.{f.__qualname__}")
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
