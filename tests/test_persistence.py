"""save_model / load_model: round trips, the header and the version checks."""

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
    """``data`` with header fields replaced (None deletes a field)."""
    magic, header, payload = data.split(b"\n", 2)
    fields = json.loads(header)
    fields.update(changes)
    fields = {key: value for key, value in fields.items() if value is not None}
    return b"\n".join([magic, json.dumps(fields).encode(), payload])


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
    (lambda data: data[:-40], "truncated or corrupt"),
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


def _custom_features(token):
    return {"len": len(token[0])}


def test_unpicklable_model_leaves_no_file(tmp_path):
    path = tmp_path / "model.skcrf"
    featurizer = TokenFeaturizer(custom=lambda token: {"len": len(token[0])})
    model = make_pipeline(featurizer, SequenceVectorizer(),
                          CRFClassifier(max_iter=30, n_jobs=1)).fit(X, y)
    with pytest.raises(TypeError, match="cannot be pickled"):
        save_model(model, path)
    assert not path.exists()
    # a module-level function pickles fine
    model.set_params(tokenfeaturizer__custom=_custom_features)
    save_model(model, path)
    assert load_model(path)[0].custom is _custom_features
    # and a later failure leaves that model as it was
    saved = path.read_bytes()
    model.set_params(tokenfeaturizer__custom=lambda token: {})
    with pytest.raises(TypeError, match="cannot be pickled"):
        save_model(model, path)
    assert path.read_bytes() == saved


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
    save_model(crf, path)
    assert b"skcrf._estimator" in path.read_bytes()
    monkeypatch.undo()
    loaded = load_model(path)
    assert type(loaded) is CRFClassifier
    assert loaded.get_params()["order"] == 1
    assert [p.tolist() for p in loaded.predict(X)] == [p.tolist() for p in expected]
