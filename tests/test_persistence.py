"""save_model / load_model: round trips, the header, version checks and the pickle opt-in."""

import io
import json
import pickle

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import skcrf
from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf._persistence import FORMAT_VERSION, ModelVersionWarning, load_model, save_model

X = [[("Pedro", "NP"), ("vive", "VMI"), ("en", "SP"), ("Madrid", "NP")],
     [("Ana", "NP"), ("viaja", "VMI"), ("a", "SP"), ("Lima", "NP"), (".", "Fp")],
     [("Luis", "NP"), ("trabaja", "VMI"), ("en", "SP"), ("Quito", "NP")]]
y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "O", "B-LOC", "O"],
     ["B-PER", "O", "O", "B-LOC"]]


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(alpha=0.1, max_iter=30, n_jobs=1)).fit(X, y)


def _same_predictions(a, b):
    for left, right in zip(a.predict(X), b.predict(X), strict=True):
        np.testing.assert_array_equal(left, right)


def _saved_bytes(model, **kwargs):
    buffer = io.BytesIO()
    save_model(model, buffer, **kwargs)
    return buffer.getvalue()


def _tampered(data, **changes):
    """``data`` with header fields replaced (None deletes a field), checksum unchanged."""
    magic, header, payload = data.split(b"\n", 2)
    fields = json.loads(header)
    fields.update(changes)
    fields = {key: value for key, value in fields.items() if value is not None}
    return b"\n".join([magic, json.dumps(fields).encode(), payload])


def _legacy_file(model, **header):
    """A model file as skcrf 0.1 wrote it: format 1, a header, then a pickle."""
    fields = {"format": 1, "skcrf": skcrf.__version__, "sklearn": sklearn.__version__,
              "numpy": np.__version__, "python": "3.11.0", "model": type(model).__name__,
              "metadata": {}, **header}
    return b"skcrf-model\n" + json.dumps(fields).encode() + b"\n" + pickle.dumps(model)


def test_round_trip_through_a_path(pipe, tmp_path):
    path = tmp_path / "model.skcrf"
    save_model(pipe, path)
    loaded = load_model(path)
    assert loaded is not pipe
    _same_predictions(pipe, loaded)
    np.testing.assert_array_equal(loaded[-1].coef_, pipe[-1].coef_)
    np.testing.assert_array_equal(loaded[-1].transition_coef_, pipe[-1].transition_coef_)
    # a str path works as well as a Path
    assert isinstance(load_model(str(path)), type(pipe))


def test_round_trip_through_file_objects(pipe, tmp_path):
    buffer = io.BytesIO()
    save_model(pipe, buffer)
    assert not buffer.closed
    buffer.seek(0)
    _same_predictions(pipe, load_model(buffer))
    # an open binary file, positioned after other content, is read from there
    path = tmp_path / "bundle.bin"
    with open(path, "wb") as handle:
        handle.write(b"preamble")
        save_model(pipe, handle)
    with open(path, "rb") as handle:
        handle.read(len(b"preamble"))
        _same_predictions(pipe, load_model(handle))


def test_marginals_survive_the_round_trip(pipe):
    loaded = load_model(io.BytesIO(_saved_bytes(pipe)))
    for left, right in zip(pipe[-1].predict_marginals(pipe[:-1].transform(X)),
                           loaded[-1].predict_marginals(loaded[:-1].transform(X))):
        np.testing.assert_array_equal(left, right)


def test_bare_estimators_can_be_saved():
    dicts = [[{"w": word, "pos": pos} for word, pos in sentence] for sentence in X]
    crf = CRFClassifier(alpha=0.1, max_iter=30, n_jobs=1).fit(dicts, y)
    loaded = load_model(io.BytesIO(_saved_bytes(crf)))
    for left, right in zip(crf.predict(dicts), loaded.predict(dicts), strict=True):
        np.testing.assert_array_equal(left, right)
    vectorizer = SequenceVectorizer().fit(dicts)
    loaded = load_model(io.BytesIO(_saved_bytes(vectorizer)))
    np.testing.assert_array_equal(loaded.feature_names_, vectorizer.feature_names_)


def test_header_records_versions_and_metadata(pipe):
    data = _saved_bytes(pipe, metadata={"layout": {"columns": [0, 1]}})
    magic, header, _ = data.split(b"\n", 2)
    assert magic == b"skcrf-model"
    fields = json.loads(header)
    assert fields["format"] == FORMAT_VERSION
    assert fields["skcrf"] == skcrf.__version__
    assert fields["sklearn"] == sklearn.__version__
    assert fields["numpy"] == np.__version__
    assert fields["model"] == "Pipeline"
    assert fields["payload"] == {"encoding": "npz", "size": len(data.split(b"\n", 2)[2])}
    assert len(fields["sha256"]) == 64
    model, metadata = load_model(io.BytesIO(data), return_metadata=True)
    assert metadata["layout"] == {"columns": [0, 1]}
    assert metadata["saved_with"]["skcrf"] == skcrf.__version__
    assert metadata["saved_with"]["format"] == FORMAT_VERSION


