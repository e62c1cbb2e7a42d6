"""Every Python code block of the user guide and the quickstart runs as written.

A page's blocks run in order in one namespace, as a reader runs them, in an
empty working directory (what they save lands there). A block whose first
line is a file name in a comment (``# myproject/features.py``) is that file
of the reader's project: it is written there, and importable, instead of run.
The corpora come from the data home and are never downloaded here: a page
that needs a corpus the data home lacks is skipped, saying so.
"""

import re
import sys
import textwrap
from pathlib import Path

import matplotlib
import pytest

from tests.conftest import data_home

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted([*(DOCS / "user_guide").glob("*.rst"), DOCS / "quickstart.rst"])

_BLOCK = re.compile(r"^(?P<indent> *)\.\. code-block:: python *\n"
                    r"(?:(?P=indent) +:[^\n]*\n)*"        # the directive's options
                    r"(?P<body>(?:(?P=indent) +[^\n]*\n|[ \t]*\n)+)", re.MULTILINE)
_FILE = re.compile(r"# (?P<path>[\w/]+\.py)\n")


def code_blocks(page):
    """(line number, code) of each Python code block of ``page``, in order."""
    text = page.read_text("utf-8")
    return [(text.count("\n", 0, match.start("body")) + 1,
             textwrap.dedent(match.group("body")).strip("\n") + "\n")
            for match in _BLOCK.finditer(text)]


def test_the_pages_have_code_blocks():
    """The pattern finds the blocks (a page without any would pass vacuously)."""
    counts = {page.name: len(code_blocks(page)) for page in PAGES}
    assert counts["quickstart.rst"] >= 4 and counts["trees.rst"] == 3
    assert sum(counts.values()) >= 45


@pytest.mark.parametrize("page", [page for page in PAGES if code_blocks(page)],
                         ids=lambda page: page.relative_to(DOCS).as_posix())
def test_every_code_block_runs_as_written(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SKCRF_DATA", str(data_home()))
    monkeypatch.setenv("SKCRF_DATA_URL", "http://127.0.0.1:9")  # no download, ever
    monkeypatch.setenv("no_proxy", "*")
    matplotlib.use("Agg")
    namespace = {"__name__": "__docs__"}
    before = set(sys.modules)
    try:
        for line, code in code_blocks(page):
            file = _FILE.match(code)
            if file:
                target = tmp_path / file.group("path")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(code, "utf-8")
                continue
            exec(compile(code, f"{page.relative_to(DOCS)}, line {line}", "exec"), namespace)
    finally:  # the page's own modules (myproject) go with its working directory
        for name in set(sys.modules) - before:
            module = sys.modules[name]
            places = [getattr(module, "__file__", None) or "",
                      *(getattr(module, "__path__", None) or [])]
            if any(str(place).startswith(str(tmp_path)) for place in places):
                del sys.modules[name]
