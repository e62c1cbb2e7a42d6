"""Hostile and damaged model files, and saves that fail halfway (issue 15).

A shared model file must not be able to run code when loaded with the
defaults, and a damaged one must be refused with a ValueError naming it,
never loaded as a different model and never crash the interpreter. A save
that fails must leave the previous model file whole.
"""

import errno
import io
import json
import os
import pickle
import sys
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

import skcrf._persistence._file as persistence
from skcrf import (CRFClassifier, ModelVersionWarning, SequenceVectorizer, TokenFeaturizer,
                   load_model, save_model)
from tests import _model_files as model_files

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

X = [[("Pedro", "NP"), ("vive", "VMI"), ("en", "SP"), ("Madrid", "NP")],
     [("Ana", "NP"), ("viaja", "VMI"), ("a", "SP"), ("Lima", "NP"), (".", "Fp")]]
y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "O", "B-LOC", "O"]]


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(alpha=0.1, max_iter=30, n_jobs=1)).fit(X, y)


@pytest.fixture(scope="module")
def saved(pipe):
    buffer = io.BytesIO()
    save_model(pipe, buffer, metadata={"layout": {"separator": " "}})
    return buffer.getvalue()


class _Payload:
    """Unpickling this creates ``marker``: how the tests see that code ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _refused_without_running(data, marker, match):
    with pytest.raises(ValueError, match=match):
        load_model(io.BytesIO(data))
    assert not os.path.exists(marker), "loading the file ran its code"


# --- nothing from the file runs ---------------------------------------------------


def test_format_1_pickle_does_not_run(tmp_path):
    marker = tmp_path / "ran"
    header = {"format": 1, "skcrf": "0.1.0", "model": "CRFClassifier", "metadata": {}}
    data = (b"skcrf-model\n" + json.dumps(header).encode() + b"\n"
            + pickle.dumps(_Payload(marker)))
    _refused_without_running(data, marker, "pickle-based model format 1.*allow_pickle=True")
    # the payload is live: the opt-in really unpickles it
    with pytest.warns(UserWarning, match="can run arbitrary code"):
        load_model(io.BytesIO(data), allow_pickle=True)
    assert marker.exists()


def test_pickle_payload_with_a_valid_checksum_does_not_run(saved, tmp_path):
    marker = tmp_path / "ran"
    header, _ = model_files.split(saved)
    header["payload"] = {"encoding": "pickle", "size": 0}
    data = model_files.model_file(header, pickle.dumps(_Payload(marker)))
    _refused_without_running(data, marker, "saved as a pickle.*allow_pickle=True")


def _npy(array, allow_pickle=False):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def test_object_arrays_in_the_archive_do_not_run(saved, tmp_path):
    """The slots of the safe format: an .npy member holding a pickled object array,
    a member that is a bare pickle, and the same under a name the description uses."""
    marker = tmp_path / "ran"
    evil = np.empty(1, dtype=object)
    evil[0] = _Payload(marker)
    first_array = sorted(name for name in model_files.members(model_files.split(saved)[1])
                         if name.endswith(".npy"))[0]
    for content in (_npy(evil, allow_pickle=True), pickle.dumps(_Payload(marker))):
        data = model_files.rewritten(saved, **{first_array.replace(".", "__"): content})
        _refused_without_running(data, marker, r"cannot load the model: .*member a\d+\.npy "
                                                   r"is unreadable")
    # a description naming an object-array member
    def point_at_it(tree):
        tree["arrays"]["a999"] = {"kind": "npy"}
        tree["model"]["attributes"]["extra_"] = {"$type": "ndarray", "ref": "a999"}

    data = model_files.rewritten(saved, point_at_it, a999__npy=_npy(evil, allow_pickle=True))
    _refused_without_running(data, marker, "at model.extra_: member a999.npy is unreadable "
                                           r"\(ValueError: it holds Python objects\)")


@pytest.mark.parametrize("node, match", [
    ({"$type": "estimator", "class": "os.system", "params": {"command": "x"},
      "attributes": {}}, "'os.system' is not an skcrf estimator class"),
    ({"$type": "estimator", "class": "builtins.eval", "params": {}, "attributes": {}},
     "not an skcrf estimator class"),
    ({"$type": "function", "ref": "os:system"}, "does not import code named by a model"),
    ({"$type": "builtin_type", "name": "eval"}, "not an allowed type"),
    ({"$type": "reduce", "callable": "os:system"}, "unknown node type 'reduce'"),
    ({"$type": "scalar", "dtype": "O", "value": 1}, "dtype object is not allowed"),
    ({"$type": "dtype", "dtype": "O"}, "dtype object is not allowed"),
    ({"$type": "sparse", "class": "lil_matrix"}, "not an allowed sparse class"),
    ({"$type": "estimator", "class": "skcrf.CRFClassifier", "params": {"evil": 1},
      "attributes": {}}, "does not take these parameters"),
    ({"$type": "estimator", "class": "skcrf.CRFClassifier", "params": {},
      "attributes": {"__class__": 1}}, "'__class__' is not an attribute of a fitted"),
])
def test_descriptions_that_name_code_are_refused(saved, node, match):
    def inject(tree):
        tree["model"]["attributes"]["extra_"] = node

    with pytest.raises(ValueError, match=match):
        load_model(io.BytesIO(model_files.rewritten(saved, inject)))


def test_functions_are_imported_only_with_the_opt_in(saved, tmp_path, monkeypatch):
    """A reference to a module whose import has a side effect: nothing is imported."""
    marker = tmp_path / "imported"
    (tmp_path / "skcrf_test_evil_module.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef run(token):\n    return {{}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def refer(tree):
        tree["model"]["params"]["steps"][0]["items"][1]["params"]["custom"] = {
            "$type": "function", "ref": "skcrf_test_evil_module:run"}

    data = model_files.rewritten(saved, refer)
    with pytest.raises(ValueError, match="'skcrf_test_evil_module:run'; skcrf does not "
                                         "import code"):
        load_model(io.BytesIO(data))
    assert not marker.exists() and "skcrf_test_evil_module" not in sys.modules
    model = load_model(io.BytesIO(data), allow_pickle=True)
    assert marker.exists() and model[0].custom.__module__ == "skcrf_test_evil_module"
    monkeypatch.delitem(sys.modules, "skcrf_test_evil_module")


@pytest.mark.parametrize("change", ["compressed", "extra member", "bad sparse",
                                    "string id", "deep nesting", "not a zip"])
def test_malformed_archives_are_refused(saved, change):
    if change == "compressed":
        header, payload = model_files.split(saved)
        data = model_files.model_file(header, model_files.archive(
            model_files.members(payload), compression=zipfile.ZIP_DEFLATED))
        match = "is compressed"
    elif change == "extra member":
        data = model_files.rewritten(saved, **{"payload__pkl": b"\x80\x05."})
        match = "unexpected member 'payload.pkl'"
    elif change == "bad sparse":
        def out_of_range(tree):
            for ref in ("a997", "a998", "a999"):
                tree["arrays"][ref] = {"kind": "npy"}
            tree["model"]["attributes"]["extra_"] = {
                "$type": "sparse", "class": "csr_matrix", "shape": [1, 2],
                "data": "a997", "indptr": "a998", "indices": "a999"}

        data = model_files.rewritten(saved, out_of_range, a997__npy=_npy(np.array([1.0])),
                                     a998__npy=_npy(np.array([0, 1])),
                                     a999__npy=_npy(np.array([5])))
        match = r"at model.extra_: ValueError: .*ind(ex|ices).* must be < 2"
    elif change == "string id":
        def big_id(tree):
            tree["arrays"]["a999"] = {"kind": "npy"}
            tree["model"]["attributes"]["extra_"] = {"$type": "str_list", "ids": "a999"}

        data = model_files.rewritten(saved, big_id, a999__npy=_npy(np.array([10**9])))
        match = "string ids outside the table"
    elif change == "deep nesting":
        header, payload = model_files.split(saved)
        contents = model_files.members(payload)
        contents["model.json"] = (contents["model.json"][:-2]
                                  + b',"extra_":' + b"[" * 100_000 + b"]" * 100_000 + b"}}")
        data = model_files.model_file(header, model_files.archive(contents))
        match = "invalid"
    else:
        header, _ = model_files.split(saved)
        data = model_files.model_file(header, b"not a zip archive")
        match = "the model archive is invalid"
    with pytest.raises(ValueError, match=match):
        load_model(io.BytesIO(data))


# --- damaged files ----------------------------------------------------------------


def _fields_outside_the_checksum(data):
    """Byte ranges of the header's version strings, which the checksum leaves out."""
    line_start = data.index(b"\n") + 1
    line = data[line_start:data.index(b"\n", line_start)]
    ranges = []
    for field in persistence._ENVIRONMENT:
        key = f'"{field}": "'.encode()
        start = line.index(key) + len(key)
        ranges.append(range(line_start + start, line_start + line.index(b'"', start)))
    return ranges


