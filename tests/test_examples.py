"""The examples and ``make demo``, run as a user runs them, from another working directory.

Each script runs in a subprocess whose working directory is an empty temporary
folder, so that nothing may depend on being started from the repository. The
script on the embedded sample always runs; the CoNLL ones need their real
corpus (the loaders refuse a stand-in whose size is not the recorded one) and
train for a few iterations. That the CoNLL scripts print one line when the data
is missing and cannot be downloaded is
``tests/test_fetchers.py::test_examples_without_data_or_network_print_one_line``;
that they run inside the documentation build (sphinx-gallery) is
``tests/test_docs.py``.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skcrf.datasets._fetch import corpus_file
from tests.conftest import data_home

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(path.name for path in (REPO / "examples").glob("*.py"))

# script -> (corpus files it reads, what its report prints, labels its report and plots name)
EXPECTED = {
    "ud_sample.py": ((), "UD English EWT sample: 419 training sentences", ("NOUN", "VERB")),
    "conll2002_ner.py": ((("conll2002", "esp.train"), ("conll2002", "esp.testb")),
                         "8323 training sentences", ("B-PER", "B-LOC")),
    "conll2000_chunking.py": ((("conll2000", "train.txt"), ("conll2000", "test.txt")),
                              "8936 training sentences", ("B-NP", "B-VP")),
    "active_learning.py": ((("conll2002", "esp.train"), ("conll2002", "esp.testb")),
                           "a pool of 8323 sentences", ("PER", "LOC")),
    "conll2002_word_vectors.py": ((("conll2002", "esp.train"), ("conll2002", "esp.testa"),
                                   ("conll2002", "esp.testb")),
                                  "8323 training sentences",
                                  ("+ window vectors", "+ clusters")),
    "numeric_sequences.py": ((), "300 training sequences",
                             ("LogisticRegression", "CRFClassifier")),
}


def environment(home, **extra):
    """Offline (no download may be tried), this checkout's skcrf, plots going nowhere."""
    return dict(os.environ, SKCRF_DATA=str(home), SKCRF_DATA_URL="http://127.0.0.1:9",
                no_proxy="*", NO_PROXY="*", MPLBACKEND="Agg",
                PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                **extra)


def test_every_example_is_tested_here():
    assert EXAMPLES == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs_from_another_working_directory(tmp_path, script):
    files, report, classes = EXPECTED[script]
    home = data_home()
    for corpus, name in files:
        corpus_file(corpus, name, home)  # missing: the test is skipped, saying so
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--max-iter", "3"],
        cwd=elsewhere, env=environment(home), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert report in result.stdout
    assert "trained in" in result.stdout and "accuracy" in result.stdout
    assert all(label in result.stdout for label in classes)
    assert "Traceback" not in result.stderr
    assert list(elsewhere.iterdir()) == []  # it wrote nothing where it was started


def test_the_demo_script_without_data_or_network_says_so_and_reports_on_the_sample(tmp_path):
    empty_home, user_home, elsewhere = tmp_path / "data", tmp_path / "user", tmp_path / "cwd"
    user_home.mkdir()
    elsewhere.mkdir()
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "conll2002_ner.py"), "--max-iter", "3",
         "--sample-if-unavailable"],
        cwd=elsewhere, env=environment(empty_home, HOME=str(user_home)), capture_output=True,
        text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    notice = [line for line in result.stderr.splitlines() if "CoNLL-2002" in line]
    assert len(notice) == 1 and "Traceback" not in result.stderr
    assert "not available" in notice[0] and "sample" in notice[0]
    assert "unreachable" in notice[0] and "http://127.0.0.1:9/conll2002/esp.train" in notice[0]
    assert "UD English EWT sample: 419 training sentences" in result.stdout
    assert "part-of-speech accuracy" in result.stdout and "relation accuracy" in result.stdout
    assert list(elsewhere.iterdir()) == []
    assert not empty_home.exists() and not (user_home / "skcrf_data").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_checks_the_data_first_and_compiles_nothing_ahead(tmp_path):
    """``make demo`` on a machine with no corpus, no network and an empty home: exit 0."""
    user_home = tmp_path / "user"
    user_home.mkdir()
    env = environment(tmp_path / "data", HOME=str(user_home))
    # this environment's python stands in for .venv's, which make takes as up to date
    make = ["make", "--no-print-directory", "-o", ".venv/.installed", f"PY={sys.executable}"]
    recipe = subprocess.run(make + ["-n", "demo"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=60).stdout
    assert "warmup" not in recipe  # the kernels it uses compile as it uses them, saying so
    assert "--sample-if-unavailable" in recipe
    result = subprocess.run(make + ["demo", "DEMO_ARGS=--max-iter 3"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "UD English EWT sample" in result.stdout
    assert sum("CoNLL-2002 is not available" in line
               for line in result.stderr.splitlines()) == 1
    assert not (user_home / "skcrf_data").exists()
