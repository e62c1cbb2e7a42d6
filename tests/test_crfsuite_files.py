"""CRFsuite model files both ways: skcrf.compat.load_crfsuite and save_crfsuite against
python-crfsuite's own trainer and tagger."""

import pickle
import struct
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import skcrf.compat as compat
from skcrf import CRFClassifier, SequenceVectorizer
from skcrf.compat._crf import _sequences
from skcrf.compat._crfsuite_format import (CRFsuiteFormatError, CRFsuiteWeights, hashlittle,
                                           read_crfsuite, weight_count, write_crfsuite)
from tests._corpora import tagged_sentences

pycrfsuite = pytest.importorskip("pycrfsuite")


def token_features(sentence, i):
    word, pos = sentence[i][0], sentence[i][1]
    features = {"bias": 1.0, "w": word.lower(), "pos": pos, "title": word.istitle(),
                "suffix": {"3": word[-3:]}, "len": len(word) / 10}
    if i:
        features["-1:pos"] = sentence[i - 1][1]
    else:
        features["BOS"] = True
    return features


@pytest.fixture(scope="module")
def corpus():
    X, y, X_test, _, _ = tagged_sentences(150, 60)
    features = [[token_features(s, i) for i in range(len(s))] for s in X + X_test]
    return features[:len(X)], [list(t) for t in y], features[len(X):]


@pytest.fixture(scope="module")
def crfsuite_file(corpus, tmp_path_factory):
    """A model python-crfsuite trained (a few L-BFGS iterations), as a file."""
    X, y, _ = corpus
    trainer = pycrfsuite.Trainer(verbose=False)
    for features, labels in zip(X, y):
        trainer.append(features, labels)
    trainer.set_params({"c1": 0.05, "c2": 0.05, "max_iterations": 15,
                        "feature.possible_transitions": True})
    path = tmp_path_factory.mktemp("crfsuite") / "model.crfsuite"
    trainer.train(str(path))
    return path


def tagger(path):
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    return tagger


def assert_tags_as_crfsuite(crf, path, X):
    """Every sentence labelled as CRFsuite's tagger labels it, marginals within 1e-9."""
    crfsuite = tagger(path)
    predicted = crf.predict(X)
    marginals = crf.predict_marginals(X)
    labels = crfsuite.labels()
    assert sorted(labels) == list(crf.classes_)
    for features, ours, our_marginals in zip(X, predicted, marginals):
        assert crfsuite.tag(features) == ours
        theirs = np.array([[crfsuite.marginal(label, t) for label in labels]
                           for t in range(len(features))])
        mine = np.array([[token[label] for label in labels] for token in our_marginals])
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-9)


def test_hashlittle_is_lookup3s():
    # the test vectors of lookup3.c's driver
    assert hashlittle(b"") == 0xDEADBEEF
    assert hashlittle(b"Four score and seven years ago") == 0x17770551
    assert hashlittle(b"Four score and seven years ago", 1) == 0xCD628161


def test_a_crfsuite_model_loads_and_tags_as_crfsuite(corpus, crfsuite_file):
    X, _, X_test = corpus
    crf = compat.load_crfsuite(crfsuite_file)
    assert_tags_as_crfsuite(crf, crfsuite_file, X + X_test)
    info = tagger(crfsuite_file).info()  # CRFsuite's dump: 6 decimals
    assert set(crf.state_features_) == set(info.state_features)
    assert set(crf.attributes_) == {attribute for attribute, _ in info.state_features}
    for key, weight in info.state_features.items():
        assert crf.state_features_[key] == pytest.approx(weight, abs=1e-6)
    for key, weight in info.transitions.items():
        assert crf.transition_features_[key] == pytest.approx(weight, abs=1e-6)
    assert not np.any(crf.estimator_.start_coef_) and not np.any(crf.estimator_.end_coef_)


