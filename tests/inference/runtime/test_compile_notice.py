"""The one-line note that kernels are compiling: once, only on a real compilation."""

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from skcrf.inference._runtime.compile_notice import MESSAGE, CompileNotice

REPO = Path(__file__).resolve().parents[3]  # the checkout, whose skcrf the children import


def _event(module):
    """A stand-in for numba's ``numba:compile`` event of a kernel defined in ``module``."""
    dispatcher = SimpleNamespace(py_func=SimpleNamespace(__module__=module))
    return SimpleNamespace(data={"dispatcher": dispatcher})


def _notes(caplog):
    return [record.getMessage() for record in caplog.records if record.name == "skcrf"]


def _wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_long_compilation_is_announced_once(caplog):
    caplog.set_level(logging.INFO, logger="skcrf")
    notice = CompileNotice(delay=0.05)
    kernel = _event("skcrf.inference.chain.order1")
    notice.on_start(kernel)
    _wait_for(lambda: notice.announced)
    notice.on_end(kernel)
    assert _notes(caplog) == [MESSAGE]
    # later compilations in the same process say nothing more
    notice.on_start(kernel)
    time.sleep(0.15)
    notice.on_end(kernel)
    assert _notes(caplog) == [MESSAGE]


def test_short_compilations_and_other_libraries_kernels_say_nothing(caplog):
    caplog.set_level(logging.INFO, logger="skcrf")
    notice = CompileNotice(delay=0.1)
    ours, theirs = _event("skcrf.features._kernels"), _event("numba.np.arrayobj")
    notice.on_start(ours)
    notice.on_end(ours)  # done before the delay
    notice.on_start(theirs)  # still compiling, but not one of skcrf's kernels
    time.sleep(0.3)
    assert _notes(caplog) == [] and not notice.announced
    notice.on_end(theirs)
    # a later compilation that does last is announced
    notice.on_start(ours)
    _wait_for(lambda: notice.announced)
    notice.on_end(ours)
    assert _notes(caplog) == [MESSAGE]


_SCRIPT = """\
import sys
sys.path.insert(0, sys.argv[1])
from numba.core.event import register
from skcrf.inference._runtime.compile_notice import CompileNotice

register("numba:compile", CompileNotice(prefix="toy_kernels", delay=0.0))
import toy_kernels
print(toy_kernels.total(5))
"""

_KERNELS = """\
import numpy as np
from numba import njit


@njit(cache=True)
def total(n):
    values = np.arange(n * n).reshape((n, n)).astype(np.float64)
    return float(np.sort(values.ravel()).sum())
"""


def test_only_a_process_that_compiles_says_so(tmp_path):
    """A fresh numba cache compiles and says so; the next process loads it and is silent."""
    (tmp_path / "toy_kernels.py").write_text(_KERNELS)
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))

    def run():
        result = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "300.0"
        return result.stderr

    first, second = run(), run()
    assert first.count("compiling skcrf's kernels") == 1, first
    assert "compiling" not in second, second
