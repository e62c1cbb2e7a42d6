"""Persistence knows estimators by a registry they fill, and imports none (issue 36, item 12).

It used to import ``skcrf.compat`` to list the classes a file may name, while
``skcrf.compat`` imports persistence to save: a circle. Now each class a
model file may hold registers itself with the declaration of its fitted
state, and loading checks every loaded estimator against it.
"""

import ast
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline

import skcrf
from skcrf._persistence._registry import declaration_of, estimator_classes
from skcrf.compat import CRF
from skcrf.features import DenseWindow, WordClusters, WordVectorizer

PACKAGE = Path(skcrf.__file__).parent / "_persistence"


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_persistence_imports_no_estimator(path):
    skcrf_imports = {name for name in _imports(path)
                     if name.startswith((".", "skcrf"))}
    # within the package, the type names of the public signatures, and the root
    # package at call time, for its __version__ (it is imported by then)
    assert skcrf_imports <= {"._file", "._archive", "._decoder", "._encoder", "._registry",
                             ".._utils.type_aliases", "skcrf"}, \
        skcrf_imports


def test_every_estimator_a_file_may_hold_declares_its_fitted_state():
    public = {getattr(skcrf, name) for name in skcrf.__all__}
    estimators = {cls for cls in public if isinstance(cls, type)
                  and issubclass(cls, BaseEstimator)} | {CRF, WordVectorizer, WordClusters,
                                                             DenseWindow}
    classes = estimator_classes()
    assert estimators | {Pipeline} == set(classes.values())
    for cls in classes.values():
        declaration = declaration_of(cls)
        assert declaration is not None and callable(declaration.check)
        if cls is not Pipeline:
            assert cls._fitted_state is declaration  # its own, not its base class's


def test_a_fresh_process_loads_models_whose_modules_it_never_imported(tmp_path):
    """``import skcrf`` imports no estimator module: the registry imports the one a file
    names when it reads it."""
    import subprocess
    import sys

    from skcrf import save_model

    X, y = [[{"w": "a"}, {"w": "b"}]] * 3, [["x", "y"]] * 3
    paths = []
    for model in (CRF(max_iterations=2).fit(X, y), skcrf.TreeCRF(max_iter=2).fit(
            [[{**token, "__parent__": head} for token, head in zip(X[0], [1, -1])]] * 3, y)):
        paths.append(str(tmp_path / f"{type(model).__name__}.skcrf"))
        save_model(model, paths[-1])
    code = ("import sys, skcrf; assert 'skcrf._chain' not in sys.modules; "
            "print([type(skcrf.load_model(p)).__name__ for p in sys.argv[1:]])")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, *paths],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['CRF', 'TreeCRF']"


def test_every_saved_class_is_found_by_its_name_in_a_fresh_process():
    # issue 43: a file holding a SequenceHasher did not load in a process that had
    # not imported skcrf.SequenceHasher itself (the hostile test's child processes)
    import re
    from pathlib import Path

    from skcrf._persistence import _registry

    package = Path(_registry.__file__).resolve().parents[1]
    declared = {name for path in package.rglob("*.py")
                for name in re.findall(r'@saved_as\("([\w.]+)"\)', path.read_text("utf-8"))}
    assert "skcrf.SequenceHasher" in declared
    assert declared <= set(_registry._MODULES), sorted(declared - set(_registry._MODULES))
