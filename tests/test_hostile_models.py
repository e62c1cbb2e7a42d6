"""Model files that lie about their arrays (issue 32, item 1).

Over 1,000 random edits of saved models of every estimator type, each with
a recomputed checksum: a shape changed (a ``coef_`` cut to one row, a
transposed matrix), a dtype changed (float32, big-endian, int), a value
changed (NaN, infinities, indices of -10**9 or 10**6) or a number of the
description changed (``n_features_in_``, a sparse matrix's shape, a
vocabulary index). Each must be refused by ``load_model`` with a ValueError
naming the file, or load and predict correctly: the probability of its
Viterbi labelling, its marginals and its n-best lists are those of brute
force over every labelling with the loaded weights. The predictions run in
child processes, many models per process: the kernels index without bounds
checks, and a model that got past the loader could crash the interpreter.
"""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skcrf import load_model
from tests import _hostile

EDITS_PER_MODEL = 90
#: The models of issue 43's surfaces (online state, pruner, patterns, hasher, gazetteer):
#: 1,000 edits among them
EDITS_PER_NEW_MODEL = {"chain-online-sgd": 300, "chain-online-arow": 250,
                       "chain-pruned": 250, "hasher-pipeline": 200,
                       "hasher-wide-pipeline": 150, "gazetteer-featurizer": 200,
                       "gazetteer-pipeline": 200}
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def saved():
    return _hostile.saved_models()


