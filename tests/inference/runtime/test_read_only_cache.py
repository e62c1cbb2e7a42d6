"""A kernel cache written ahead and read-only for the process that runs the code (a
Docker image whose build ran ``skcrf warmup`` as root, run as another user) is read
where it is.

numba alone would skip the unwritable ``__pycache__`` and compile every kernel again
into the user's own cache directory. The test makes the directory read-only with a
read-only bind mount in a private mount namespace (``unshare -m``: root ignores file
permissions, not a read-only mount), so it needs root and util-linux.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]  # the checkout, whose skcrf the children import


def _read_only_mounts_work():
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    done = subprocess.run(["unshare", "-m", "sh", "-c",
                           "mount --bind /tmp /tmp && mount -o remount,ro,bind /tmp /tmp"],
                          capture_output=True)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(not _read_only_mounts_work(),
                                reason="needs root and unshare, for a read-only mount")

KERNEL = textwrap.dedent("""
    import numpy as np
    from skcrf.inference._runtime.batch import compiled

    @compiled()
    def total(values):
        out = 0.0
        for v in values:
            out += v
        return out
""")

#: Calls the kernel once per given dtype; prints the result and the kernels compiled.
RUN = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from numba.core.event import Listener, register

    class Count(Listener):
        compiled = 0
        def on_start(self, event):
            pass
        def on_end(self, event):
            if event.data["dispatcher"].py_func.__module__ == "tinykernels":
                Count.compiled += 1

    register("numba:compile", Count())
    import tinykernels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [tinykernels.total(np.arange(4, dtype=dtype)) for dtype in sys.argv[1:]]
    print(json.dumps({"results": results, "compiled": Count.compiled,
                      "warnings": [str(w.message) for w in caught]}))
""")


def _run(directory, dtypes, read_only=False, home=None, cache_dir=None):
    """Run RUN with ``directory`` importable, its tree mounted read-only if asked.

    With ``cache_dir``, that is NUMBA_CACHE_DIR, and it is the tree mounted read-only.
    """
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(directory), str(REPO)])
    if home is not None:
        env["HOME"] = str(home)
    command = [sys.executable, "-c", RUN, *dtypes]
    if read_only:
        where = shlex.quote(str(cache_dir if cache_dir is not None else directory))
        command = ["unshare", "-m", "sh", "-c",
                   f"mount --bind {where} {where} && mount -o remount,ro,bind {where} {where}"
                   f" && exec {shlex.join(command)}"]
    done = subprocess.run(command, env=env, cwd=directory, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_read_only_cache_written_ahead_is_read_by_another_user(tmp_path):
    package = tmp_path / "image"
    package.mkdir()
    (package / "tinykernels.py").write_text(KERNEL)
    built = _run(package, ["float64"])  # the image's build: root writes __pycache__
    assert built["compiled"] == 1 and built["results"] == [6.0]
    assert list((package / "__pycache__").glob("tinykernels.total-*.nbi"))
    home = tmp_path / "home"  # the other user's own, empty cache directory
    home.mkdir()
    # the kernel the build compiled loads, nothing is compiled
    run = _run(package, ["float64"], read_only=True, home=home)
    assert run == {"results": [6.0], "compiled": 0, "warnings": []}
    # a kernel the cache lacks compiles in the process, with one line saying why
    run = _run(package, ["float64", "int64"], read_only=True, home=home)
    assert run["results"] == [6.0, 6.0] and run["compiled"] == 1
    assert len(run["warnings"]) == 1 and "read-only" in run["warnings"][0]
    assert "NUMBA_CACHE_DIR" in run["warnings"][0]
    assert not list(home.rglob("*.nbi"))  # nothing went to the user's cache either


def test_a_read_only_numba_cache_dir_written_ahead_is_read(tmp_path):
    """NUMBA_CACHE_DIR written by the build and read-only at run time (issue 43, item 14)."""
    package = tmp_path / "image"
    package.mkdir()
    (package / "tinykernels.py").write_text(KERNEL)
    cache_dir = tmp_path / "numba-cache"
    cache_dir.mkdir()
    built = _run(package, ["float64"], cache_dir=cache_dir)
    assert built["compiled"] == 1 and built["results"] == [6.0]
    assert list(cache_dir.rglob("tinykernels.total-*.nbi"))
    home = tmp_path / "home"
    home.mkdir()
    run = _run(package, ["float64"], read_only=True, home=home, cache_dir=cache_dir)
    assert run == {"results": [6.0], "compiled": 0, "warnings": []}
    run = _run(package, ["float64", "int64"], read_only=True, home=home, cache_dir=cache_dir)
    assert run["results"] == [6.0, 6.0] and run["compiled"] == 1
    assert len(run["warnings"]) == 1 and "read-only" in run["warnings"][0]
    assert not list(home.rglob("*.nbi"))
    assert not list((package / "__pycache__").glob("*.nbi"))  # nor beside the source
