"""A cached kernel is keyed by the sources of every kernel, not only its own."""

import json
import os
import subprocess
import sys
from pathlib import Path

from skcrf.inference._runtime import cache as _cache
from skcrf.inference._runtime.batch import chunk_bounds

REPO = Path(__file__).resolve().parents[3]  # the checkout, whose skcrf the children import


def test_the_digest_follows_kernel_files_and_ignores_the_others(tmp_path):
    digest = _cache.kernel_sources_digest.__wrapped__
    (tmp_path / "kernels.py").write_text("@compiled()\ndef k(x):\n    return x\n")
    (tmp_path / "estimator.py").write_text("class Estimator:\n    pass\n")
    first = digest(tmp_path)
    (tmp_path / "estimator.py").write_text("class Estimator:\n    '''Documented.'''\n")
    assert digest(tmp_path) == first
    (tmp_path / "kernels.py").write_text("@compiled()\ndef k(x):\n    return x + 1\n")
    assert digest(tmp_path) != first
    # a kernel file in a subpackage counts as much
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "more.py").write_text("@compiled()\ndef j(x):\n    return x\n")
    assert len({first, digest(tmp_path)}) == 2


def test_every_kernel_entry_carries_the_digest_of_skcrfs_kernel_sources():
    import numba

    codegen = numba.core.registry.cpu_target.target_context.codegen()
    key = chunk_bounds._cache._index_key((), codegen)
    assert key[2][-1] == _cache.kernel_sources_digest() is not None


#: Calls chunk_bounds in a fresh process, the digest replaced by argv[1] (if
#: given) before any kernel is decorated; prints whether numba compiled it.
_CHILD = r'''
import json, sys
from numba.core.event import Listener, register
from skcrf.inference._runtime import cache as _cache
if len(sys.argv) > 1:
    _cache.kernel_sources_digest = lambda: sys.argv[1]
compiled = []

class Record(Listener):
    def on_start(self, event):
        pass
    def on_end(self, event):
        compiled.append(event.data["dispatcher"].py_func.__name__)

register("numba:compile", Record())
import numpy as np
from skcrf.inference._runtime.batch import chunk_bounds
chunk_bounds(np.arange(5, dtype=np.int64), 2)
print(json.dumps("chunk_bounds" in compiled))
'''


def test_a_kernel_cached_under_other_kernel_sources_is_compiled_again(tmp_path):
    """What a change in another kernel file does: the cached entry no longer matches."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(REPO))

    def compiled(*digest):
        done = subprocess.run([sys.executable, "-c", _CHILD, *digest], env=env,
                              capture_output=True, text=True, cwd=REPO, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert compiled("before")
    assert not compiled("before")  # loaded from the cache
    assert compiled("after")  # the sources changed: compiled, not run stale
    assert not compiled("after")


def test_the_digest_follows_modules_of_constants_kernels_compile_in(tmp_path):
    """A constant's value is compiled into the kernels that read it (issue 43, item 15)."""
    digest = _cache.kernel_sources_digest.__wrapped__
    (tmp_path / "inference").mkdir()
    (tmp_path / "inference" / "__init__.py").write_text("")
    (tmp_path / "inference" / "_roles.py").write_text("OUTSIDE = 0\n")
    (tmp_path / "learning").mkdir()
    (tmp_path / "learning" / "_codes.py").write_text("STEP = 1\n")
    (tmp_path / "learning" / "unrelated.py").write_text("X = 1\n")
    (tmp_path / "learning" / "kernels.py").write_text(
        "from ._codes import STEP\n@compiled()\ndef k(x):\n    return x + STEP\n")
    first = digest(tmp_path)
    (tmp_path / "inference" / "_roles.py").write_text("OUTSIDE = 1\n")
    second = digest(tmp_path)
    (tmp_path / "learning" / "_codes.py").write_text("STEP = 2\n")
    third = digest(tmp_path)
    assert len({first, second, third}) == 3
    (tmp_path / "learning" / "unrelated.py").write_text("X = 2\n")
    assert digest(tmp_path) == third


def test_the_digest_of_skcrf_covers_the_semimarkov_roles():
    root = _cache._PACKAGE
    roles = root / "inference" / "semimarkov" / "_roles.py"
    assert roles.is_file()
    assert roles.relative_to(root).parts[0] in _cache.KERNEL_FOLDERS
