"""allowed_transitions: the scheme rules, the explicit forms, training with them, persistence, CoNLL."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skcrf import CRFClassifier, load_model, save_model
from skcrf._estimators.constraints import resolve_constraints, scheme_constraints
from skcrf.tags import segments_to_tags, tags_to_segments
from tests._corpora import tagged_sentences

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

PREFIXES = {"IOB2": "BI", "IOB1": "BI", "IOE2": "IE", "IOE1": "IE", "BIOES": "BIES",
            "BILOU": "BILU"}


def _well_formed(tags, scheme):
    """What skcrf.tags writes for the spans the tags read as: the well-formed tags."""
    return segments_to_tags(tags_to_segments(tags, scheme), len(tags), scheme) == list(tags)


@pytest.mark.parametrize("scheme", list(PREFIXES))
def test_scheme_rules_allow_exactly_the_well_formed_tag_sequences(scheme):
    # two types, and the untyped bare prefixes of conlleval's chunking
    tags = sorted(["O"] + [f"{p}-{t}" for p in PREFIXES[scheme] for t in "XY"]
                  + list(PREFIXES[scheme]))
    constraints = scheme_constraints(np.array(tags), scheme)
    for n in range(1, 4):
        for ids in itertools.product(range(len(tags)), repeat=n):
            allowed = (constraints.start[ids[0]] and constraints.end[ids[-1]]
                       and all(constraints.allowed[a, b] for a, b in zip(ids, ids[1:])))
            assert allowed == _well_formed([tags[i] for i in ids], scheme), [
                tags[i] for i in ids]


def _resolve(spec, classes, y=None):
    return resolve_constraints(spec, np.array(classes), lambda: y)


def test_string_forms_read_the_scheme_from_the_tags():
    iob = ["B-PER", "I-PER", "O"]
    assert _resolve("auto", iob, [["B-PER", "I-PER", "O"]]).scheme == "IOB2"
    assert _resolve("bio", iob).scheme == "IOB2"
    assert _resolve("auto", ["B-X", "E-X", "O", "S-X"], [["S-X", "B-X", "E-X"]]).scheme == "BIOES"
    assert _resolve("bioes", ["B-X", "L-X", "O", "U-X"]).scheme == "BILOU"
    assert _resolve("IOE2", ["E-X", "I-X", "O"]).scheme == "IOE2"
    plain = _resolve("auto", ["DET", "NN", "VB"], [["DET", "NN", "VB"]])
    assert plain.scheme == "plain" and not plain.any
    bio = _resolve("bio", iob)
    # I-PER: not first, only after B-PER or I-PER
    np.testing.assert_array_equal(bio.start, [True, False, True])
    np.testing.assert_array_equal(bio.allowed[:, 1], [True, True, False])
    assert bio.end.all() and bio.allowed[:, [0, 2]].all()


def test_string_forms_refuse_tags_of_another_scheme():
    with pytest.raises(ValueError, match="reads the labels as IOB2 tags, but 'E-PER' is not"):
        _resolve("bio", ["B-PER", "E-PER", "O"])
    with pytest.raises(ValueError, match="but 1 is of type int"):
        _resolve("bio", [1, 2, 3])
    with pytest.raises(ValueError, match="must be one of"):
        _resolve("iob", ["B-PER", "O"])


def test_explicit_forms():
    classes = ["A", "B", "C"]
    pairs = _resolve({("A", "B"), ("B", "B"), ("C", "A")}, classes)
    expected = np.array([[0, 1, 0], [0, 1, 0], [1, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(pairs.allowed, expected)
    assert pairs.start.all() and pairs.end.all() and pairs.scheme is None
    np.testing.assert_array_equal(_resolve([("A", "B"), ("B", "B"), ("C", "A")],
                                           classes).allowed, expected)
    np.testing.assert_array_equal(_resolve(expected, classes).allowed, expected)
    # a dict lists the followers; a label it lacks may be followed by any
    by_dict = _resolve({"A": ["B"], "B": {"B"}}, classes)
    np.testing.assert_array_equal(by_dict.allowed, [[0, 1, 0], [0, 1, 0], [1, 1, 1]])
    with pytest.raises(ValueError, match="names the label 'D', which is not a class"):
        _resolve({("A", "D")}, classes)
    with pytest.raises(ValueError, match=r"boolean array of shape \(n_classes, n_classes\)"):
        _resolve(np.ones((2, 2), dtype=bool), classes)
    with pytest.raises(ValueError, match="item 0 is 'AB'"):
        _resolve(["AB"], classes)
    with pytest.raises(ValueError, match=r"allowed_transitions\['A'\] must be a collection"):
        _resolve({"A": "B"}, classes)


def _tags_corpus():
    X = [[{"w": w} for w in words] for words in
         (["Ada", "met", "Bob"], ["in", "Rome", "Bank"], ["Bob", "Smith"], ["Rome"])]
    y = [["B-PER", "O", "B-PER"], ["O", "B-LOC", "B-ORG"], ["B-PER", "I-PER"], ["B-LOC"]]
    return X, y


def test_training_with_a_scheme_repairs_malformed_tags_with_a_warning():
    X, y = _tags_corpus()
    y = [list(t) for t in y]
    y[1] = ["O", "I-LOC", "B-ORG"]  # I-LOC opens a span: malformed IOB2
    with pytest.warns(UserWarning, match=r"1 training sequence\(s\) have tags that are not "
                                         r"well-formed IOB2 \(first: sequence 1, tokens 0-1: "
                                         r"'O' followed by 'I-LOC'"):
        crf = CRFClassifier(alpha=0.1, max_iter=20, allowed_transitions="bio").fit(X, y)
    # trained on B-LOC there: I-LOC, never seen otherwise, is not a class
    assert "I-LOC" not in crf.classes_.tolist() and "B-LOC" in crf.classes_.tolist()
    assert crf.allowed_transitions_.shape == (len(crf.classes_),) * 2


def test_training_refuses_labels_that_break_explicit_pairs():
    X, y = _tags_corpus()
    classes = sorted({t for tags in y for t in tags})
    allowed = {(a, b) for a in classes for b in classes} - {("O", "B-ORG")}
    crf = CRFClassifier(alpha=0.1, max_iter=5, allowed_transitions=allowed).fit(X, y)
    assert np.isneginf(crf.transition_coef_).sum() == 1
    allowed -= {("B-LOC", "B-ORG")}
    with pytest.raises(ValueError, match=r"sequence 1, tokens 1-2: 'B-LOC' followed by 'B-ORG',"
                                         r" which allowed_transitions=.* forbids"):
        CRFClassifier(alpha=0.1, max_iter=5, allowed_transitions=allowed).fit(X, y)


@pytest.mark.parametrize("params", [dict(), dict(order=2), dict(transition_features="all")])
def test_forbidden_weights_are_minus_inf_and_the_others_are_trained(params):
    X, y = _tags_corpus()
    crf = CRFClassifier(alpha=0.1, max_iter=30, allowed_transitions="bio", **params).fit(X, y)
    constraints = scheme_constraints(crf.classes_, "IOB2")
    np.testing.assert_array_equal(crf.allowed_transitions_, constraints.allowed)
    np.testing.assert_array_equal(np.isfinite(crf.transition_coef_), constraints.allowed)
    np.testing.assert_array_equal(np.isfinite(crf.start_coef_), constraints.start)
    assert np.isfinite(crf.end_coef_).all()
    assert crf.transition_coef_[constraints.allowed].any()
    plain = CRFClassifier(alpha=0.1, max_iter=5, **params).fit(X, y)
    assert plain.allowed_transitions_.all() and np.isfinite(plain.transition_coef_).all()


@pytest.mark.parametrize("spec", ["bio", "auto", {("O", "B-PER"), ("B-PER", "O")},
                                  {"O": ["B-PER", "O"]}])
def test_constrained_models_save_load_and_clone(tmp_path, spec):
    X, y = _tags_corpus()
    if not isinstance(spec, str):
        X, y = [X[0], X[3]], [["B-PER", "O", "B-PER"], ["O"]]
    crf = CRFClassifier(alpha=0.1, max_iter=10, allowed_transitions=spec).fit(X, y)
    save_model(crf, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    assert loaded.get_params()["allowed_transitions"] == spec
    np.testing.assert_array_equal(loaded.allowed_transitions_, crf.allowed_transitions_)
    np.testing.assert_array_equal(loaded.transition_coef_, crf.transition_coef_)
    for a, b in zip(loaded.predict_nbest(X, n=3), crf.predict_nbest(X, n=3)):
        assert [(t.tolist(), p) for t, p in a] == [(t.tolist(), p) for t, p in b]
    assert clone(crf).get_params()["allowed_transitions"] == spec


def test_matrix_form_saves_and_loads(tmp_path):
    X, y = _tags_corpus()
    classes = sorted({t for tags in y for t in tags})
    matrix = np.ones((len(classes), len(classes)), dtype=bool)
    matrix[classes.index("O"), classes.index("B-ORG")] = False
    crf = CRFClassifier(alpha=0.1, max_iter=5, allowed_transitions=matrix).fit(X, y)
    save_model(crf, tmp_path / "model.skcrf")
    np.testing.assert_array_equal(load_model(tmp_path / "model.skcrf").allowed_transitions_,
                                  matrix)


@pytest.fixture(scope="module")
def tagged(corpus_or_sample):
    """CoNLL-2002 Spanish (1,500 training sentences, all of testb), else the sample's names."""
    return tagged_sentences(1500)[:4]


