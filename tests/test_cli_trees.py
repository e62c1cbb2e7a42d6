"""skcrf train --structure tree on CoNLL-U, and evaluate / tag with such a model."""

import pytest

from skcrf._persistence import load_model
from tests.test_cli import _run

_SENTENCES = [
    # (form, upos, head, deprel): "big dogs bark", "the cat sleeps", ...
    [("big", "ADJ", 2, "amod"), ("dogs", "NOUN", 3, "nsubj"), ("bark", "VERB", 0, "root")],
    [("the", "DET", 2, "det"), ("cat", "NOUN", 3, "nsubj"), ("sleeps", "VERB", 0, "root")],
    [("small", "ADJ", 2, "amod"), ("birds", "NOUN", 3, "nsubj"), ("sing", "VERB", 0, "root"),
     ("loudly", "ADV", 3, "advmod")],
]


def _conllu(sentences):
    lines = []
    for k, words in enumerate(sentences):
        lines.append(f"# sent_id = {k}")
        for i, (form, upos, head, deprel) in enumerate(words, 1):
            lines.append("\t".join([str(i), form, form, upos, "_", "_", str(head),
                                    deprel + (":sub" if deprel == "amod" else ""), "_", "_"]))
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def treebank(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trees")
    path = folder / "train.conllu"
    path.write_text(_conllu(_SENTENCES * 6), encoding="utf-8")
    model = folder / "tree.skcrf"
    status, out, err = _run("train", path, "--structure", "tree", "--model", model,
                            "--max-iter", 60, "--n-jobs", 1, "--alpha", 0.01,
                            "--transition-features", "col1=,head:col1=")
    assert status == 0, err
    return {"folder": folder, "train": path, "model": model, "out": out}


def test_train_reads_conllu_and_saves_a_tree_pipeline(treebank):
    assert "18 sentences, 60 words, 5 labels of deprel" in treebank["out"]
    pipe, metadata = load_model(treebank["model"], return_metadata=True)
    crf = pipe[-1]
    assert type(crf).__name__ == "TreeCRF"
    assert crf.transition_features == ["col1=", "head:col1="]
    assert crf.transition_feature_coef_.shape[0] == crf.n_features_in_
    assert sorted(crf.classes_) == ["advmod", "amod", "det", "nsubj", "root"]  # no subtypes
    assert metadata["conllu"] == {"token_columns": ["form", "upos"], "label": "deprel",
                                  "deprel_subtypes": False}


def test_evaluate_and_tag_read_conllu(treebank):
    status, out, err = _run("evaluate", "--model", treebank["model"], treebank["train"])
    assert status == 0, err
    assert "token accuracy: 1.0000" in out
    status, out, err = _run("tag", "--model", treebank["model"], treebank["train"],
                            "--marginals")
    assert status == 0, err
    first = out.split("\n\n")[0].splitlines()
    assert [line.split("\t")[:4] for line in first] == [
        ["big", "ADJ", "2", "amod"], ["dogs", "NOUN", "3", "nsubj"],
        ["bark", "VERB", "0", "root"]]
    assert all(0.5 < float(line.split("\t")[4]) <= 1.0 for line in first)


def test_label_and_token_columns(treebank):
    model = treebank["folder"] / "upos.skcrf"
    status, out, err = _run("train", treebank["train"], "--structure", "tree", "--label",
                            "upos", "--model", model, "--max-iter", 20, "--n-jobs", 1,
                            "--deprel-subtypes")
    assert status == 0, err
    pipe, metadata = load_model(model, return_metadata=True)
    assert metadata["conllu"]["token_columns"] == ["form"]
    assert set(pipe[-1].classes_) == {"ADJ", "ADV", "DET", "NOUN", "VERB"}


@pytest.mark.parametrize("options, message", [
    (["--structure", "tree", "--columns", "0,1"], "--columns do not apply to --structure tree"),
    (["--structure", "tree", "--order", "2"], "--order do not apply"),
    (["--label", "upos"], "--label apply to --structure tree"),
    (["--structure", "tree", "--label", "nothing"], "nothing"),
    (["--structure", "tree", "--token-columns", "form,deprel"], "holds the label column"),
])
def test_bad_options_are_one_line(treebank, options, message):
    status, out, err = _run("train", treebank["train"], "--model",
                            treebank["folder"] / "bad.skcrf", "--n-jobs", 1, *options)
    assert status != 0
    assert message in err and "Traceback" not in err


def test_a_file_that_is_not_conllu_is_named(treebank):
    path = treebank["folder"] / "columns.txt"
    path.write_text("big JJ B-NP\ndogs NNS I-NP\n", encoding="utf-8")
    status, out, err = _run("train", path, "--structure", "tree", "--model",
                            treebank["folder"] / "bad.skcrf")
    assert status != 0 and "columns.txt" in err and "CoNLL-U" in err


def test_evaluate_on_an_empty_conllu_file_says_so(treebank):
    # issue 43, item 25: scikit-learn's message about an empty array
    empty = treebank["folder"] / "empty.conllu"
    empty.write_text("", encoding="utf-8")
    status, _, err = _run("evaluate", "--model", treebank["model"], empty)
    assert status != 0
    assert "empty.conllu: no word to evaluate" in err and "Traceback" not in err
