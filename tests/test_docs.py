"""The documentation builds warning-free and holds a page for every public name.

One Sphinx build (``-W --keep-going``, as ``make docs``) into a temporary
folder, shared by the tests below. ``SKCRF_DOCS_QUICK=1`` makes the example
plots train on a few hundred sentences for a few iterations (see
``docs/_models.py``), so the build exercises every plot snippet in seconds
rather than training the full models.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import skcrf
from skcrf import datasets, inspection, metrics, plotting

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None,
    reason="sphinx is not installed; install the docs extra: pip install '.[docs]'")

DOCS = Path(__file__).resolve().parents[1] / "docs"

# Public names described in prose rather than on a generated page: the model
# files (skcrf._persistence) are documented in user_guide/command_line.rst.
PROSE_ONLY = {"__version__"}

# Folders a build may write into the source tree; both are git-ignored.
GENERATED = ("api/generated/", "__pycache__/")


def _source_files():
    return {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*")
            if path.is_file() and "_build" not in path.relative_to(DOCS).parts}


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory):
    """Build the HTML docs once; return the output folder and the build log."""
    out = tmp_path_factory.mktemp("html")
    before = _source_files()
    env = {**os.environ, "SKCRF_DOCS_QUICK": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         str(DOCS), str(out)],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, (
        f"sphinx-build failed (exit {result.returncode}):\n{result.stderr[-5000:]}")
    new_files = _source_files() - before
    return out, result, new_files


def test_build_succeeds_without_warnings(built_docs):
    out, result, _ = built_docs
    # -q prints warnings only; -W already fails on them, this names them if not
    assert "WARNING" not in result.stderr, result.stderr
    assert (out / "index.html").is_file()


def test_every_page_of_the_toctree_is_built(built_docs):
    out, _, _ = built_docs
    for page in ("install", "quickstart", "migration", "api/index", "examples/index",
                 "examples/conll2002_ner", "examples/conll2000_chunking",
                 "user_guide/index", "user_guide/input_formats", "user_guide/features",
                 "user_guide/regularization", "user_guide/model_selection",
                 "user_guide/marginals", "user_guide/metrics", "user_guide/inspection",
                 "user_guide/command_line"):
        assert (out / f"{page}.html").is_file(), page


@pytest.mark.parametrize("module, prefix", [
    (skcrf, "skcrf."), (datasets, "skcrf.datasets."), (metrics, "skcrf.metrics."),
    (inspection, "skcrf.inspection."), (plotting, "skcrf.plotting.")])
def test_every_public_name_has_an_api_page(built_docs, module, prefix):
    out, _, _ = built_docs
    missing = [name for name in module.__all__ if name not in PROSE_ONLY
               and not (out / "api" / "generated" / f"{prefix}{name}.html").is_file()]
    assert not missing, f"no API page for {missing}: add them to docs/api/index.rst"


def test_api_pages_document_the_methods(built_docs):
    out, _, _ = built_docs
    page = (out / "api" / "generated" / "skcrf.CRFClassifier.html").read_text("utf-8")
    for method in ("fit", "predict", "predict_marginals", "score", "get_params"):
        assert f'id="skcrf.CRFClassifier.{method}"' in page, method
    # the docstring's parameter section went through numpydoc
    assert "l1_ratio" in page and "Parameters" in page


def test_example_pages_include_their_script_and_plots(built_docs):
    out, _, _ = built_docs
    for name, script_line in [("conll2002_ner", "load_conll2002"),
                              ("conll2000_chunking", "load_conll2000")]:
        page = (out / "examples" / f"{name}.html").read_text("utf-8")
        assert script_line in page
        # three plots per example page: transitions, loss curve, top features
        images = sorted((out / "_images").glob(f"{name}-*.png"))
        assert len(images) == 3, images
        assert all(image.stat().st_size > 1000 for image in images)
        for image in images:
            assert f"_images/{image.name}" in page


def test_build_writes_only_ignored_files_into_the_source_tree(built_docs):
    _, _, new_files = built_docs
    stray = [path for path in new_files if not any(
        part in f"{path}" for part in GENERATED)]
    assert not stray, f"the build wrote files outside git-ignored folders: {stray}"
    ignored = (DOCS / ".gitignore").read_text("utf-8")
    assert "api/generated/" in ignored