def test_bytes_path_and_sklearn_crfsuite_object_load_alike(corpus, crfsuite_file):
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    X, y, X_test = corpus
    theirs = sklearn_crfsuite.CRF(c1=0.05, c2=0.05, max_iterations=10,
                                  all_possible_transitions=True).fit(X, y)
    # as a user has it: unpickled
    ours = compat.load_crfsuite(pickle.loads(pickle.dumps(theirs)))
    assert ours.predict(X_test) == [list(labels) for labels in theirs.predict(X_test)]
    for mine, their in zip(ours.predict_marginals(X_test), theirs.predict_marginals(X_test)):
        for a, b in zip(mine, their):
            assert a.keys() == b.keys()
            assert max(abs(a[k] - b[k]) for k in a) < 1e-9
    data = crfsuite_file.read_bytes()
    a, b = compat.load_crfsuite(data), compat.load_crfsuite(str(crfsuite_file))
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    with pytest.raises(TypeError, match="path or bytes"):
        compat.load_crfsuite(3)


def test_crfsuite_s_file_is_written_back_byte_for_byte(crfsuite_file):
    data = crfsuite_file.read_bytes()
    assert write_crfsuite(read_crfsuite(data)) == data


def test_a_compat_crf_saved_tags_as_skcrf_in_crfsuite(corpus, tmp_path):
    X, y, X_test = corpus
    crf = compat.CRF(c1=0.05, c2=0.05, max_iterations=15).fit(X, y)
    path = tmp_path / "ours.crfsuite"
    compat.save_crfsuite(crf, path)
    assert_tags_as_crfsuite(crf, path, X + X_test)
    # the file keeps the weighted attributes (L1 zeroes many), with their exact weights
    back = compat.load_crfsuite(path)
    assert back.state_features_ == crf.state_features_
    assert back.transition_features_ == crf.transition_features_
    assert back.attributes_ == crf.attributes_ and len(back.attributes_) < len(
        crf.estimator_.feature_names_)


@pytest.mark.parametrize("algorithm, options", [
    ("l2sgd", {"c2": 0.1, "calibration_samples": 50}), ("ap", {}), ("pa", {}),
    ("arow", {"gamma": 2.0})])
