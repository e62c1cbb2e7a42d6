"""The safe model format covers every skcrf estimator exactly, with no per-class code.

Each model is saved and loaded while pickle is disabled, then compared
attribute by attribute (values, dtypes, types, shared arrays, read-only
flags), by its predictions and by its marginals, bitwise.
"""

import io
import pickle
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

import skcrf
from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceMatrix, SequenceVectorizer,
                   TokenFeaturizer, load_model, save_model)
from skcrf._estimators.fitted_state import FittedState
from skcrf._persistence import _registry
from skcrf._persistence._decoder import model_from_payload
from skcrf._persistence._encoder import model_to_payload
from skcrf._persistence._registry import estimator_classes
from tests import _model_files as model_files

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

TOKENS = [[("Pedro", "NP"), ("vive", "VMI"), ("en", "SP"), ("Madrid", "NP")],
          [("Ana", "NP"), ("viaja", "VMI"), ("a", "SP"), ("La", "DA"), ("Paz", "NP")],
          [("Luis", "NP"), ("trabaja", "VMI"), ("en", "SP"), ("Quito", "NP"), (".", "Fp")],
          [("Madrid", "NP"), ("es", "VSI"), ("grande", "AQ")]]
TAGS = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "O", "B-LOC", "I-LOC"],
        ["B-PER", "O", "O", "B-LOC", "O"], ["B-LOC", "O", "O"]]
DICTS = [[{"w": word.lower(), "pos": pos, "title": word.istitle(), "len": len(word)}
          for word, pos in sentence] for sentence in TOKENS]
INT_TAGS = [[{"O": 0, "B-PER": 7, "B-LOC": -3, "I-LOC": 12}[tag] for tag in tags]
            for tags in TAGS]


def _crf(**params):
    return CRFClassifier(alpha=0.1, max_iter=40, n_jobs=1, **params)


def _matrix():
    rng = np.random.default_rng(0)
    matrix = sp.random(21, 6, density=0.5, format="csr", random_state=rng)
    return SequenceMatrix(matrix, offsets=[0, 4, 9, 14, 21])


MATRIX_TAGS = [["A", "B", "A", "B"], ["B", "B", "A", "C", "A"], ["C", "A", "B", "A", "B"],
               ["A", "A", "B", "C", "C", "A", "B"]]

# (name, model, X, y): every estimator and the parameters that change its attributes
CASES = [
    ("order1-str", lambda: _crf(), DICTS, TAGS),
    ("order1-int-labels", lambda: _crf(), DICTS, INT_TAGS),
    ("order2", lambda: _crf(order=2), DICTS, TAGS),
    ("transition-features", lambda: _crf(transition_features=["pos="]), DICTS, TAGS),
    ("transition-features-l1", lambda: _crf(transition_features="all", l1_ratio=0.5),
     DICTS, TAGS),
    ("sequence-matrix-input", lambda: _crf(), _matrix(), MATRIX_TAGS),
    ("semimarkov", lambda: SemiMarkovCRF(alpha=0.1, max_iter=40, n_jobs=1), DICTS, TAGS),
    ("semimarkov-max-length", lambda: SemiMarkovCRF(alpha=0.1, max_iter=40, n_jobs=1,
                                                    max_segment_length=3), DICTS, TAGS),
    ("pipeline", lambda: make_pipeline(
        TokenFeaturizer(window=2, columns={1: 1}, column_names=("word", "pos"),
                        word_features=("lower", "shape", "prefix")),
        SequenceVectorizer(min_freq=1, sort=False, dtype=np.float32),
        _crf(order=2)), TOKENS, TAGS),
    ("pipeline-semimarkov", lambda: make_pipeline(
        TokenFeaturizer(), SequenceVectorizer(),
        SemiMarkovCRF(alpha=0.1, max_iter=40, n_jobs=1)), TOKENS, TAGS),
]