def test_not_a_model_is_refused_with_the_file_name(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some text\n")
    with pytest.raises(ValueError, match=r"notes\.txt is not an skcrf model file"):
        load_model(path)
    # a plain pickle gets a hint
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="plain pickle"):
        load_model(path)
    with pytest.raises(ValueError, match="not an skcrf model"):
        load_model(io.BytesIO(b""))


def test_newer_format_is_refused_naming_both_versions(pipe, tmp_path):
    path = tmp_path / "future.skcrf"
    path.write_bytes(_tampered(_saved_bytes(pipe), format=FORMAT_VERSION + 1,
                               skcrf="99.0.0"))
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert "future.skcrf" in message
    assert f"format {FORMAT_VERSION + 1}" in message and f"up to {FORMAT_VERSION}" in message
    assert "99.0.0" in message and skcrf.__version__ in message


def test_other_skcrf_version_warns_and_loads(pipe):
    data = _tampered(_saved_bytes(pipe), skcrf="0.0.1")
    with pytest.warns(ModelVersionWarning) as record:
        loaded = load_model(io.BytesIO(data))
    assert issubclass(ModelVersionWarning, UserWarning)
    message = str(record[0].message)
    assert "0.0.1" in message and skcrf.__version__ in message
    # the warning points at the caller, not at skcrf's internals
    assert record[0].filename == __file__
    _same_predictions(pipe, loaded)


def test_same_version_loads_without_warning(pipe, recwarn):
    load_model(io.BytesIO(_saved_bytes(pipe)))
    assert not [w for w in recwarn if issubclass(w.category, ModelVersionWarning)]


@pytest.mark.parametrize("damage, match", [
    (lambda data: data.replace(b'"format": ', b'"format": "', 1), "header is corrupt"),
    (lambda data: b"skcrf-model\nnot json\n" + data.split(b"\n", 2)[2], "header is corrupt"),
    (lambda data: data[:-40], "is truncated: its header announces a"),
    (lambda data: data[:-40] + bytes(40), "is damaged: its SHA-256 checksum does not match"),
    (lambda data: _tampered(data, metadata={"layout": "changed"}), "is damaged"),
    (lambda data: _tampered(data, sha256=None), "header is corrupt"),
])
def test_corrupt_files_raise_value_error(pipe, damage, match):
    with pytest.raises(ValueError, match=match):
        load_model(io.BytesIO(damage(_saved_bytes(pipe))))


def test_what_cannot_be_saved(pipe, tmp_path):
    with pytest.raises(NotFittedError):
        save_model(CRFClassifier(), io.BytesIO())
    with pytest.raises(NotFittedError):
        save_model(make_pipeline(TokenFeaturizer(), SequenceVectorizer()), io.BytesIO())
    logistic = LogisticRegression().fit([[0.0], [1.0]], [0, 1])
    with pytest.raises(TypeError, match="got a LogisticRegression"):
        save_model(logistic, io.BytesIO())
    with pytest.raises(TypeError, match="Pipeline ending in LogisticRegression"):
        save_model(make_pipeline(FunctionTransformer(), logistic), io.BytesIO())
    with pytest.raises(TypeError, match="JSON-serializable"):
        save_model(pipe, io.BytesIO(), metadata={"array": np.zeros(2)})
    with open(tmp_path / "text.txt", "w") as handle, pytest.raises(TypeError, match="'wb'"):
        save_model(pipe, handle)


def test_pipeline_with_other_steps_needs_skops_or_the_pickle_opt_in(tmp_path):
    dicts = [[{"w": word} for word, _ in sentence] for sentence in X]
    model = make_pipeline(FunctionTransformer(), SequenceVectorizer(),
                          CRFClassifier(alpha=0.1, max_iter=30, n_jobs=1)).fit(dicts, y)
    path = tmp_path / "other.skcrf"
    with pytest.raises(TypeError) as error:
        save_model(model, path)
    message = str(error.value)
    assert "'functiontransformer'" in message and "FunctionTransformer" in message
    assert "skops" in message and "allow_pickle=True" in message
    assert not path.exists()

    save_model(model, path, allow_pickle=True)
    with pytest.raises(ValueError, match=r"other\.skcrf holds a model saved as a pickle"):
        load_model(path)
    with pytest.warns(UserWarning, match="can run arbitrary code") as record:
        loaded = load_model(path, allow_pickle=True)
    assert record[0].filename == __file__
    for left, right in zip(model.predict(dicts), loaded.predict(dicts), strict=True):
        np.testing.assert_array_equal(left, right)
    # the checksum guards pickled payloads too, before anything is unpickled
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    with pytest.raises(ValueError, match="is damaged"):
        load_model(io.BytesIO(bytes(data)), allow_pickle=True)