def test_every_trainer_s_model_is_a_crfsuite_file(corpus, tmp_path, algorithm, options):
    """The online trainers train without start and end weights too (CRFsuite's chain has
    none): their models are written exactly and tag alike in CRFsuite's tagger."""
    X, y, X_test = corpus
    crf = compat.CRF(algorithm=algorithm, max_iterations=4, **options).fit(X, y)
    classifier = crf.estimator_
    assert not np.any(classifier.start_coef_) and not np.any(classifier.end_coef_)
    assert np.any(classifier.coef_) and np.any(classifier.transition_coef_)
    path = tmp_path / f"{algorithm}.crfsuite"
    compat.save_crfsuite(crf, path)
    assert_tags_as_crfsuite(crf, path, X + X_test)
    back = compat.load_crfsuite(path)
    assert back.state_features_ == crf.state_features_
    assert back.transition_features_ == crf.transition_features_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_online_settings_of_a_compat_fit_stay_out_of_the_model(corpus, tmp_path):
    """What compat.CRF tells its estimator's fit is not left on it: the model saves in
    skcrf's format, and a CRFClassifier fitted afterwards keeps its start and end weights."""
    from skcrf import load_model, save_model

    X, y, X_test = corpus
    crf = compat.CRF(algorithm="ap", max_iterations=3).fit(X, y)
    save_model(crf, tmp_path / "ap.skcrf")
    assert load_model(tmp_path / "ap.skcrf").predict(X_test) == crf.predict(X_test)
    features = SequenceVectorizer(separator=":").fit_transform(_sequences(X))
    direct = CRFClassifier(solver="perceptron", max_iter=3).fit(features, y)
    assert np.any(direct.start_coef_) or np.any(direct.end_coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_what_crfsuite_cannot_store_is_refused_with_the_reason(corpus, tmp_path):
    X, y, _ = corpus
    features = SequenceVectorizer(separator=":").fit_transform(_sequences(X[:40]))
    path = tmp_path / "model.crfsuite"
    with pytest.raises(ValueError, match="no start or end weights"):
        compat.save_crfsuite(CRFClassifier(max_iter=5).fit(features, y[:40]), path)
    with pytest.raises(ValueError, match="order 1"):
        compat.save_crfsuite(CRFClassifier(order=2, max_iter=3).fit(features, y[:40]), path)
    with pytest.raises(ValueError, match="forbids"):
        compat.save_crfsuite(CRFClassifier(allowed_transitions="bio", max_iter=3).fit(
            features, y[:40]), path)
    with pytest.raises(TypeError, match="linear-chain"):
        compat.save_crfsuite(SequenceVectorizer(), path)
    assert not path.exists()


# --- hostile files ------------------------------------------------------------------

def loads_or_refuses(data):
    """Load ``data``; a damaged file must raise ValueError, never anything else."""
    try:
        compat.load_crfsuite(data)
    except ValueError as error:
        assert str(error)
        return False
    return True


def test_truncated_files_are_refused(crfsuite_file):
    data = crfsuite_file.read_bytes()
    for size in list(range(0, 64)) + list(range(64, len(data), max(1, len(data) // 97))):
        with pytest.raises(ValueError):
            compat.load_crfsuite(data[:size])


def test_wrong_magic_version_and_offsets_are_refused(crfsuite_file):
    data = crfsuite_file.read_bytes()
    with pytest.raises(ValueError, match="not a CRFsuite model"):
        compat.load_crfsuite(b"XCRF" + data[4:])
    with pytest.raises(ValueError, match="version"):
        compat.load_crfsuite(data[:12] + struct.pack("<I", 7) + data[16:])
    # each offset of the header pointing past the end, or into the wrong place
    for field in range(7, 12):
        for value in (len(data) + 5, 0xFFFFFFFF, 0):
            hostile = bytearray(data)
            struct.pack_into("<I", hostile, 4 * field, value)
            with pytest.raises(ValueError):
                compat.load_crfsuite(bytes(hostile))


def test_huge_counts_are_refused_not_allocated(crfsuite_file):
    data = crfsuite_file.read_bytes()
    for field in (5, 6):  # labels, attributes
        hostile = bytearray(data)
        struct.pack_into("<I", hostile, 4 * field, 0xFFFFFFF0)
        with pytest.raises(ValueError, match="names|past the end"):
            compat.load_crfsuite(bytes(hostile))
    # the feature chunk's own count
    features_at = struct.unpack_from("<I", data, 28)[0]
    hostile = bytearray(data)
    struct.pack_into("<I", hostile, features_at + 8, 0x7FFFFFFF)
    with pytest.raises(ValueError, match="past the end"):
        compat.load_crfsuite(bytes(hostile))


def test_labels_and_attributes_of_a_made_up_file_are_checked():
    good = read_crfsuite(write_crfsuite(read_crfsuite(_tiny())))
    assert good.labels == ["A", "B"] and good.attributes == ["x"]
    # a state feature leading to a label that does not exist
    data = bytearray(_tiny())
    features_at = struct.unpack_from("<I", data, 28)[0]
    struct.pack_into("<I", data, features_at + 12 + 8, 9)
    with pytest.raises(ValueError, match="label 9 of 2"):
        compat.load_crfsuite(bytes(data))
    one_label = write_crfsuite(type(good)(["A"], ["x"], np.ones((1, 1)), np.zeros((1, 1))))
    with pytest.raises(ValueError, match="at least 2"):
        compat.load_crfsuite(one_label)


def _peak_bytes_of_loading(data, **kwargs):
    """(loaded or refused, peak bytes traced while ``load_crfsuite(data)`` ran)."""
    tracemalloc.start()
    try:
        loaded = True
        try:
            compat.load_crfsuite(data, **kwargs)
        except ValueError as error:
            assert str(error)
            loaded = False
        return loaded, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _made_up(n_labels, n_attributes, features_per_attribute=1):
    """A well-formed file: few bytes, many labels and attributes each weighted once."""
    state = sp.lil_matrix((n_attributes, n_labels))
    for a in range(n_attributes):
        for k in range(features_per_attribute):
            state[a, (a + k) % n_labels] = 1.0
    return write_crfsuite(CRFsuiteWeights([f"L{i}" for i in range(n_labels)],
                                          [f"a{i}" for i in range(n_attributes)],
                                          state.tocsr(), np.zeros((n_labels, n_labels))))


@pytest.mark.parametrize("n_labels, n_attributes", [(3000, 0), (1200, 4000), (1000, 20000)])
def test_a_small_file_claiming_many_weights_is_refused_before_allocating(n_labels,
                                                                           n_attributes):
    """Counts backed by real records, but a dense model out of proportion to the file:
    refused, peak memory a small multiple of the file (the model would take far more)."""
    data = _made_up(n_labels, n_attributes)
    model_bytes = 8 * weight_count(n_labels, n_attributes)
    loaded, peak = _peak_bytes_of_loading(data)
    assert not loaded
    assert model_bytes > 60 * len(data)
    # what is read (names, features, references) and at most the limit's transitions
    assert peak < 40 * len(data) + 8 * (1 << 22) / 33 + (1 << 20) < model_bytes / 2
    with pytest.raises(ValueError, match="max_weights"):
        compat.load_crfsuite(data)


def test_a_trusted_large_model_loads_with_max_weights_and_memory_stays_bounded():
    data = _made_up(300, 20000)
    cells = weight_count(300, 20000)
    with pytest.raises(ValueError, match="max_weights"):
        compat.load_crfsuite(data)
    loaded, peak = _peak_bytes_of_loading(data, max_weights=cells)
    assert loaded
    # a few times what max_weights allows (the checks of the fitted model copy it
    # once), and what is in proportion to the file
    assert peak < 3 * 8 * cells + 60 * len(data)
    crf = compat.load_crfsuite(data, max_weights=cells)
    assert len(crf.classes_) == 300 and len(crf.attributes_) == 20000
    assert crf.predict_single([{"a7": 1.0}]) == ["L7"]


def test_attributes_without_a_weight_make_no_dense_column():
    """A file naming attributes no feature is referenced by (CRFsuite writes none such):
    they make no column of the dense weights."""
    data = bytearray(_made_up(300, 20000))
    refs_at = struct.unpack_from("<I", data, 44)[0]
    offsets = np.frombuffer(bytes(data), dtype="<u4", count=20000, offset=refs_at + 12)
    for offset in offsets[1:].tolist():  # every attribute but the first: no references
        struct.pack_into("<I", data, offset, 0)
    weights = read_crfsuite(bytes(data))
    assert len(weights.attributes) == 20000 and weights.state.nnz == 1
    # 300 x 20300 dense weights if every named attribute were a column: refused;
    # 300 x 301 of the one weighted attribute: loaded
    crf = compat.load_crfsuite(bytes(data))
    assert crf.estimator_.coef_.shape == (300, 1) and crf.attributes_ == ["a0"]


def _tiny():
    from skcrf.compat._crfsuite_format import CRFsuiteWeights

    return write_crfsuite(CRFsuiteWeights(["A", "B"], ["x"], np.array([[1.0, -1.0]]),
                                          np.array([[0.5, 0.0], [0.0, 0.25]])))


def test_flipped_bytes_load_or_are_refused(crfsuite_file):
    data = crfsuite_file.read_bytes()
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(200):
        hostile = bytearray(data)
        for position in rng.integers(0, len(data), size=3):
            hostile[position] = int(rng.integers(0, 256))
        refused += not loads_or_refuses(bytes(hostile))
    assert refused > 0


def test_a_loaded_model_saves_in_skcrf_s_format(corpus, crfsuite_file, tmp_path):
    from skcrf import load_model, save_model

    _, _, X_test = corpus
    crf = compat.load_crfsuite(crfsuite_file)
    save_model(crf, tmp_path / "model.skcrf")
    again = load_model(tmp_path / "model.skcrf")
    assert again.predict(X_test) == crf.predict(X_test)
    assert again.state_features_ == crf.state_features_
