"""What pyproject.toml tells setuptools, checked where a mistake would only show at install."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")


def pyproject():
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))


def test_an_editable_install_is_a_plain_path_entry():
    """setuptools turns an editable install into a path entry (a .pth line) when
    ``package-dir`` maps the root package folder, and otherwise into an import
    finder that prints a box warning about "folders in your working directory
    with the same name as your package" (issue 36, item 10), into ``make demo``'s
    first run among others."""
    setuptools = pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    assert (REPO / "skcrf" / "__init__.py").is_file()
    assert setuptools["packages"]["find"]["include"] == ["skcrf*"]


def test_every_public_name_resolves():
    # skcrf.CacheDamagedWarning pointed at a module the regrouping had moved
    import skcrf

    for name in skcrf.__all__:
        assert getattr(skcrf, name) is not None, name
