"""The documentation builds warning-free and holds a page for every public name.

One Sphinx build (``-W --keep-going``, as ``make docs``) into a temporary
folder, shared by the tests below. The build runs the scripts of ``examples/``
through sphinx-gallery; here its data home is empty and the network out of
reach, as on a newcomer's machine, so it runs the script on the embedded sample
(in seconds) and shows the CoNLL scripts unexecuted, which is what ``make docs``
does without the corpora.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import skcrf
from skcrf import datasets, inspection, metrics, plotting, serving

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None,
    reason="sphinx is not installed; install the docs extra: pip install '.[docs]'")

DOCS = Path(__file__).resolve().parents[1] / "docs"

# Public names described in prose rather than on a generated page: the model
# files (skcrf._persistence) are documented in user_guide/command_line.rst.
PROSE_ONLY = {"__version__"}

# Folders a build may write into the source tree; all are git-ignored.
GENERATED = ("api/generated/", "auto_examples/", "__pycache__/")
EXAMPLES = sorted(path.stem for path in (DOCS.parent / "examples").glob("*.py"))


def _source_files():
    return {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*")
            if path.is_file() and "_build" not in path.relative_to(DOCS).parts}


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory):
    """Build the HTML docs once; return the output folder and the build log."""
    out = tmp_path_factory.mktemp("html")
    before = _source_files()
    home = tmp_path_factory.mktemp("data")  # empty
    env = {**os.environ, "SKCRF_DATA": str(home), "SKCRF_DATA_URL": "http://127.0.0.1:9",
           "no_proxy": "*", "NO_PROXY": "*"}
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
    for page in ("install", "quickstart", "migration", "api/index", "auto_examples/index",
                 *(f"auto_examples/{name}" for name in EXAMPLES),
                 "user_guide/index", "user_guide/input_formats", "user_guide/features",
                 "user_guide/regularization", "user_guide/model_selection",
                 "user_guide/marginals", "user_guide/metrics", "user_guide/inspection",
                 "user_guide/command_line"):
        assert (out / f"{page}.html").is_file(), page


@pytest.mark.parametrize("module, prefix", [
    (skcrf, "skcrf."), (datasets, "skcrf.datasets."), (metrics, "skcrf.metrics."),
    (inspection, "skcrf.inspection."), (plotting, "skcrf.plotting."),
    (serving, "skcrf.serving.")])
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


def test_the_sample_example_page_shows_its_script_its_output_and_plots(built_docs):
    out, _, _ = built_docs
    page = (out / "auto_examples" / "ud_sample.html").read_text("utf-8")
    assert "load_ud_sample" in page  # the script, as a user runs it
    # its output, printed while the page was built
    assert re.search(r"tree: relation accuracy 0\.\d{4} \(\d+ relations", page)
    # three plots: transitions, loss curve, top features
    images = sorted((out / "_images").glob("sphx_glr_ud_sample_[0-9]*.png"))
    assert [image.name for image in images] == [
        f"sphx_glr_ud_sample_{i:03d}.png" for i in (1, 2, 3)]
    assert all(image.stat().st_size > 1000 for image in images)
    for image in images:
        assert f"_images/{image.name}" in page
    # the gallery's index links to it, with its thumbnail
    assert 'href="ud_sample.html' in (out / "auto_examples" / "index.html").read_text("utf-8")


@pytest.mark.parametrize("name", [name for name in EXAMPLES if name.startswith("conll")])
def test_conll_example_pages_show_their_script_unrun_without_the_corpus(built_docs, name):
    out, _, _ = built_docs
    page = (out / "auto_examples" / f"{name}.html").read_text("utf-8")
    assert "fetch_conll20" in page  # the script, as a user runs it
    assert "sphx-glr-script-out" not in page  # no output: the build found no corpus
    assert f'href="{name}.html' in (out / "auto_examples" / "index.html").read_text("utf-8")


def test_user_guide_shows_the_figures_of_the_example(built_docs):
    out, _, _ = built_docs
    page = (out / "user_guide" / "inspection.html").read_text("utf-8")
    for image in ("sphx_glr_ud_sample_001.png", "sphx_glr_ud_sample_002.png"):
        assert f"_images/{image}" in page and (out / "_images" / image).is_file()


def test_no_page_shows_a_local_path(built_docs):
    """The pages are built on someone's machine; no folder of it may show on them."""
    out, _, _ = built_docs
    for page in out.rglob("*.html"):
        text = page.read_text("utf-8")
        for folder in (str(DOCS.parent), str(Path.home()), "/tmp/"):
            assert folder not in text, (page.relative_to(out), folder)


def test_build_writes_only_ignored_files_into_the_source_tree(built_docs):
    _, _, new_files = built_docs
    stray = [path for path in new_files if not any(
        part in f"{path}" for part in GENERATED)]
    assert not stray, f"the build wrote files outside git-ignored folders: {stray}"
    ignored = (DOCS / ".gitignore").read_text("utf-8").splitlines()
    assert "api/generated/" in ignored and "auto_examples/" in ignored
