"""``skcrf tag`` and ``skcrf evaluate`` stream: bounded batches, the output of one pass.

The memory test measures Python and numpy allocations with tracemalloc
in-process, on files of one and four copies of the same sentences: flat, not
a timed or absolute bound. ``benchmarks/bench_cli_memory.py`` measures the
whole process on CoNLL-2000.
"""

import tracemalloc

import numpy as np
import pytest

from skcrf._cli import _columns, _commands
from skcrf._cli._scores import StreamingScores
from skcrf.metrics import (
    flat_accuracy_score,
    flat_classification_report,
    span_classification_report,
)
from tests.test_cli import _blocks, _run, _write, data, trained  # noqa: F401 - fixtures


@pytest.fixture
def batch_tokens(monkeypatch):
    """Set the batch size of the commands."""
    def set_batch_tokens(n):
        monkeypatch.setattr(_columns, "BATCH_TOKENS", n)
    return set_batch_tokens


@pytest.fixture
def labelled_sizes(monkeypatch):
    """The number of sequences of every batch the model labels."""
    sizes = []
    label = _commands._Labeller.__call__

    def recording(self, X, *numeric):
        sizes.append(len(X))
        return label(self, X, *numeric)

    monkeypatch.setattr(_commands._Labeller, "__call__", recording)
    return sizes


def _peak_bytes(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", ["tag", "evaluate"])
def test_memory_does_not_grow_with_the_file(data, trained, tmp_path, batch_tokens, command):
    """Four times the file, about the same peak (reading it whole took 18-50x its size)."""
    batch_tokens(300)
    sentences = data["test_sentences"]
    files = [_write(tmp_path / f"{n}.txt", sentences * 40 * n) for n in (1, 4)]
    argv = [command, "--model", trained["model"]]
    if command == "tag":
        argv += ["--output", tmp_path / "out.txt"]
    _run(*argv, files[0])  # load and compile outside the measurement
    peaks = []
    for path in files:
        peaks.append(_peak_bytes(lambda path=path: _run(*argv, path)))
    assert peaks[1] < 1.3 * peaks[0], peaks


def test_tag_in_batches_writes_what_one_pass_writes(data, trained, batch_tokens,
                                                    labelled_sizes):
    argv = ["tag", "--model", trained["model"], data["test"], "--marginals"]
    batch_tokens(10**9)
    _, whole, _ = _run(*argv)
    assert labelled_sizes == [len(data["test_sentences"])]
    labelled_sizes.clear()
    batch_tokens(10)  # sentences have 5 to 7 tokens: two per batch
    status, batched, err = _run(*argv)
    assert status == 0 and err == ""
    assert batched == whole
    assert labelled_sizes == [2] * (len(data["test_sentences"]) // 2)


def test_evaluate_in_batches_prints_what_the_metrics_give(data, trained, batch_tokens,
                                                          labelled_sizes):
    batch_tokens(10)
    status, out, err = _run("evaluate", "--model", trained["model"], data["test"])
    assert status == 0, err
    assert len(labelled_sizes) == len(data["test_sentences"]) // 2
    batch_tokens(10**9)
    assert _run("evaluate", "--model", trained["model"], data["test"])[1] == out


def test_a_failure_half_way_leaves_no_output(data, trained, tmp_path, batch_tokens):
    """The output is written beside and moved over --output at the end only."""
    batch_tokens(10)
    ragged = tmp_path / "ragged.txt"
    text = data["test"].read_text(encoding="utf-8")
    ragged.write_text(text + "\nextra NP B-PER too many\n", encoding="utf-8")
    output = tmp_path / "tagged.txt"
    output.write_text("an older output\n", encoding="utf-8")
    status, out, err = _run("tag", "--model", trained["model"], ragged, "--output", output)
    assert status == 1 and out == ""
    assert "expected 3 columns as on line 3, found 5" in err
    assert output.read_text(encoding="utf-8") == "an older output\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ragged.txt", "tagged.txt"]
    status, _, _ = _run("tag", "--model", trained["model"], data["test"], "--output", output)
    assert status == 0 and output.read_text(encoding="utf-8").startswith(text.split()[3])


def test_a_tag_outside_the_scheme_is_named_by_its_sequence_in_the_file(data, trained,
                                                                       tmp_path, batch_tokens):
    batch_tokens(10)
    sentences = [list(sentence) for sentence in data["test_sentences"]]
    sentences[9][0] = (*sentences[9][0][:2], "S-PER")
    path = _write(tmp_path / "bioes.txt", sentences)
    status, _, err = _run("evaluate", "--model", trained["model"], path)
    assert status == 1
    assert "'S-PER' (sequence 9, token 0) is not a IOB2 tag" in err


def test_the_encoding_is_guessed_from_the_whole_file(data, trained, tmp_path, batch_tokens):
    """A byte that is not UTF-8 in the last sentence makes the whole file Latin-1."""
    batch_tokens(10)
    sentences = data["test_sentences"] + [[("Bogotá", "NP", "B-LOC"), (".", "Fp", "O")]]
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"\n\n".join("\n".join(" ".join(row) for row in sentence).encode(
        "latin-1") for sentence in sentences) + b"\n")
    output = tmp_path / "out.txt"
    status, _, err = _run("tag", "--model", trained["model"], path, "--output", output)
    assert status == 0, err
    blocks = _blocks(output.read_bytes().decode("latin-1"))
    assert blocks[-1][0][:3] == ["Bogotá", "NP", "B-LOC"]