def _round_trip(model, **kwargs):
    """``model`` saved and loaded back, with unpickling disabled while it loads."""
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    with _pickle_disabled():
        return load_model(buffer, **kwargs)


@contextmanager
def _pickle_disabled():
    """Make any unpickling fail loudly (numba's cache unpickles: keep kernels outside)."""
    def refuse(*args, **kwargs):
        raise AssertionError("something was unpickled")

    with pytest.MonkeyPatch.context() as patch:
        for name in ("load", "loads", "Unpickler"):
            patch.setattr(pickle, name, refuse)
        yield


def assert_same(saved, loaded, path="model"):
    """Exact equality: types, dtypes, values (NaN equal to NaN), shapes, flags."""
    assert type(loaded) is type(saved), path
    if isinstance(saved, BaseEstimator):
        assert vars(loaded).keys() == vars(saved).keys(), path
        for key in vars(saved):
            assert_same(vars(saved)[key], vars(loaded)[key], f"{path}.{key}")
    elif isinstance(saved, np.ndarray):
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape, path
        assert loaded.flags.writeable == saved.flags.writeable, path
        if saved.dtype == object:
            assert loaded.tolist() == saved.tolist(), path
            assert [type(v) for v in loaded.flat] == [type(v) for v in saved.flat], path
        else:
            np.testing.assert_array_equal(loaded, saved, err_msg=path, strict=True)
    elif sp.issparse(saved):
        for part in ("data", "indices", "indptr"):
            assert_same(getattr(saved, part), getattr(loaded, part), f"{path}.{part}")
        assert loaded.shape == saved.shape, path
    elif isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved), path
        for i, (left, right) in enumerate(zip(saved, loaded)):
            assert_same(left, right, f"{path}[{i}]")
    elif isinstance(saved, (set, frozenset)):
        assert loaded == saved, path
    elif isinstance(saved, dict):
        assert list(loaded) == list(saved), path
        assert [type(key) for key in loaded] == [type(key) for key in saved], path
        for key in saved:
            assert_same(saved[key], loaded[key], f"{path}[{key!r}]")
    elif isinstance(saved, float) and saved != saved:
        assert loaded != loaded, path
    else:
        assert loaded == saved, path


@pytest.mark.parametrize("name, make, X, y", CASES, ids=[case[0] for case in CASES])
def test_every_estimator_round_trips_exactly(name, make, X, y):
    model = make().fit(X, y)
    loaded = _round_trip(model)
    assert_same(model, loaded)
    for left, right in zip(model.predict(X), loaded.predict(X), strict=True):
        np.testing.assert_array_equal(left, right, strict=True)
    for left, right in zip(model.predict_proba(X), loaded.predict_proba(X), strict=True):
        assert left.tobytes() == right.tobytes()  # bitwise
    # and a loaded model saves to the same bytes
    first, second = io.BytesIO(), io.BytesIO()
    save_model(model, first)
    save_model(loaded, second)
    assert first.getvalue() == second.getvalue()


def test_the_fitted_state_is_shared_as_it_was():
    # enough features that the names are stored in bulk, as in any real model
    X = [[{**token, "id": f"{i}.{j}"} for j, token in enumerate(sentence)]
         for i, sentence in enumerate(DICTS)]
    crf = _crf().fit(X, TAGS)
    assert crf.feature_names_ is crf.vectorizer_._names_out
    loaded = _round_trip(crf)
    # one array, read-only, as before saving
    assert loaded.feature_names_ is loaded.vectorizer_._names_out
    assert not loaded.feature_names_.flags.writeable
    # the strings of the vocabulary, the names list and the name array are shared
    names = loaded.vectorizer_.feature_names_
    assert all(a is b for a, b in zip(names, loaded.vectorizer_.vocabulary_))
    assert all(a is b for a, b in zip(names, loaded.feature_names_))