def test_flipped_bytes_are_refused_or_change_nothing(pipe, saved):
    """300 random flips: each one a ValueError naming the file, or (in a version
    string, outside the checksum) the very same model. Before: 208 of 300
    payload flips loaded silently, and one crashed the interpreter."""
    rng = np.random.default_rng(15)
    versions = _fields_outside_the_checksum(saved)
    expected = [labels.tolist() for labels in pipe.predict(X)]
    expected_marginals = [m.tobytes() for m in pipe.predict_proba(X)]
    refused = same = 0
    for position in rng.integers(0, len(saved), size=300):
        data = bytearray(saved)
        data[position] ^= int(rng.integers(1, 256))
        buffer = io.BytesIO(bytes(data))
        buffer.name = "flipped.skcrf"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ModelVersionWarning)
                model = load_model(buffer)
        except ValueError as error:
            assert "flipped.skcrf" in str(error), str(error)
            refused += 1
            continue
        assert any(position in versions_range for versions_range in versions), position
        assert [labels.tolist() for labels in model.predict(X)] == expected
        assert [m.tobytes() for m in model.predict_proba(X)] == expected_marginals
        same += 1
    assert refused + same == 300 and refused > 250


def test_flipped_payload_bytes_are_all_refused(saved):
    header_end = saved.index(b"\n", saved.index(b"\n") + 1) + 1
    rng = np.random.default_rng(0)
    for position in rng.integers(header_end, len(saved), size=300):
        data = bytearray(saved)
        data[position] ^= int(rng.integers(1, 256))
        with pytest.raises(ValueError, match="is damaged: its SHA-256 checksum"):
            load_model(io.BytesIO(bytes(data)))


