"""The examples (``make demo`` runs conll2002_ner.py) from another working directory.

Each script runs in a subprocess whose working directory is an empty temporary
folder, on a small synthetic corpus in a temporary data home, so that nothing
may depend on being started from the repository. That the scripts print one
line when the data is missing and cannot be downloaded is
``tests/test_fetchers.py::test_examples_without_data_or_network_print_one_line``.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

NAMES = ["Pedro", "Ana", "Luis", "Marta"]
CITIES = ["Madrid", "Lima", "Quito"]
VERBS = ["vive", "trabaja", "llega"]


def _ner_sentences(rng, n):
    """(word, POS, label) rows of CoNLL-2002: a person, a verb, 'en', a city."""
    return [[(rng.choice(NAMES), "NP", "B-PER"), (rng.choice(VERBS), "VMI", "O"),
             ("en", "SP", "O"), (rng.choice(CITIES), "NP", "B-LOC"), (".", "Fp", "O")]
            for _ in range(n)]


def _chunk_sentences(rng, n):
    """(word, POS, chunk) rows of CoNLL-2000: a noun phrase, a verb phrase, a noun phrase."""
    return [[("The", "DT", "B-NP"), (rng.choice(["cat", "dog"]), "NN", "I-NP"),
             (rng.choice(["saw", "ate"]), "VBD", "B-VP"), ("a", "DT", "B-NP"),
             (rng.choice(["bird", "fish"]), "NN", "I-NP"), (".", ".", "O")]
            for _ in range(n)]


def _write(path, sentences):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("".join(" ".join(row) + "\n" for row in sentence) + "\n"
                            for sentence in sentences), encoding="utf-8")


@pytest.mark.parametrize("script, files, make, classes", [
    ("conll2002_ner.py", ("conll2002/esp.train", "conll2002/esp.testb"), _ner_sentences,
     ("B-PER", "B-LOC")),
    ("conll2000_chunking.py", ("conll2000/train.txt", "conll2000/test.txt"), _chunk_sentences,
     ("B-NP", "B-VP")),
])
def test_example_runs_from_another_working_directory(tmp_path, script, files, make, classes):
    rng = np.random.default_rng(0)
    home = tmp_path / "data"
    for name, n in zip(files, (40, 10)):
        _write(home / name, make(rng, n))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # no download may be tried: the files are there; and the skcrf imported is
    # this checkout's, whatever the environment has installed
    env = dict(os.environ, SKCRF_DATA=str(home), SKCRF_DATA_URL="http://127.0.0.1:9",
               no_proxy="*", NO_PROXY="*",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--max-iter", "5"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"from {home}: 40 training sentences" in result.stdout
    assert "trained in" in result.stdout and "F1:" in result.stdout
    assert all(label in result.stdout for label in classes)
    assert list(elsewhere.iterdir()) == []  # it wrote nothing where it was started
