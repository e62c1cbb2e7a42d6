"""The examples (``make demo`` runs conll2002_ner.py) from another working directory.

Each script runs in a subprocess whose working directory is an empty temporary
folder, on a small synthetic corpus in a temporary data home, so that nothing
may depend on being started from the repository. That the scripts print one
line when the data is missing and cannot be downloaded is
``tests/test_fetchers.py::test_examples_without_data_or_network_print_one_line``;
that they run inside the documentation build (sphinx-gallery) is
``tests/test_docs.py``.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._corpora import write_example_corpora

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(path.name for path in (REPO / "examples").glob("*.py"))

# script -> (corpus it reads, labels its report and plots name)
EXPECTED = {
    "conll2002_ner.py": ("conll2002", ("B-PER", "B-LOC")),
    "conll2000_chunking.py": ("conll2000", ("B-NP", "B-VP")),
}


def test_every_example_is_tested_here():
    assert EXAMPLES == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs_from_another_working_directory(tmp_path, script):
    corpus, classes = EXPECTED[script]
    home = write_example_corpora(tmp_path / "data", [corpus])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # no download may be tried: the files are there; the skcrf imported is this
    # checkout's, whatever the environment has installed; the plots go nowhere
    env = dict(os.environ, SKCRF_DATA=str(home), SKCRF_DATA_URL="http://127.0.0.1:9",
               no_proxy="*", NO_PROXY="*", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--max-iter", "5"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"from {home}: 40 training sentences" in result.stdout
    assert "trained in" in result.stdout and "F1:" in result.stdout
    assert all(label in result.stdout for label in classes)
    assert "Traceback" not in result.stderr
    assert list(elsewhere.iterdir()) == []  # it wrote nothing where it was started
