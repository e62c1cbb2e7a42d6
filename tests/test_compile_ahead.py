"""A chain's prediction kernels compiled in a second process during a fresh install's first fit."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skcrf import CRFClassifier, _compile_ahead

REPO = Path(__file__).resolve().parents[1]

X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8


@pytest.fixture
def started(monkeypatch):
    """The processes compile_chain_ahead starts (recorded, not run), from a fresh process's state."""
    commands = []
    monkeypatch.setattr(_compile_ahead, "_started", False)
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_compile_ahead, "_prediction_kernels_missing", lambda: True)
    monkeypatch.delenv(_compile_ahead.ENVIRONMENT_SWITCH, raising=False)
    monkeypatch.setattr(_compile_ahead.subprocess, "Popen",
                        lambda command, **options: commands.append((command, options)))
    return commands


def test_a_cold_first_fit_starts_one_process_with_its_own_switch_off(started):
    CRFClassifier(max_iter=1).fit(X, Y)
    CRFClassifier(max_iter=1).fit(X, Y)
    assert len(started) == 1
    command, options = started[0]
    assert command == [sys.executable, "-m", "skcrf._compile_ahead"]
    # the process itself never starts another, and prints nothing over the user's output
    assert options["env"][_compile_ahead.ENVIRONMENT_SWITCH] == "0"
    assert options["stdout"] is subprocess.DEVNULL and options["stderr"] is subprocess.DEVNULL


@pytest.mark.parametrize("params", [{"order": 2}, {"transition_features": "all"}])
def test_other_chains_start_nothing(started, params):
    CRFClassifier(max_iter=1, **params).fit(X, Y)
    assert started == []


def test_the_switch_one_cpu_and_a_warm_cache_start_nothing(started, monkeypatch):
    monkeypatch.setenv(_compile_ahead.ENVIRONMENT_SWITCH, "0")
    assert _compile_ahead.compile_chain_ahead() is None
    monkeypatch.delenv(_compile_ahead.ENVIRONMENT_SWITCH)
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 1)
    assert _compile_ahead.compile_chain_ahead() is None
    monkeypatch.setattr(_compile_ahead, "_started", False)
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_compile_ahead, "_prediction_kernels_missing", lambda: False)
    assert _compile_ahead.compile_chain_ahead() is None
    assert started == []


def test_this_test_session_has_the_kernels_cached():
    """The check itself: after a predict_marginals, the lanes' cache index exists."""
    CRFClassifier(max_iter=1).fit(X, Y).predict_marginals(X)
    assert not _compile_ahead._prediction_kernels_missing()


#: In a fresh process: fit, predict and predict_marginals of a toy chain, and
#: the names of the kernels numba compiled (not loaded from the cache) meanwhile.
_USER = r'''
import json, warnings
from numba.core.event import Listener, register

compiled = []

class Record(Listener):
    def on_start(self, event):
        pass
    def on_end(self, event):
        function = event.data["dispatcher"].py_func
        compiled.append(f"{function.__module__}.{function.__name__}")

register("numba:compile", Record())
from skcrf import CRFClassifier
X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model = CRFClassifier(max_iter=3).fit(X, Y)
model.predict(X)
model.predict_marginals(X)
print(json.dumps(compiled))
'''


def test_what_the_process_compiles_is_what_prediction_then_loads(tmp_path):
    """Its kernels have the argument types a user's predict passes, else they would be
    compiled again: after it ran, a new process's first fit, predict and
    predict_marginals compile none of them."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    env[_compile_ahead.ENVIRONMENT_SWITCH] = "0"
    subprocess.run([sys.executable, "-m", "skcrf._compile_ahead"], env=env, check=True,
                   cwd=REPO, timeout=600)
    done = subprocess.run([sys.executable, "-c", _USER], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    ahead = ("skcrf.inference.chain._lane_chunks", "skcrf.inference._order1._best_path_chunks",
             "skcrf.inference._order1_lanes.lane_forward_backward",
             "skcrf.features._kernels._csr_dot_dense_rows", "skcrf.learning._steps.")
    assert compiled, "the fit compiled nothing: the cache was not fresh"
    assert [name for name in compiled if name.startswith(ahead)] == []
