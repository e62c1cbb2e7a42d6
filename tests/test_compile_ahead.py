"""A model's prediction kernels compiled in a second process during a fresh install's first fit."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skcrf import CRFClassifier, SemiMarkovCRF, TreeCRF
from skcrf._estimators import compile_ahead as _compile_ahead

REPO = Path(__file__).resolve().parents[1]

X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8


@pytest.fixture
def started(monkeypatch):
    """The processes compile_chain_ahead starts (recorded, not run), from a fresh process's state."""
    commands = []
    monkeypatch.setattr(_compile_ahead, "_started", set())
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_compile_ahead, "_prediction_kernels_missing", lambda kind: True)
    monkeypatch.delenv(_compile_ahead.ENVIRONMENT_SWITCH, raising=False)
    monkeypatch.setattr(_compile_ahead.subprocess, "Popen",
                        lambda command, **options: commands.append((command, options)))
    return commands


TREES = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
         for tokens, heads in zip(X, [[1, 2, -1], [1, -1]] * 8)]


@pytest.mark.parametrize("make, data, kind", [
    (CRFClassifier, X, "chain"), (SemiMarkovCRF, X, "semi-markov"), (TreeCRF, TREES, "tree")])
def test_a_cold_first_fit_starts_one_process_with_its_own_switch_off(started, make, data,
                                                                     kind):
    make(max_iter=1).fit(data, Y)
    make(max_iter=1).fit(data, Y)
    assert len(started) == 1
    command, options = started[0]
    assert command == _compile_ahead.worker_command(kind)
    # the process itself never starts another, and prints nothing over the user's output
    assert options["env"][_compile_ahead.ENVIRONMENT_SWITCH] == "0"
    assert options["stdout"] is subprocess.DEVNULL and options["stderr"] is subprocess.DEVNULL


def test_each_kind_is_considered_once_per_process(started, monkeypatch):
    """A warm chain does not keep a cold tree of the same process from compiling ahead."""
    missing = {"chain": False, "tree": True}
    monkeypatch.setattr(_compile_ahead, "_prediction_kernels_missing", missing.get)
    CRFClassifier(max_iter=1).fit(X, Y)
    TreeCRF(max_iter=1).fit(TREES, Y)
    TreeCRF(max_iter=1).fit(TREES, Y)
    assert [command for command, _ in started] == [_compile_ahead.worker_command("tree")]


@pytest.mark.parametrize("make, params", [
    (CRFClassifier, {"order": 2}), (CRFClassifier, {"transition_features": "all"}),
    (SemiMarkovCRF, {"order": 2})])
def test_models_without_a_toy_of_their_kind_start_nothing(started, make, params):
    make(max_iter=1, **params).fit(X, Y)
    assert started == []


def test_the_switch_one_cpu_and_a_warm_cache_start_nothing(started, monkeypatch):
    monkeypatch.setenv(_compile_ahead.ENVIRONMENT_SWITCH, "0")
    assert _compile_ahead.compile_ahead("chain") is None
    monkeypatch.delenv(_compile_ahead.ENVIRONMENT_SWITCH)
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 1)
    assert _compile_ahead.compile_ahead("chain") is None
    monkeypatch.setattr(_compile_ahead, "_started", set())
    monkeypatch.setattr(_compile_ahead, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_compile_ahead, "_prediction_kernels_missing", lambda kind: False)
    assert _compile_ahead.compile_ahead("chain") is None
    assert started == []


@pytest.mark.parametrize("make, data, kind", [
    (CRFClassifier, X, "chain"), (SemiMarkovCRF, X, "semi-markov"), (TreeCRF, TREES, "tree")])
def test_this_test_session_has_the_kernels_cached(make, data, kind):
    """The check itself: after a predict_marginals, the sentinel's cache index exists."""
    make(max_iter=1).fit(data, Y).predict_marginals(data)
    assert not _compile_ahead._prediction_kernels_missing(kind)


#: Records the kernels numba compiles (not loads from the cache) in this process,
#: as (module.name, signature), printed as JSON at exit.
_RECORD = r'''
import atexit, json
from numba.core.event import Listener, register

compiled = []

class Record(Listener):
    def on_start(self, event):
        pass
    def on_end(self, event):
        function = event.data["dispatcher"].py_func
        if function.__module__.startswith("skcrf."):
            compiled.append([f"{function.__module__}.{function.__name__}",
                             str(event.data["args"])])

register("numba:compile", Record())
atexit.register(lambda: print(json.dumps(compiled)))
'''

#: In a fresh process: a toy model's first fit, predict and predict_marginals.
_USER = _RECORD + r'''
import warnings
from skcrf import CRFClassifier, SemiMarkovCRF, TreeCRF
X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8
TREES = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
         for tokens, heads in zip(X, [[1, 2, -1], [1, -1]] * 8)]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model = MAKE(max_iter=3).fit(DATA, Y)
model.predict(DATA)
model.predict_marginals(DATA)
'''


def _compiled(code, env):
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return {tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])}


@pytest.mark.parametrize("make, data, kind", [
    ("CRFClassifier", "X", "chain"), ("SemiMarkovCRF", "X", "semi-markov"),
    ("TreeCRF", "TREES", "tree")])
def test_what_the_process_compiles_is_what_prediction_then_loads(tmp_path, make, data, kind):
    """Its kernels have the argument types a user's fit and predict pass, else they would
    be compiled again: after it ran, a new process's first fit, predict and
    predict_marginals compile none of them, its sentinel kernel included."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    env[_compile_ahead.ENVIRONMENT_SWITCH] = "0"
    ahead = _compiled(_RECORD + f"from skcrf._estimators.compile_worker import compile_kernels\n"
                                f"compile_kernels({kind!r})\n", env)
    user = _compiled(_USER.replace("MAKE", make).replace("DATA", data), env)
    module, name = _compile_ahead.KINDS[kind]
    assert f"{module}.{name}" in {function for function, _ in ahead}
    assert user, "the fit compiled nothing: the cache was not fresh"
    assert sorted(ahead & user) == []


def test_the_second_process_never_imports_from_the_current_directory(tmp_path):
    """A folder holding a ``skcrf/`` (or a ``numpy/``) is not where the worker's code comes from."""
    marker = tmp_path / "planted-code-ran"
    for name in ("skcrf", "numpy"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r})\n")
    # an unknown kind: the worker imports skcrf, numpy and the estimators, then stops
    result = subprocess.run(_compile_ahead.worker_command("no-such-kind"), cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert not marker.exists()
    assert result.returncode == 1
    assert "unknown kind 'no-such-kind'" in result.stderr
