"""Sphinx configuration of the skcrf documentation.

Build with ``make docs`` (``python -m sphinx -W --keep-going -b html docs
docs/_build/html``). The example pages train CRFs on the real CoNLL corpora to
draw their plots, so the build reads ``$SKCRF_DATA``; when it is not set, it
points at ``../../shared/data`` relative to this folder, where the checkout
layout puts the corpora.
"""

import os
import sys
from pathlib import Path

import skcrf

DOCS = Path(__file__).resolve().parent

# The plot snippets import the cached models from docs/_models.py.
sys.path.insert(0, str(DOCS))
os.environ.setdefault("SKCRF_DATA", str((DOCS / ".." / ".." / "shared" / "data").resolve()))

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
    "matplotlib.sphinxext.plot_directive",
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

# Plots are drawn at build time from models trained on the real corpora.
plot_pre_code = (
    "import matplotlib.pyplot as plt\n"
    "from _models import conll2000_pipeline, conll2002_pipeline\n"
)
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 96)]
plot_rcparams = {"figure.autolayout": True}

# furo scrolls long code lines instead of clipping them, and reads on phones
html_theme = "furo"
html_title = f"skcrf {release}"
html_static_path = []