def test_skcrf_pipelines_are_saved_without_pickle(pipe):
    data = _saved_bytes(pipe)
    header = json.loads(data.split(b"\n", 2)[1])
    assert header["payload"]["encoding"] == "npz"
    assert b"\x80\x05" not in data  # no protocol-5 pickle anywhere


def _custom_features(token):
    return {"len": len(token[0])}


def test_lambda_custom_cannot_be_saved_and_leaves_no_file(tmp_path):
    path = tmp_path / "model.skcrf"
    featurizer = TokenFeaturizer(custom=lambda token: {"len": len(token[0])})
    model = make_pipeline(featurizer, SequenceVectorizer(),
                          CRFClassifier(max_iter=30, n_jobs=1)).fit(X, y)
    with pytest.raises(TypeError, match=r"Pipeline\.steps\[0\]\[1\]\.custom is .*lambda"):
        save_model(model, path)
    assert not path.exists() and list(tmp_path.iterdir()) == []
    # a module-level function is saved as a reference to it
    model.set_params(tokenfeaturizer__custom=_custom_features)
    save_model(model, path)
    assert b"tests.test_persistence:_custom_features" in path.read_bytes()
    # and a later failure leaves that model as it was
    saved = path.read_bytes()
    model.set_params(tokenfeaturizer__custom=lambda token: {})
    with pytest.raises(TypeError, match="cannot be saved"):
        save_model(model, path)
    assert path.read_bytes() == saved


def test_custom_functions_are_passed_in_not_imported(tmp_path):
    path = tmp_path / "model.skcrf"
    model = make_pipeline(TokenFeaturizer(custom=_custom_features), SequenceVectorizer(),
                          CRFClassifier(max_iter=30, n_jobs=1)).fit(X, y)
    save_model(model, path)
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert "model.skcrf" in message and "tests.test_persistence:_custom_features" in message
    assert "functions=[_custom_features]" in message
    assert load_model(path, functions=[_custom_features])[0].custom is _custom_features
    by_name = {"tests.test_persistence:_custom_features": _custom_features}
    _same_predictions(model, load_model(path, functions=by_name))
    # allow_pickle=True, trusting the file, imports it
    assert load_model(path, allow_pickle=True)[0].custom is _custom_features
    with pytest.raises(TypeError, match="module-level functions"):
        load_model(path, functions=[lambda token: {}])


def test_files_of_format_1_load_only_with_the_pickle_opt_in(pipe, tmp_path):
    path = tmp_path / "old.skcrf"
    path.write_bytes(_legacy_file(pipe, metadata={"layout": {"separator": " "}}))
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert "old.skcrf" in message and "format 1" in message
    assert "allow_pickle=True" in message and "save_model" in message
    with pytest.warns(UserWarning, match="old.skcrf holds a model saved as .*format 1"):
        loaded, metadata = load_model(path, allow_pickle=True, return_metadata=True)
    _same_predictions(pipe, loaded)
    assert metadata["layout"] == {"separator": " "}
    # re-saving converts it to the safe format
    save_model(loaded, path)
    _same_predictions(pipe, load_model(path))


def test_files_of_the_flat_layout_load(tmp_path, monkeypatch):
    """Models saved by skcrf 0.1, whose classes lived in skcrf._estimator and
    friends and had no order / transition_features, load and predict."""
    import sys

    import skcrf._chain
    import skcrf.features.vectorizer
    from skcrf import CRFClassifier

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
    y = [["A", "B"], ["B", "A"]]
    crf = CRFClassifier(alpha=0.1).fit(X, y)
    expected = crf.predict(X)
    del crf.__dict__["order"], crf.__dict__["transition_features"]
    old_names = {skcrf._chain: "skcrf._estimator",
                 skcrf.features.vectorizer: "skcrf._vectorizer"}
    for module, old in old_names.items():
        monkeypatch.setitem(sys.modules, old, module)
    monkeypatch.setattr(CRFClassifier, "__module__", "skcrf._estimator")
    monkeypatch.setattr(skcrf.SequenceVectorizer, "__module__", "skcrf._vectorizer")
    path = tmp_path / "old.skcrf"
    path.write_bytes(_legacy_file(crf))
    assert b"skcrf._estimator" in path.read_bytes()
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="format 1"):
        loaded = load_model(path, allow_pickle=True)
    assert type(loaded) is CRFClassifier
    assert loaded.get_params()["order"] == 1
    assert [p.tolist() for p in loaded.predict(X)] == [p.tolist() for p in expected]