def _run_children(manifest, tmp_path, n_children=2):
    """Outcome of each manifest entry, checked in ``n_children`` child processes."""
    outcomes = {}
    parts = [manifest[k::n_children] for k in range(n_children)]
    processes = []
    for k, part in enumerate(parts):
        path = tmp_path / f"manifest{k}.json"
        path.write_text(json.dumps(part))
        processes.append((part, subprocess.Popen(
            [sys.executable, "-m", "tests._hostile", str(path)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for part, process in processes:
        out, err = process.communicate(timeout=1200)
        started = None
        for line in out.splitlines():
            word, index, *rest = line.split(" ", 2)
            if word == "START":
                started = int(index)
            else:
                entry = part[int(index)]
                outcomes[entry["id"]] = (entry["what"], rest[0] if rest else "")
                started = None
        if process.returncode != 0:
            crashed = part[started]["what"] if started is not None else "?"
            pytest.fail(f"a child process died (status {process.returncode}) checking "
                        f"{crashed}: {err[-2000:]}")
    return outcomes


def test_edited_model_files_are_refused_or_predict_correctly(saved, tmp_path):
    rng = np.random.default_rng(32)
    manifest, refused, counts, gazetteer_edits = [], 0, {}, 0
    for name, (data, kind) in saved.items():
        original = tmp_path / f"{name}.skcrf"
        original.write_bytes(data)
        n_edits = EDITS_PER_NEW_MODEL.get(name, EDITS_PER_MODEL)
        always = "gazetteer" if name.startswith("gazetteer") else None
        for k, (what, edited) in enumerate(_hostile.edited_files(data, rng, n_edits,
                                                                 always)):
            label = f"{name}: {what}"
            counts[name] = counts.get(name, 0) + 1
            gazetteer_edits += "gazetteer" in what
            buffer = io.BytesIO(edited)
            buffer.name = f"{name}-{k}.skcrf"
            try:
                load_model(buffer)
            except ValueError as error:
                assert buffer.name in str(error), (label, str(error))
                refused += 1
                continue
            path = tmp_path / buffer.name
            path.write_bytes(edited)
            manifest.append({"id": len(manifest), "what": label, "path": str(path), "kind": kind,
                             "reference": str(original) if name in (
                                 "vectorizer", "featurizer", "gazetteer-featurizer")
                             else None})
    total = sum(counts.values())
    assert total >= 1000 and all(n >= 60 for n in counts.values()), counts
    assert sum(counts[name] for name in EDITS_PER_NEW_MODEL) >= 1000, counts
    # the gazetteer's path and entries (in both models, each edit of them)
    assert gazetteer_edits >= 100, gazetteer_edits
    outcomes = _run_children(manifest, tmp_path)
    failed = [f"{what}: {outcome}" for what, outcome in outcomes.values()
              if outcome not in ("ok", "refused")]
    assert not failed, "\n".join(failed)
    assert len(outcomes) == len(manifest)
    print(f"{total} edits ({gazetteer_edits} of a gazetteer): {refused} refused at load, {len(manifest)} loaded, of which "
          f"{sum(o == 'refused' for _, o in outcomes.values())} refused by predict or "
          f"transform with a clear error")


# --- the edits the review found, one by one ----------------------------------------------------

def _edited(data, attribute_path, change):
    """``data`` with the array at ``attribute_path`` of the description changed."""
    from tests import _model_files as model_files

    header, payload = model_files.split(data)
    contents = model_files.members(payload)
    node = json.loads(contents["model.json"])["model"]
    for key in attribute_path:
        node = node[key]
    if isinstance(node, dict) and node.get("$type") in ("ndarray", "int_list"):
        name = f"{node['ref']}.npy"
        array = np.lib.format.read_array(io.BytesIO(contents[name]))
        contents[name] = _hostile._npy(change(array))
    else:  # a JSON value, or a node edited as a whole
        tree = json.loads(contents["model.json"])
        _hostile._set(tree["model"], attribute_path, change(node))
        contents["model.json"] = json.dumps(tree).encode()
    return model_files.model_file(header, model_files.archive(contents))


def _first_set_to(value):
    def change(array):
        array = array.astype(np.int64)
        array[0] = value
        return array
    return change


@pytest.mark.parametrize("name, path, change, match", [
    ("chain", ["attributes", "coef_"], lambda a: a[:1],
     r"CRFClassifier.coef_ has shape \(1, \d+\); expected \(4, \d+\), that is "
     r"\(n_classes, n_features\) with n_classes = 4 from classes_"),
    ("chain", ["attributes", "transition_coef_"], lambda a: a[:, :3],
     r"CRFClassifier.transition_coef_ has shape \(4, 3\); expected \(4, 4\)"),
    ("chain", ["attributes", "start_coef_"], lambda a: a[:2],
     r"CRFClassifier.start_coef_ has shape \(2,\)"),
    ("chain", ["attributes", "coef_"], lambda a: a.astype(np.float32),
     r"CRFClassifier.coef_ is an array of float32 and shape .*; expected an array of "
     r"float64"),
    ("chain", ["attributes", "coef_"], lambda a: a.astype(">f8"),
     r"CRFClassifier.coef_ is an array of >f8"),
    ("chain", ["attributes", "coef_"], lambda a: np.where(a == a.max(), np.nan, a),
     r"CRFClassifier.coef_ holds nan at \(\d+, \d+\); expected finite numbers"),
    ("chain", ["attributes", "coef_"], lambda a: a * 1e9,
     r"CRFClassifier.coef_ holds .* at \(\d+, \d+\); expected weights of magnitude at most "
     r"1e\+08"),
    ("chain", ["attributes", "transition_coef_"], lambda a: a * 1e300,
     r"CRFClassifier.transition_coef_ holds .*e\+30\d at .*; expected weights of magnitude "
     r"at most 1e\+08, or -inf"),
    ("chain-bio", ["attributes", "transition_coef_"], lambda a: np.where(np.isinf(a), 0.0, a),
     r"CRFClassifier: transition_coef_\[\d, \d\] is 0.0, but allowed_transitions_\[\d, \d\] "
     r"is False"),
    ("chain", ["attributes", "n_features_in_"], lambda n: n + 1,
     r"CRFClassifier: n_features_in_ is \d+, but feature_names_ names \d+ features"),
    ("chain", ["attributes", "vectorizer_", "attributes", "vocabulary_", "values"],
     _first_set_to(-10**9),
     r"SequenceVectorizer: vocabulary_ does not map each of the \d+ names of "
     r"feature_names_ to its index"),
    ("chain", ["attributes", "vectorizer_", "attributes", "vocabulary_", "values"],
     _first_set_to(10**6), "SequenceVectorizer: vocabulary_ does not map"),
    ("chain-transition-features", ["attributes", "transition_feature_coef_", "shape"],
     lambda shape: [shape[0], shape[1] - 1],
     r"ValueError: indices must be < 15"),
    ("chain-transition-features", ["attributes", "transition_feature_coef_", "shape"],
     lambda shape: [shape[0], shape[1] + 1],
     r"CRFClassifier.transition_feature_coef_ has shape \(\d+, 17\); expected \(\d+, 16\)"),
    ("chain-order2", ["attributes", "pattern_coef_"], lambda a: a[:-1],
     r"CRFClassifier.pattern_coef_ has shape \(\d+,\); expected \(\d+,\)"),
    ("chain-order2", ["attributes", "label_patterns_"], lambda a: np.where(a == a.max(), 7, a),
     r"CRFClassifier: label pattern \d+ is \[[^]]*\]: a pattern holds"),
    ("tree", ["attributes", "root_coef_"], lambda a: a[:-1],
     r"TreeCRF.root_coef_ has shape \(3,\); expected \(4,\)"),
    ("semimarkov", ["attributes", "length_coef_"], lambda a: a[:, :1],
     r"SemiMarkovCRF.length_coef_ has shape \(3, 1\); expected \(3, 2\), that is "
     r"\(n_labels, n_lengths\) with n_labels = 3 from segment_classes_; n_lengths = 2 from "
     r"max_segment_length_"),
    ("semimarkov", ["attributes", "classes_"], lambda a: a[:-1],
     r"SemiMarkovCRF: classes_ are not the 5 tags scheme_ 'IOB2' writes"),
    ("semimarkov-order2", ["attributes", "label_patterns_"], lambda a: np.vstack([a, a[:1]]),
     r"SemiMarkovCRF.pattern_coef_ has shape"),
    ("semimarkov-order2", ["attributes", "label_patterns_"], lambda a: np.where(a >= 0, 3, a),
     r"SemiMarkovCRF: label pattern 0 is \[.*\]: a pattern holds 3 to 3 class ids in \[0, 3\)"),
    ("semimarkov-order2", ["params", "order"], lambda order: 1,
     r"SemiMarkovCRF: order=1 has no label_patterns_"),
    ("compat", ["attributes", "classes_"], lambda labels: labels[::-1],
     r"CRF: classes_ is not what estimator_ holds"),
    ("chain-cv", ["attributes", "scores_"], lambda a: a[:1, :1],
     r"CRFClassifierCV.scores_ has shape \(1, 1\); expected \(\?, 2\), that is "
     r"\(n_folds, n_alphas\) with n_alphas = 2 from alphas_"),
    ("pipeline", ["params", "steps", 2, "items", 1, "attributes", "n_features_in_"],
     lambda n: n - 1,
     r"CRFClassifier: n_features_in_ is \d+, but feature_names_ names \d+ features"),
])
def test_each_lie_is_refused_naming_the_attribute(saved, name, path, change, match):
    data = _edited(saved[name][0], path, change)
    buffer = io.BytesIO(data)
    buffer.name = "lying.skcrf"
    with pytest.raises(ValueError, match=r"lying.skcrf: cannot load the model: at model\S*: "
                                         + match):
        load_model(buffer)


def test_attributes_that_would_shadow_methods_are_refused(saved):
    """A file cannot set ``predict`` (or any name its class does not declare) (item 15)."""
    from tests import _model_files as model_files

    def shadow(tree):
        tree["model"]["attributes"]["predict"] = "not a method"

    data = model_files.rewritten(saved["chain"][0], shadow)
    with pytest.raises(ValueError, match="'predict' is not an attribute of a fitted "
                                         "CRFClassifier"):
        load_model(io.BytesIO(data))


def test_flipped_bytes_with_a_recomputed_checksum_are_refused_or_predict_correctly(
        saved, tmp_path):
    """Before: 101 of 150 such flips raised zipfile.BadZipFile, not ValueError (item 14)."""
    from tests import _model_files as model_files

    data, kind = saved["pipeline"]
    header, payload = model_files.split(data)
    rng = np.random.default_rng(14)
    manifest = []
    for k, position in enumerate(rng.integers(0, len(payload), size=200)):
        flipped = bytearray(payload)
        flipped[position] ^= int(rng.integers(1, 256))
        edited = model_files.model_file(header, bytes(flipped))
        buffer = io.BytesIO(edited)
        buffer.name = f"flip{k}.skcrf"
        try:
            load_model(buffer)
        except ValueError as error:
            assert buffer.name in str(error)
            continue
        path = tmp_path / buffer.name
        path.write_bytes(edited)
        manifest.append({"id": k, "what": f"byte {position} flipped", "path": str(path),
                         "kind": kind, "reference": None})
    outcomes = _run_children(manifest, tmp_path, n_children=1) if manifest else {}
    failed = [f"{what}: {outcome}" for what, outcome in outcomes.values()
              if outcome not in ("ok", "refused")]
    assert not failed, "\n".join(failed)


def test_an_array_declaring_more_than_it_holds_allocates_nothing(saved):
    """A header declaring 10**11 floats was a MemoryError (item 14): now a ValueError,
    before any allocation."""
    from tests import _model_files as model_files

    header, payload = model_files.split(saved["chain"][0])
    contents = model_files.members(payload)
    name = next(n for n in contents if n.endswith(".npy"))
    member = bytearray(contents[name])
    start = member.index(b"'shape': (") + len(b"'shape': (")
    stop = member.index(b")", start)
    declared = b"100000000000,"
    member[start:stop] = declared + b" " * (stop - start - len(declared))
    contents[name] = bytes(member)
    data = model_files.model_file(header, model_files.archive(contents))
    with pytest.raises(ValueError, match=r"member a\d+\.npy is unreadable \(ValueError: its "
                                         r"header declares an array of shape \(100000000000,\)"):
        load_model(io.BytesIO(data))


def test_a_member_is_read_once_and_serves_one_list(saved):
    """Before: 100 list nodes pointing at one member read it 100 times, each into a
    list of its own (+378 MiB from a 3.8 MiB file) (item 6)."""
    from tests import _model_files as model_files

    header, payload = model_files.split(saved["chain"][0])
    contents = model_files.members(payload)
    tree = json.loads(contents["model.json"])
    vocabulary = tree["model"]["attributes"]["vectorizer_"]["attributes"]["vocabulary_"]
    ref = vocabulary["keys"]["ids"]
    tree["model"]["attributes"]["loss_curve_"] = [{"$type": "str_list", "ids": ref}] * 100
    contents["model.json"] = json.dumps(tree).encode()
    data = model_files.model_file(header, model_files.archive(contents))
    with pytest.raises(ValueError, match=f"array {ref} is used twice, once as a list"):
        load_model(io.BytesIO(data))


def test_the_command_line_refuses_a_lying_model_in_one_line(saved, tmp_path):
    """``skcrf tag --marginals`` segfaulted and ``skcrf evaluate`` printed garbage with
    exit 0 on a model whose coef_ was cut to one row (item 1)."""
    data = _edited(saved["pipeline"][0], ["params", "steps", 2, "items", 1, "attributes",
                                          "coef_"], lambda a: a[:1])
    model = tmp_path / "cut.skcrf"
    model.write_bytes(data)
    text = tmp_path / "test.txt"
    text.write_text("\n\n".join("\n".join(f"{w} {p} O" for w, p in sentence)
                                for sentence in _hostile.TEST_TOKENS) + "\n")
    for argv in (["tag", "-m", str(model), "--marginals", str(text)],
                 ["evaluate", "-m", str(model), str(text)]):
        result = subprocess.run([sys.executable, "-m", "skcrf", *argv], cwd=ROOT,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.count("\n") == 1, result.stderr
        assert f"cannot load model {model}: cannot load the model: at model.steps[2][1]: " \
               f"CRFClassifier.coef_ has shape (1, " in result.stderr
