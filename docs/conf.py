"""Sphinx configuration of the skcrf documentation.

Build with ``make docs`` (``python -m sphinx -W --keep-going -b html docs
docs/_build/html``). sphinx-gallery runs the scripts of ``examples/`` into
``auto_examples/`` (git-ignored); the CoNLL ones train CRFs on the real CoNLL
corpora to draw their plots, so the build reads ``$SKCRF_DATA``; when it is not
set, it points at ``../../shared/data`` relative to this folder, where the
checkout layout puts the corpora. Without a corpus, its script is shown
unexecuted (docs/_gallery.py); the script on the embedded sample always runs.
"""

import logging
import os
import sys
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning

import skcrf

DOCS = Path(__file__).resolve().parent

# sphinx-gallery imports reset_argv from docs/_gallery.py by name.
sys.path.insert(0, str(DOCS))
os.environ.setdefault("SKCRF_DATA", str((DOCS / ".." / ".." / "shared" / "data").resolve()))

from _gallery import executed_pattern  # noqa: E402 - needs the path above

project = "skcrf"
author = "the skcrf developers"
copyright = "the skcrf developers"
version = release = skcrf.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from the build: equations render offline
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
# No intersphinx: the build must not need the network.

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"

# API stubs are generated into api/generated/ on every build (git-ignored in
# docs/.gitignore), so the reference can never drift from the docstrings.
autosummary_generate = True
autodoc_typehints = "none"

# numpydoc: the class templates list methods themselves; without this numpydoc
# adds a second, toctree-less method table that Sphinx warns about.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# The examples: each script runs once per build, its figures captured. The
# build passes --max-iter (docs/_gallery.py) so that training stays short; a
# user runs the same scripts with their defaults.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # run every example whose data is there, not only plot_*.py
    "filename_pattern": executed_pattern(DOCS.parent / "examples"),
    "reset_argv": "_gallery.reset_argv",
    "download_all_examples": False,
    "remove_config_comments": True,
    "write_computation_times": False,
    # the outputs depend on the corpora in $SKCRF_DATA, not only on the
    # script: never reuse those of an earlier build
    "run_stale_examples": True,
}
# The examples run in this process: the iteration cap above is the build's
# budget, announced on each page, so its ConvergenceWarning is not shown there.
warnings.filterwarnings("ignore", category=ConvergenceWarning)
# With a cold numba cache the examples compile skcrf's kernels and the
# compile notice (a WARNING record on the "skcrf" logger, for a user at a
# terminal) would land on the pages and fail the -W build: a build is not
# that user.
logging.getLogger("skcrf").setLevel(logging.ERROR)

# furo scrolls long code lines instead of clipping them, and reads on phones
html_theme = "furo"
html_title = f"skcrf {release}"
html_static_path = []