def test_standalone_transformers_round_trip():
    featurizer = TokenFeaturizer(window=2, columns={1: 2}, prefixes=[1, 4], bias=False)
    loaded = _round_trip(featurizer)
    assert_same(featurizer, loaded)
    assert loaded.get_params() == featurizer.get_params()
    assert loaded.transform(TOKENS).feature_names.tolist() == \
        featurizer.transform(TOKENS).feature_names.tolist()
    vectorizer = SequenceVectorizer(separator=":", min_freq=2).fit(DICTS)
    loaded = _round_trip(vectorizer)
    assert_same(vectorizer, loaded)
    assert (loaded.transform(DICTS).matrix != vectorizer.transform(DICTS).matrix).nnz == 0


def test_every_public_estimator_is_allowed():
    public = {getattr(skcrf, name) for name in skcrf.__all__}
    estimators = {cls for cls in public
                  if isinstance(cls, type) and issubclass(cls, BaseEstimator)}
    allowed = set(estimator_classes().values())
    assert estimators <= allowed
    assert {CRFClassifier, SemiMarkovCRF, SequenceVectorizer, TokenFeaturizer} <= allowed
    assert all(cls.__module__.startswith(("skcrf.", "sklearn.pipeline")) for cls in allowed)


def _unusual_values():
    """Values of every kind the format stores, for a fitted attribute."""
    return {
        "none": None, "flags": (True, False), "big_int": 2**70, "ints": [2**70] * 40,
        "float": -0.0, "nan": float("nan"), "inf": (float("inf"), float("-inf")),
        "floats": [0.1 * i for i in range(40)], "bools": [True, False] * 20,
        "mixed": [1, "a", 2.5, None] * 10, "small_ints": list(range(40)),
        "str": "\u00e9t\u00e9 \U0001f600 \x00 \"'\\", "strs": [f"s{i % 7}" for i in range(40)],
        "dict_int_keys": {1: 2, 0: "x", -5: (1,)}, "dict_tuple_keys": {(1, "a"): [2]},
        "set": {"q", "r"}, "frozenset": frozenset({1, 2}),
        "nested": [[1, [2, (3, {"a": []})]], ()],
        "np_scalars": (np.int32(-3), np.float32(0.1), np.float64("nan"), np.bool_(True),
                       np.uint64(2**64 - 1), np.str_("s"), np.complex128(1 - 2j),
                       np.int8(-128)),
        "types": (np.float32, np.int64, float, str, np.dtype("<f4"), np.dtype(">i2")),
        "complex": complex(1.5, -2),
        "float32": np.linspace(0, 1, 7, dtype=np.float32),
        "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        "big_endian": np.arange(5, dtype=">i4"), "empty": np.empty((0, 3)),
        "unicode": np.array(["\u00e9", "ab"]), "bytes_": np.array([b"a", b"bc"]),
        "bool_array": np.array([[True, False]]), "scalar_array": np.array(3.0),
        "objects": np.array(["a", 1, None, 2.5, True, np.float32(2)], dtype=object),
        "object_strs": np.array([f"n{i}" for i in range(50)], dtype=object).reshape(5, 10),
        "object_empty": np.empty(0, dtype=object),
        "csr": sp.random(4, 5, density=0.4, format="csr", random_state=0),
        "csc_array": sp.csc_array(np.eye(3)),
        "csr_int64": sp.csr_matrix((np.ones(2), np.array([0, 2], dtype=np.int64),
                                    np.array([0, 1, 2], dtype=np.int64)), shape=(2, 3)),
    }


class _AnyValue:
    """A declaration that lets an attribute hold anything (for the format's own tests)."""

    optional = True

    def check(self, value, label, dims):
        pass


class Holder(BaseEstimator):
    """An estimator whose attributes may hold values of any kind: what the format's
    tests carry through it, with none of a real estimator's checks."""

    _fitted_state = FittedState({name: _AnyValue() for name in ("extra_", "view_", "same_",
                                                                  "inner_")},
                                check_params=lambda holder: None)

    def __init__(self, value=None):
        self.value = value