def _token_features(sentence):
    words = [token[0] for token in sentence]
    return [{"w": w.lower(), "title": w.istitle(), "suffix": w[-3:],
             "prev": words[i - 1].lower() if i else "<s>"} for i, w in enumerate(words)]


def test_constrained_predictions_on_a_test_set_are_all_well_formed(tagged):
    X_train, y_train, X_test, _ = tagged
    F_train = [_token_features(s) for s in X_train]
    F_test = [_token_features(s) for s in X_test]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFClassifier(alpha=0.3, max_iter=25, allowed_transitions="bio").fit(F_train,
                                                                                   y_train)
    predictions = crf.predict(F_test)
    assert len(predictions) == len(X_test)
    malformed = [q for q, tags in enumerate(predictions)
                 if not _well_formed(tags.tolist(), "IOB2")]
    assert malformed == []
    # the runners-up too, and with some tokens fixed to B- tags
    for labellings in crf.predict_nbest(F_test[:200], n=5):
        assert all(_well_formed(tags.tolist(), "IOB2") for tags, _ in labellings)
    first = next(label for label in crf.classes_ if label.startswith("B-"))
    fixed = [[(first if t == 0 else None) for t in range(len(x))] for x in F_test[:200]]
    for tags in crf.predict(F_test[:200], fixed=fixed):
        assert tags[0] == first and _well_formed(tags.tolist(), "IOB2")


def test_auto_on_labels_that_are_not_tags_forbids_nothing():
    """"auto" on integer labels raised TypeError; the docs say "nothing for plain
    labels" (issue 32, item 18)."""
    X = [[{"w": "a"}, {"w": "b"}, {"w": "c"}], [{"w": "c"}, {"w": "a"}]] * 3
    y = [[1, 2, 3], [3, 1]] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = CRFClassifier(allowed_transitions="auto", max_iter=20).fit(X, y)
        free = CRFClassifier(max_iter=20).fit(X, y)
    assert auto.allowed_transitions_.all()
    np.testing.assert_array_equal(auto.transition_coef_, free.transition_coef_)