def test_truncated_files_are_refused(saved):
    for size in [*range(0, 600), *range(600, len(saved), 7)]:
        buffer = io.BytesIO(saved[:size])
        buffer.name = "cut.skcrf"
        with pytest.raises(ValueError, match="cut.skcrf"):
            load_model(buffer)


def test_a_damaged_size_field_allocates_nothing_huge(saved):
    header, payload = model_files.split(saved)
    header["payload"]["size"] = 2**62
    data = (b"skcrf-model\n" + json.dumps(header).encode() + b"\n" + payload)
    with pytest.raises(ValueError, match="is truncated: its header announces a "
                                         f"{2**62}-byte model, but only {len(payload)}"):
        load_model(io.BytesIO(data))


# --- a failed save leaves the old file ----------------------------------------------


class _FailingFile:
    """A file that accepts ``budget`` bytes, then fails as a full disk does."""

    def __init__(self, handle, budget, error):
        self.handle, self.budget, self.error = handle, budget, error

    def write(self, data):
        if len(data) > self.budget:
            self.handle.write(data[:self.budget])
            self.budget = 0
            raise self.error
        self.budget -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   KeyboardInterrupt()])
@pytest.mark.parametrize("budget", [0, 100, 5000])
def test_a_write_failing_midway_keeps_the_old_model(pipe, tmp_path, monkeypatch, error,
                                                    budget):
    path = tmp_path / "model.skcrf"
    save_model(pipe[-2:], path)  # an older model to keep
    before = path.read_bytes()
    real_open = open

    def failing_open(*args, **kwargs):
        return _FailingFile(real_open(*args, **kwargs), budget, error)

    monkeypatch.setattr(persistence, "open", failing_open, raising=False)
    with pytest.raises(type(error)):
        save_model(pipe, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.skcrf"]  # no temporary file
    load_model(path)
    # and with nothing to keep, nothing is left
    fresh = tmp_path / "new.skcrf"
    monkeypatch.setattr(persistence, "open", failing_open, raising=False)
    with pytest.raises(type(error)):
        save_model(pipe, fresh)
    assert not fresh.exists() and len(list(tmp_path.iterdir())) == 1


def test_a_failure_before_the_rename_keeps_the_old_model(pipe, tmp_path, monkeypatch):
    path = tmp_path / "model.skcrf"
    save_model(pipe[-2:], path)
    before = path.read_bytes()

    def fail(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(persistence.os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output"):
        save_model(pipe, path)
    assert path.read_bytes() == before and len(list(tmp_path.iterdir())) == 1


def test_the_replaced_file_keeps_its_mode_and_links_are_followed(pipe, tmp_path):
    path = tmp_path / "model.skcrf"
    save_model(pipe, path)
    with open(tmp_path / "plain", "wb"):
        pass
    # a new file gets the mode open() would give it (the umask applies)
    assert path.stat().st_mode == (tmp_path / "plain").stat().st_mode
    path.chmod(0o640)
    save_model(pipe, path)
    assert path.stat().st_mode & 0o777 == 0o640
    link = tmp_path / "current.skcrf"
    link.symlink_to(path)
    save_model(pipe[-2:], link)
    assert link.is_symlink() and len(load_model(path)) == 2