@pytest.fixture
def holder(monkeypatch):
    """A fresh Holder, registered with the model format for the test's duration."""
    monkeypatch.setitem(_registry._CLASSES, "tests.Holder", (Holder, Holder._fitted_state))
    return Holder()


def _archive_round_trip(model):
    with _pickle_disabled():
        return model_from_payload(model_to_payload(model))


def test_values_of_every_kind_round_trip(holder):
    holder.extra_ = _unusual_values()
    view = np.arange(10.0)
    holder.view_ = view[::2]
    holder.same_ = [view, view]
    loaded = _archive_round_trip(holder)
    assert_same(holder, loaded)
    assert loaded.same_[0] is loaded.same_[1]


@pytest.mark.parametrize("value, where", [
    (object(), "Holder.extra_ is a builtins.object"),
    ([1, lambda x: x], r"Holder.extra_\[1\] is <function"),
    ({"a": io.BytesIO()}, r"Holder.extra_\[.a.\] is a _io.BytesIO"),
    (np.array([1, (2,), 3], dtype=object), r"extra_\[1\] is a tuple"),
    (np.zeros(2, dtype=[("a", "O")]), "records holding objects"),
    (sp.coo_matrix(np.eye(2)), "coo_matrix; the model format stores CSR"),
    (pickle, "is a builtins.module"),
    (BaseEstimator, "is the class sklearn.base.BaseEstimator"),
    (np.datetime64("2020-01-01"), "numpy datetime64"),
])
def test_what_the_format_cannot_hold_is_named(holder, value, where):
    holder.extra_ = value
    with pytest.raises(TypeError, match=where):
        model_to_payload(holder)


def test_a_model_containing_itself_is_refused(holder):
    loop = []
    loop.append(loop)
    holder.extra_ = loop
    with pytest.raises(TypeError, match="contains itself"):
        model_to_payload(holder)


def test_subclasses_outside_skcrf_are_not_in_the_format(holder):
    class Mine(CRFClassifier):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = Mine(max_iter=5).fit(DICTS, TAGS)
    with pytest.raises(TypeError, match="got a Mine"):
        save_model(crf, io.BytesIO())
    # nor inside a model
    holder.inner_ = crf
    with pytest.raises(TypeError, match=r"Holder.inner_ is a .*Mine; the model "
                                        r"format stores skcrf estimators"):
        model_to_payload(holder)


def test_attributes_outside_the_fitted_state_are_not_saved():
    """Only the attributes a class declares load (issue 32, item 15), so only those save:
    one set by hand is named; scikit-learn's own settings are left out."""
    vectorizer = SequenceVectorizer().fit(DICTS)
    vectorizer.note_ = "mine"
    with pytest.raises(TypeError, match=r"SequenceVectorizer.note_ is not part of a fitted "
                                        r"SequenceVectorizer.*del model.note_"):
        save_model(vectorizer, io.BytesIO())
    del vectorizer.note_
    vectorizer._metadata_request = {}  # as set_transform_request would set it
    vectorizer._sklearn_output_config = {"transform": "default"}  # as set_output would
    loaded = _round_trip(vectorizer)
    assert not {"_sklearn_output_config", "_metadata_request"} & set(vars(loaded))
    assert loaded.feature_names_ == vectorizer.feature_names_


def test_files_of_an_older_skcrf_get_new_parameters_defaults():
    """A parameter added later is missing from older files: the default applies."""
    crf = _crf().fit(DICTS, TAGS)
    buffer = io.BytesIO()
    save_model(crf, buffer)

    def forget_transition_features(tree):
        del tree["model"]["params"]["transition_features"]

    data = model_files.rewritten(buffer.getvalue(), forget_transition_features)
    with _pickle_disabled():
        loaded = load_model(io.BytesIO(data))
    assert loaded.transition_features is None
    for left, right in zip(crf.predict(DICTS), loaded.predict(DICTS), strict=True):
        np.testing.assert_array_equal(left, right)