def test_a_byte_order_mark_is_not_part_of_the_first_word(data, trained, tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + data["test"].read_bytes())
    _, expected, _ = _run("tag", "--model", trained["model"], data["test"])
    status, out, _ = _run("tag", "--model", trained["model"], path)
    assert status == 0 and out == expected


# --------------------------------------------------------------------------
# The counts give the reports of the metrics on the whole file
# --------------------------------------------------------------------------


def _random_labels(rng, n_sequences, labels):
    lengths = rng.integers(0, 8, n_sequences)
    return [list(rng.choice(labels, size=n)) for n in lengths]


@pytest.mark.parametrize("true_labels, predicted_labels", [
    (["O", "B-PER", "I-PER", "B-LOC"], ["O", "B-PER", "I-PER", "B-LOC"]),
    (["O", "B-PER", "I-PER"], ["O", "B-PER", "I-PER", "B-ORG", "I-LOC"]),
    (["B-PER", "I-PER", "B-LOC"], ["B-PER", "I-PER", "B-LOC"]),  # no O: accuracy row
    (["B-PER", "I-PER"], ["O", "B-PER"]),  # O only predicted: micro avg row
    (["O"], ["O", "B-MISC"]),  # only O is true: every label in the token report
])
@pytest.mark.parametrize("seed", range(3))
def test_streaming_scores_equal_the_metrics(true_labels, predicted_labels, seed):
    rng = np.random.default_rng(seed)
    y_true = _random_labels(rng, 40, true_labels)
    y_pred = [list(rng.choice(predicted_labels, size=len(labels))) for labels in y_true]
    y_pred = [[t if rng.random() < 0.6 and t in predicted_labels else p
               for t, p in zip(true, pred)] for true, pred in zip(y_true, y_pred)]
    scores = StreamingScores("IOB2")
    cuts = np.sort(rng.choice(np.arange(1, 40), size=5, replace=False)).tolist()
    for start, stop in zip([0] + cuts, cuts + [40]):
        scores.add(y_true[start:stop], y_pred[start:stop])
    assert scores.accuracy() == flat_accuracy_score(y_true, y_pred)
    assert scores.n_sequences == 40 and scores.n_tokens == sum(map(len, y_true))
    labels = sorted({label for labels in y_true for label in labels} - {"O"})
    assert scores.token_report(digits=4) == flat_classification_report(
        y_true, y_pred, labels=labels or None, digits=4, zero_division=0.0)
    try:
        expected = span_classification_report(y_true, y_pred, digits=4, zero_division=0.0)
    except ValueError:
        with pytest.raises(ValueError, match="no span"):
            scores.span_report(digits=4)
    else:
        assert scores.span_report(digits=4) == expected
