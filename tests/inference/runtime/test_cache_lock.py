"""A stopped process holding a kernel-cache lock blocks no one for long (issue 43, item 4).

The holder is a child process stopped with SIGSTOP while it holds the lock;
the waiter runs in another child, under a timeout, so that a wait without
bound fails the test instead of hanging it.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX locks and signals")

REPO = Path(__file__).resolve().parents[3]

_HOLDER = r'''
import sys, time
from skcrf.inference._runtime import cache
with cache._locked(sys.argv[1], shared=len(sys.argv) > 2):
    print("held", flush=True)
    time.sleep(600)
'''

#: Waits for the lock (shared, as a load does) with a 1 s bound, twice; prints
#: the message and how long each wait took.
_WAITER = r'''
import json, sys, time, warnings
from skcrf.inference._runtime import cache
cache.LOCK_TIMEOUT = 1.0
waits, messages = [], []
for _ in range(2):
    began = time.monotonic()
    try:
        with cache._locked(sys.argv[1], shared=True):
            messages.append(None)
    except cache._LockTimeout as error:
        messages.append(str(error))
    waits.append(time.monotonic() - began)
print(json.dumps([waits, messages]))
'''


@pytest.fixture(params=["exclusive"])
def stopped_holder(tmp_path, request):
    index = str(tmp_path / "kernel.nbi")
    shared = ["shared"] if request.param == "shared" else []
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, index, *shared], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline()  # the child exits (closing stdout) if it fails
        assert line.strip() == "held"
        os.kill(holder.pid, signal.SIGSTOP)
        yield index, holder.pid
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()


def test_a_wait_on_a_stopped_holder_ends_naming_its_pid(stopped_holder):
    import json

    index, pid = stopped_holder
    done = subprocess.run([sys.executable, "-c", _WAITER, index], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    waits, messages = json.loads(done.stdout)
    assert all(message is not None and f"process {pid}" in message for message in messages)
    assert "kernel.nbi.lock" in messages[0] and "without the cache" in messages[0]
    assert 1.0 <= waits[0] < 30
    assert waits[1] < 0.5  # a lock found stuck once is not waited for again


def test_a_timed_out_load_compiles_and_keeps_the_cache(monkeypatch, tmp_path):
    """The wrapped load returns "not cached" with a warning and leaves the index alone."""
    from skcrf.inference._runtime import cache

    index = tmp_path / "k.nbi"
    index.write_bytes(b"index")

    class FakeFile:
        _index_path = str(index)

    class FakeCache:
        _cache_file = FakeFile()

        def load_overload(self, sig, target_context):
            raise AssertionError("not reached: the lock was not taken")

        def save_overload(self, sig, data):
            raise AssertionError("not reached: the lock was not taken")

    class FakeDispatcher:
        _cache = FakeCache()

    def timed_out(path, shared):
        raise cache._LockTimeout("held by process 1234")

    monkeypatch.setattr(cache, "_locked", timed_out)
    dispatcher = FakeDispatcher()
    cache.recover_damaged_cache(dispatcher)
    with pytest.warns(cache.CacheUnavailableWarning, match="process 1234"):
        assert dispatcher._cache.load_overload((), None) is None
    with pytest.warns(cache.CacheUnavailableWarning, match="process 1234"):
        dispatcher._cache.save_overload((), None)
    assert index.read_bytes() == b"index"


#: Takes the lock shared and lets it go at once (writing its pid into the file).
_PASSER_BY = r'''
import sys
from skcrf.inference._runtime import cache
with cache._locked(sys.argv[1], shared=True):
    pass
'''

#: Waits for the lock exclusively (as a save does), 1 s at most; prints the message.
_EXCLUSIVE_WAITER = r'''
import sys
from skcrf.inference._runtime import cache
cache.LOCK_TIMEOUT = 1.0
try:
    with cache._locked(sys.argv[1], shared=False):
        print("no wait")
except cache._LockTimeout as error:
    print(error)
'''


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="names holders from /proc/locks")
@pytest.mark.parametrize("stopped_holder", ["shared"], indirect=True)
def test_the_message_names_the_process_that_holds_the_lock_not_the_last_taker(
        stopped_holder):
    """A process that took the shared lock after the stopped one and let go wrote its pid
    into the lock file: the message named it, not the stopped holder."""
    index, pid = stopped_holder
    passer = subprocess.run([sys.executable, "-c", _PASSER_BY, index], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert passer.returncode == 0, passer.stderr
    done = subprocess.run([sys.executable, "-c", _EXCLUSIVE_WAITER, index], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"by process {pid})" in done.stdout, done.stdout
