"""Token, sequence and span metrics and the scorers.

Span metrics are checked three ways: hand-worked examples, a line-by-line port
of conlleval.pl's counting loop (the reference, on IOB, IOE and plain tags,
malformed sequences included), and seqeval's default mode (on BIO, BIOES and
BILOU tags; it implements the usual BIOES extension of conlleval).
"""

import pickle
import re
import warnings
from collections import Counter

import numpy as np
import pytest
import sklearn.metrics as skm
from seqeval import metrics as seqeval_metrics
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support as seqeval_prfs_
from seqeval.scheme import IOB2
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skcrf import CRFClassifier
from skcrf.metrics import (
    Span,
    flat_accuracy_score,
    flat_classification_report,
    flat_f1_score,
    flat_f1_scorer,
    flat_fbeta_score,
    flat_precision_score,
    flat_recall_score,
    get_spans,
    make_sequence_scorer,
    sequence_accuracy_score,
    sequence_accuracy_scorer,
    span_classification_report,
    span_f1_score,
    span_f1_scorer,
    span_precision_recall_fscore_support,
    span_precision_score,
    span_recall_score,
)

# --------------------------------------------------------------------------
# Oracle: conlleval.pl (version 2004-01-26), ported statement by statement
# --------------------------------------------------------------------------


def _conlleval_end_of_chunk(prev_tag, tag, prev_type, type_):
    end = False
    if prev_tag == "B" and tag == "B":
        end = True
    if prev_tag == "B" and tag == "O":
        end = True
    if prev_tag == "I" and tag == "B":
        end = True
    if prev_tag == "I" and tag == "O":
        end = True
    if prev_tag == "E" and tag == "E":
        end = True
    if prev_tag == "E" and tag == "I":
        end = True
    if prev_tag == "E" and tag == "O":
        end = True
    if prev_tag == "I" and tag == "O":
        end = True
    if prev_tag != "O" and prev_tag != "." and prev_type != type_:
        end = True
    if prev_tag in ("]", "["):
        end = True
    return end


def _conlleval_start_of_chunk(prev_tag, tag, prev_type, type_):
    start = False
    if prev_tag == "B" and tag == "B":
        start = True
    if prev_tag == "I" and tag == "B":
        start = True
    if prev_tag == "O" and tag == "B":
        start = True
    if prev_tag == "O" and tag == "I":
        start = True
    if prev_tag == "E" and tag == "E":
        start = True
    if prev_tag == "E" and tag == "I":
        start = True
    if prev_tag == "O" and tag == "E":
        start = True
    if prev_tag == "O" and tag == "I":
        start = True
    if tag != "O" and tag != "." and prev_type != type_:
        start = True
    if tag in ("[", "]"):
        start = True
    return start


def _conlleval_split(tag):
    # "20040126 ET code which allows hyphens in the types"
    match = re.match(r"^([^-]*)-(.*)$", tag)
    return (match.group(1), match.group(2)) if match else (tag, "")


def conlleval(y_true, y_pred):
    """conlleval.pl's counts and scores (as fractions) for label sequences.

    Sentences are separated by boundary lines, which conlleval reads as "O O".
    Its inCorrect state machine is kept as is, so this does not assume that
    a correct chunk is a shared (type, start, end) triple.
    """
    lines = []
    for labels_true, labels_pred in zip(y_true, y_pred, strict=True):
        lines.extend(zip(labels_true, labels_pred, strict=True))
        lines.append(None)  # sentence boundary
    correct_chunk, found_correct, found_guessed = Counter(), Counter(), Counter()
    correct_tags = token_counter = 0
    in_correct = False
    last_correct, last_correct_type = "O", ""
    last_guessed, last_guessed_type = "O", ""
    for line in lines:
        boundary = line is None
        correct, correct_type = ("O", "") if boundary else _conlleval_split(line[0])
        guessed, guessed_type = ("O", "") if boundary else _conlleval_split(line[1])

        end_correct = _conlleval_end_of_chunk(last_correct, correct, last_correct_type,
                                              correct_type)
        end_guessed = _conlleval_end_of_chunk(last_guessed, guessed, last_guessed_type,
                                              guessed_type)
        start_correct = _conlleval_start_of_chunk(last_correct, correct, last_correct_type,
                                                  correct_type)
        start_guessed = _conlleval_start_of_chunk(last_guessed, guessed, last_guessed_type,
                                                  guessed_type)
        if in_correct:
            if end_correct and end_guessed and last_guessed_type == last_correct_type:
                in_correct = False
                correct_chunk[last_correct_type] += 1
            elif end_correct != end_guessed or guessed_type != correct_type:
                in_correct = False
        if start_correct and start_guessed and guessed_type == correct_type:
            in_correct = True
        if start_correct:
            found_correct[correct_type] += 1
        if start_guessed:
            found_guessed[guessed_type] += 1
        if not boundary:
            if correct == guessed and guessed_type == correct_type:
                correct_tags += 1
            token_counter += 1
        last_guessed, last_correct = guessed, correct
        last_guessed_type, last_correct_type = guessed_type, correct_type
    if in_correct:
        correct_chunk[last_correct_type] += 1

    def scores(n_correct, n_correct_found, n_guessed):
        precision = n_correct / n_guessed if n_guessed > 0 else 0.0
        recall = n_correct / n_correct_found if n_correct_found > 0 else 0.0
        fb1 = (2 * precision * recall / (precision + recall)
               if precision + recall > 0 else 0.0)
        return precision, recall, fb1

    types = sorted(set(found_correct) | set(found_guessed))
    return {
        "overall": scores(sum(correct_chunk.values()), sum(found_correct.values()),
                          sum(found_guessed.values())),
        "per_type": {t: scores(correct_chunk[t], found_correct[t], found_guessed[t])
                     for t in types},
        "support": {t: found_correct[t] for t in types},
        "accuracy": correct_tags / token_counter if token_counter else 0.0,
    }


# --------------------------------------------------------------------------
# Random tag sequences
# --------------------------------------------------------------------------

TYPES = ["LOC", "PER", "ORG-X"]  # a hyphen in a type: conlleval splits at the first


def random_tags(rng, prefixes, n_sequences, types=TYPES, max_length=10, p_outside=0.4):
    """Tags drawn independently: well-formed and malformed sequences alike."""
    tags = [f"{p}-{t}" for p in prefixes for t in types]
    y = []
    for _ in range(n_sequences):
        length = int(rng.integers(0, max_length + 1))
        outside = rng.random(length) < p_outside
        picks = rng.integers(0, len(tags), length)
        y.append(["O" if o else tags[k] for o, k in zip(outside, picks, strict=True)])
    return y, tags


def perturb(rng, y, tags, p=0.3):
    """A prediction: each tag replaced by a random one (or O) with probability p."""
    choices = [*tags, "O"]
    return [[choices[rng.integers(len(choices))] if rng.random() < p else tag for tag in seq]
            for seq in y]


def assert_matches_conlleval(y_true, y_pred, scheme):
    expected = conlleval(*_conlleval_view(y_true, y_pred, scheme))
    precision, recall, f1, _ = span_precision_recall_fscore_support(
        y_true, y_pred, average="micro", scheme=scheme, zero_division=0)
    assert (precision, recall, f1) == pytest.approx(expected["overall"], abs=1e-12)
    types = sorted(expected["per_type"])
    if types:
        p, r, f, support = span_precision_recall_fscore_support(
            y_true, y_pred, average=None, scheme=scheme, zero_division=0, labels=types)
        for k, t in enumerate(types):
            assert (p[k], r[k], f[k]) == pytest.approx(expected["per_type"][t], abs=1e-12)
            assert support[k] == expected["support"][t]
    assert flat_accuracy_score(y_true, y_pred) == pytest.approx(expected["accuracy"])


def _conlleval_view(y_true, y_pred, scheme):
    # scheme="plain" is conlleval on the labels prefixed with "I-".
    if scheme != "plain":
        return y_true, y_pred
    return ([[t if t == "O" else f"I-{t}" for t in s] for s in y]
            for y in (y_true, y_pred))


def seqeval_prfs(y_true, y_pred, average):
    # seqeval needs plain lists of lists: it does not flatten arrays or tuples.
    return seqeval_prfs_(
        [list(s) for s in y_true], [list(s) for s in y_pred], average=average,
        zero_division=0)


# --------------------------------------------------------------------------
# Spans: hand-worked decoding
# --------------------------------------------------------------------------


def spans_of(tags, scheme):
    """(type, start, stop) of one sequence."""
    return [(s.type, s.start, s.stop) for s in get_spans([tags], scheme=scheme)]


@pytest.mark.parametrize("scheme", ["IOB2", "IOB1"])
def test_iob_spans_including_malformed(scheme):
    # I- after O opens a span (conlleval; seqeval's strict IOB2 would drop it),
    # I- of another type opens a span, B- always opens one.
    tags = ["O", "I-PER", "I-PER", "I-LOC", "B-LOC", "I-PER", "B-PER", "I-PER", "O"]
    assert spans_of(tags, scheme) == [
        ("PER", 1, 3), ("LOC", 3, 4), ("LOC", 4, 5), ("PER", 5, 6), ("PER", 6, 8)]
    # B-PER I-LOC: two spans.
    assert spans_of(["B-PER", "I-LOC"], scheme) == [("PER", 0, 1), ("LOC", 1, 2)]


def test_iob1_b_separates_adjacent_spans_of_one_type():
    # IOB1: I- throughout, B- only where a span follows one of the same type.
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "B-LOC"]
    assert spans_of(tags, "IOB1") == [
        ("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("LOC", 5, 6)]


@pytest.mark.parametrize("scheme", ["IOE2", "IOE1"])
def test_ioe_spans_including_malformed(scheme):
    # E- closes a span; I- then O closes it too; E- after O is a one-token
    # span; the last span is closed by the end of the sequence.
    tags = ["I-PER", "E-PER", "E-PER", "O", "I-LOC", "O", "E-LOC", "I-ORG"]
    assert spans_of(tags, scheme) == [
        ("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("LOC", 6, 7), ("ORG", 7, 8)]
    # IOE1: E- only where a span precedes one of the same type.
    assert spans_of(["I-PER", "E-PER", "I-PER", "I-PER"], scheme) == [
        ("PER", 0, 2), ("PER", 2, 4)]


def test_bioes_spans_including_malformed():
    tags = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "O", "I-ORG", "E-ORG",
            "B-PER", "B-PER", "E-PER"]
    # S- is one token; O I- opens a span; B- B- are two spans.
    assert spans_of(tags, "BIOES") == [
        ("PER", 0, 1), ("LOC", 1, 4), ("LOC", 4, 5), ("ORG", 6, 8), ("PER", 8, 9),
        ("PER", 9, 11)]
    # An unfinished B- ends at O; I- before S- ends; a type change splits.
    assert spans_of(["B-PER", "O", "E-PER"], "BIOES") == [("PER", 0, 1), ("PER", 2, 3)]
    assert spans_of(["I-PER", "S-PER"], "BIOES") == [("PER", 0, 1), ("PER", 1, 2)]
    assert spans_of(["B-PER", "I-LOC", "E-LOC"], "BIOES") == [("PER", 0, 1), ("LOC", 1, 3)]
    # E-X B-X: two spans here; conlleval.pl (which knows no S-) would merge them.
    assert spans_of(["B-PER", "E-PER", "B-PER", "E-PER"], "BIOES") == [
        ("PER", 0, 2), ("PER", 2, 4)]


def test_bilou_is_bioes_with_l_and_u():
    tags = ["U-PER", "B-LOC", "L-LOC", "B-ORG", "I-ORG", "L-ORG", "L-ORG"]
    assert spans_of(tags, "BILOU") == [
        ("PER", 0, 1), ("LOC", 1, 3), ("ORG", 3, 6), ("ORG", 6, 7)]


def test_plain_spans_are_maximal_runs():
    # The whole label is the type, even one that looks like a tag.
    tags = ["PER", "PER", "O", "LOC", "PER", "PER", "B-X", "B-X"]
    assert spans_of(tags, "plain") == [
        ("PER", 0, 2), ("LOC", 3, 4), ("PER", 4, 6), ("B-X", 6, 8)]


def test_types_split_at_the_first_hyphen_and_may_be_empty():
    # conlleval: "B-ORG-X" has type "ORG-X"; a bare "B" has the empty type.
    assert spans_of(["B-ORG-X", "I-ORG-X", "B", "I", "O", "I"], "IOB2") == [
        ("ORG-X", 0, 2), ("", 2, 4), ("", 5, 6)]


def test_spans_never_cross_sequences():
    y = [["B-PER", "I-PER"], [], ["I-PER", "I-PER"], ["I-PER"]]
    assert get_spans(y) == [Span(0, "PER", 0, 2), Span(2, "PER", 0, 2), Span(3, "PER", 0, 1)]


# --------------------------------------------------------------------------
# Spans: hand-worked scores
# --------------------------------------------------------------------------

# True spans: PER(0, 0:2), LOC(0, 3:4), PER(1, 0:1), PER(1, 2:3) -> PER 3, LOC 1.
# Predicted:  PER(0, 0:2),              PER(1, 0:1), LOC(1, 2:3) -> PER 2, LOC 1.
# Correct:    PER 2, LOC 0.
Y_TRUE = [["B-PER", "I-PER", "O", "B-LOC"], ["B-PER", "O", "B-PER"]]
Y_PRED = [["B-PER", "I-PER", "O", "O"], ["B-PER", "O", "B-LOC"]]


def test_span_scores_hand_worked_micro():
    # micro: P = 2/3, R = 2/4, F = 2 * 2 / (3 + 4) = 4/7 (conlleval's overall line).
    assert span_precision_score(Y_TRUE, Y_PRED) == pytest.approx(2 / 3)
    assert span_recall_score(Y_TRUE, Y_PRED) == pytest.approx(0.5)
    assert span_f1_score(Y_TRUE, Y_PRED) == pytest.approx(4 / 7)


def test_span_scores_hand_worked_per_type_and_averages():
    # LOC: P 0/1, R 0/1, F 0.  PER: P 2/2, R 2/3, F 2 * 1 * 2/3 / (5/3) = 0.8.
    p, r, f, support = span_precision_recall_fscore_support(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(p, [0.0, 1.0])
    np.testing.assert_allclose(r, [0.0, 2 / 3])
    np.testing.assert_allclose(f, [0.0, 0.8])
    np.testing.assert_array_equal(support, [1, 3])
    # macro: P (0 + 1) / 2, R (0 + 2/3) / 2, F (0 + 0.8) / 2.
    assert span_precision_score(Y_TRUE, Y_PRED, average="macro") == pytest.approx(0.5)
    assert span_recall_score(Y_TRUE, Y_PRED, average="macro") == pytest.approx(1 / 3)
    assert span_f1_score(Y_TRUE, Y_PRED, average="macro") == pytest.approx(0.4)
    # weighted by true support LOC 1, PER 3: F (0 * 1 + 0.8 * 3) / 4 = 0.6.
    assert span_f1_score(Y_TRUE, Y_PRED, average="weighted") == pytest.approx(0.6)
    assert span_precision_score(Y_TRUE, Y_PRED, average="weighted") == pytest.approx(0.75)
    np.testing.assert_allclose(span_f1_score(Y_TRUE, Y_PRED, average=None), [0.0, 0.8])


def test_span_scores_equal_conlleval_on_hand_worked_example():
    assert_matches_conlleval(Y_TRUE, Y_PRED, "IOB2")


def test_span_labels_select_and_order_types():
    # Only PER: P 2/2, R 2/3 -> micro F = 0.8; an absent type has support 0.
    assert span_f1_score(Y_TRUE, Y_PRED, labels=["PER"]) == pytest.approx(0.8)
    p, r, f, support = span_precision_recall_fscore_support(
        Y_TRUE, Y_PRED, labels=["PER", "MISC", "LOC"], zero_division=0)
    np.testing.assert_allclose(f, [0.8, 0.0, 0.0])
    np.testing.assert_array_equal(support, [3, 0, 1])


def test_wrong_type_or_boundary_is_wrong():
    y_true = [["B-PER", "I-PER", "O"]]
    # Right type, wrong end; right span, wrong type: nothing is correct.
    assert span_f1_score(y_true, [["B-PER", "O", "O"]]) == 0.0
    assert span_f1_score(y_true, [["B-LOC", "I-LOC", "O"]]) == 0.0
    assert span_f1_score(y_true, [["B-PER", "I-PER", "O"]]) == 1.0


def test_malformed_prediction_scored_as_conlleval():
    # The predicted I-PER I-PER (no B-) is the span PER 0:2, as conlleval
    # reads it, so it matches; seqeval's strict mode would discard it.
    y_true = [["B-PER", "I-PER", "O"]]
    y_pred = [["I-PER", "I-PER", "O"]]
    assert span_f1_score(y_true, y_pred) == 1.0
    assert_matches_conlleval(y_true, y_pred, "IOB2")
    assert seqeval_metrics.f1_score(y_true, y_pred) == 1.0  # default mode agrees
    assert seqeval_metrics.f1_score(y_true, y_pred, mode="strict", scheme=IOB2) == 0.0


def test_seqeval_strict_mode_drops_spans_conlleval_counts():
    # Documented deviation: strict IOB2 keeps only PER in B-PER I-LOC.
    y = [["B-PER", "I-LOC"]]
    report = seqeval_metrics.classification_report(
        y, y, mode="strict", scheme=IOB2, output_dict=True)
    assert "LOC" not in report
    assert get_spans(y) == [Span(0, "PER", 0, 1), Span(0, "LOC", 1, 2)]


def test_conlleval_itself_knows_no_s_prefix():
    # Why BIOES follows the extension: conlleval.pl merges S-X S-X and E-X B-X.
    y = [["S-PER", "S-PER", "O", "B-LOC", "E-LOC", "B-LOC", "E-LOC"]]
    assert conlleval(y, y)["support"] == {"LOC": 1, "PER": 1}
    assert Counter(s.type for s in get_spans(y, scheme="BIOES")) == {"PER": 2, "LOC": 2}


def test_span_classification_report_rows_and_micro_avg():
    report = span_classification_report(Y_TRUE, Y_PRED, output_dict=True, zero_division=0)
    assert list(report) == ["LOC", "PER", "micro avg", "macro avg", "weighted avg"]
    assert report["PER"]["f1-score"] == pytest.approx(0.8)
    assert report["PER"]["support"] == 3
    assert report["micro avg"]["f1-score"] == pytest.approx(4 / 7)
    assert report["micro avg"]["precision"] == pytest.approx(2 / 3)
    text = span_classification_report(Y_TRUE, Y_PRED, digits=3, zero_division=0)
    assert re.search(r"PER\s+1\.000\s+0\.667\s+0\.800\s+3", text)
    assert re.search(r"micro avg\s+0\.667\s+0\.500\s+0\.571\s+4", text)


@pytest.mark.parametrize("sample_weight", [None, [1.0, 3.0]])
def test_span_classification_report_keeps_micro_avg_when_every_span_is_right(
        sample_weight):
    # scikit-learn would print an "accuracy" row instead of "micro avg" here
    report = span_classification_report(Y_TRUE, Y_TRUE, output_dict=True,
                                        sample_weight=sample_weight)
    assert list(report) == ["LOC", "PER", "micro avg", "macro avg", "weighted avg"]
    assert report["micro avg"]["f1-score"] == 1.0
    weighted = span_classification_report(Y_TRUE, Y_PRED, output_dict=True,
                                          sample_weight=sample_weight, zero_division=0)
    assert report["micro avg"]["support"] == weighted["micro avg"]["support"]
    assert "micro avg" in span_classification_report(Y_TRUE, Y_TRUE)


def test_span_classification_report_without_spans_raises():
    with pytest.raises(ValueError, match="no span"):
        span_classification_report([["O"]], [["O"]])


# --------------------------------------------------------------------------
# Spans: zero division
# --------------------------------------------------------------------------


def test_no_predicted_span():
    y_true, y_pred = [["B-PER", "O"]], [["O", "O"]]
    # Precision 0/0: zero_division; recall 0/1 = 0; F defined (= 0).
    with pytest.warns(UndefinedMetricWarning):
        assert span_precision_score(y_true, y_pred) == 0.0
    assert span_precision_score(y_true, y_pred, zero_division=1.0) == 1.0
    assert span_recall_score(y_true, y_pred, zero_division=1.0) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert span_f1_score(y_true, y_pred) == 0.0


def test_no_span_at_all():
    # conlleval prints 0 for everything; zero_division chooses.
    for y in ([["O", "O"]], [[]], []):
        assert span_f1_score(y, y, zero_division=0) == 0.0
        assert span_f1_score(y, y, zero_division=1.0) == 1.0
        assert span_f1_score(y, y, average=None, zero_division=0).shape == (0,)


@pytest.mark.parametrize("average", ["micro", "macro", "weighted"])
@pytest.mark.parametrize("metric", [span_precision_score, span_recall_score, span_f1_score])
def test_no_span_at_all_gives_zero_division_for_every_average(metric, average):
    """No type to average over: every average is undefined, so zero_division, not NaN."""
    for y in ([["O", "O"]], [[]], []):
        assert metric(y, y, average=average, zero_division=0.0) == 0.0
        assert metric(y, y, average=average, zero_division=1.0) == 1.0
        assert np.isnan(metric(y, y, average=average, zero_division=np.nan))
        with pytest.warns(UndefinedMetricWarning):
            assert metric(y, y, average=average) == 0.0
        scores = span_precision_recall_fscore_support(y, y, average=average,
                                                      zero_division=1.0)
        assert scores == (1.0, 1.0, 1.0, None)


# --------------------------------------------------------------------------
# Spans: against the oracles, on thousands of random sequences
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scheme, prefixes", [
    ("IOB2", "BI"), ("IOB1", "BI"), ("IOE2", "IE"), ("IOE1", "IE"),
])
def test_spans_equal_conlleval_on_random_sequences(scheme, prefixes):
    rng = np.random.default_rng(sum(map(ord, scheme)))
    # Types include the empty type (bare "B", "I", "E" tags) and one with a hyphen.
    y_true, tags = random_tags(rng, prefixes, 1500, types=[*TYPES, ""])
    tags = [t.rstrip("-") for t in tags]
    y_true = [[t.rstrip("-") for t in s] for s in y_true]
    y_pred = perturb(rng, y_true, tags)
    assert_matches_conlleval(y_true, y_pred, scheme)


def test_plain_spans_equal_conlleval_with_i_prefix():
    rng = np.random.default_rng(7)
    labels = ["PER", "LOC", "B-X"]
    y_true = [[labels[k] if rng.random() > 0.4 else "O" for k in rng.integers(0, 3, n)]
              for n in rng.integers(0, 10, 1500)]
    y_pred = perturb(rng, y_true, labels)
    assert_matches_conlleval(y_true, y_pred, "plain")


@pytest.mark.parametrize("scheme, prefixes", [("IOB2", "BI"), ("BIOES", "BIES")])
def test_spans_equal_seqeval_on_random_sequences(scheme, prefixes):
    rng = np.random.default_rng(1 if scheme == "IOB2" else 2)
    y_true, tags = random_tags(rng, prefixes, 3000)
    # Predictions as CRFClassifier.predict returns them: a list of arrays.
    y_pred = [np.array(s, dtype=str) for s in perturb(rng, y_true, tags)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # seqeval warns about nothing here
        for average in ("micro", "macro", "weighted", None):
            expected = seqeval_prfs(y_true, y_pred, average)
            got = span_precision_recall_fscore_support(
                y_true, y_pred, average=average, scheme=scheme, zero_division=0)
            for value, reference in zip(got[:3], expected[:3], strict=True):
                np.testing.assert_allclose(value, reference, rtol=1e-12)
            if average is None:
                np.testing.assert_array_equal(got[3], expected[3])


def test_spans_on_iob_tags_agree_with_both_oracles():
    # Where both apply, seqeval's default mode and conlleval agree.
    rng = np.random.default_rng(3)
    y_true, tags = random_tags(rng, "BI", 1000)
    y_pred = perturb(rng, y_true, tags)
    expected = conlleval(y_true, y_pred)["overall"]
    assert seqeval_prfs(y_true, y_pred, "micro")[:3] == pytest.approx(expected)
    assert_matches_conlleval(y_true, y_pred, "IOB2")


def test_bilou_equals_bioes_after_renaming():
    rng = np.random.default_rng(4)
    y_true, tags = random_tags(rng, "BILU", 1000)
    y_pred = perturb(rng, y_true, tags)
    rename = str.maketrans({"L": "E", "U": "S"})

    def as_bioes(y):
        return [[t if t == "O" else t[0].translate(rename) + t[1:] for t in s] for s in y]

    for average in ("micro", None):
        np.testing.assert_allclose(
            span_f1_score(y_true, y_pred, scheme="BILOU", average=average, zero_division=0),
            span_f1_score(as_bioes(y_true), as_bioes(y_pred), scheme="BIOES",
                          average=average, zero_division=0))
        np.testing.assert_allclose(
            span_f1_score(y_true, y_pred, scheme="BILOU", average=average, zero_division=0),
            seqeval_prfs(as_bioes(y_true), as_bioes(y_pred), average)[2], rtol=1e-12)


# --------------------------------------------------------------------------
# Token and sequence metrics
# --------------------------------------------------------------------------


def test_flat_metrics_hand_worked():
    y_true = [["DET", "N"], ["DET", "N", "V"]]
    y_pred = [["DET", "N"], ["DET", "V", "V"]]
    # 4 of 5 tokens right.
    assert flat_accuracy_score(y_true, y_pred) == pytest.approx(0.8)
    assert flat_accuracy_score(y_true, y_pred, normalize=False) == 4
    # DET: P 2/2 R 2/2 F 1; N: P 1/1 R 1/2 F 2/3; V: P 1/2 R 1/1 F 2/3.
    np.testing.assert_allclose(flat_f1_score(y_true, y_pred, average=None),
                               [1.0, 2 / 3, 2 / 3])
    assert flat_f1_score(y_true, y_pred, average="macro") == pytest.approx(7 / 9)
    assert flat_precision_score(y_true, y_pred, average="macro") == pytest.approx(5 / 6)
    assert flat_recall_score(y_true, y_pred, average="macro") == pytest.approx(5 / 6)
    # Only the first sequence is entirely right.
    assert sequence_accuracy_score(y_true, y_pred) == 0.5
    assert sequence_accuracy_score(y_true, y_pred, normalize=False) == 1


@pytest.mark.parametrize("average", ["micro", "macro", "weighted", None])
def test_flat_metrics_equal_sklearn_on_concatenated_labels(average):
    rng = np.random.default_rng(5)
    y_true, tags = random_tags(rng, "BI", 300)
    y_pred = perturb(rng, y_true, tags)
    flat_true = [t for s in y_true for t in s]
    flat_pred = [t for s in y_pred for t in s]
    labels = [t for t in tags if t.endswith("PER")]  # a subset, as sklearn allows
    for ours, theirs in [(flat_precision_score, skm.precision_score),
                         (flat_recall_score, skm.recall_score),
                         (flat_f1_score, skm.f1_score)]:
        for kwargs in ({}, {"labels": labels}):
            np.testing.assert_allclose(
                ours(y_true, y_pred, average=average, zero_division=0, **kwargs),
                theirs(flat_true, flat_pred, average=average, zero_division=0, **kwargs))
    np.testing.assert_allclose(
        flat_fbeta_score(y_true, y_pred, beta=2.0, average=average, zero_division=0),
        skm.fbeta_score(flat_true, flat_pred, beta=2.0, average=average, zero_division=0))


def test_flat_classification_report_equals_sklearn():
    rng = np.random.default_rng(6)
    y_true, tags = random_tags(rng, "BI", 200)
    y_pred = perturb(rng, y_true, tags)
    flat_true = [t for s in y_true for t in s]
    flat_pred = [t for s in y_pred for t in s]
    assert (flat_classification_report(y_true, y_pred, digits=3, zero_division=0)
            == skm.classification_report(flat_true, flat_pred, digits=3, zero_division=0))


def test_binary_flat_metrics_with_pos_label():
    y_true = [[1, 0, 1], [0]]
    y_pred = [[1, 1, 0], [0]]
    # pos_label 1: TP 1, FP 1, FN 1 -> P = R = F = 0.5.
    assert flat_f1_score(y_true, y_pred) == pytest.approx(0.5)
    assert flat_precision_score(y_true, y_pred, pos_label=0) == pytest.approx(0.5)


def test_sequence_accuracy_counts_empty_sequences_as_right():
    # 3 sequences: empty (right), right, one wrong label.
    y_true = [[], ["A", "B"], ["A"]]
    y_pred = [[], ["A", "B"], ["B"]]
    assert sequence_accuracy_score(y_true, y_pred) == pytest.approx(2 / 3)


def test_sequence_accuracy_of_no_sequence_follows_zero_division():
    """sklearn-crfsuite returned 0; sklearn's convention: zero_division, "warn" gives 0."""
    with pytest.warns(UndefinedMetricWarning, match="no sequence"):
        assert sequence_accuracy_score([], []) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sequence_accuracy_score([], [], zero_division=0.0) == 0.0
        assert sequence_accuracy_score([], [], zero_division=1.0) == 1.0
        assert np.isnan(sequence_accuracy_score([], [], zero_division=np.nan))
        # a count of no sequence is 0, defined
        assert sequence_accuracy_score([], [], normalize=False) == 0.0
        # defined as soon as there is a sequence, even an empty one
        assert sequence_accuracy_score([[]], [[]]) == 1.0
    with pytest.raises(ValueError, match="zero_division"):
        sequence_accuracy_score([], [], zero_division=2.0)


def test_labels_compare_across_types_of_container():
    # str vs numpy str compare equal; an int label never equals a str one.
    assert sequence_accuracy_score([["1"]], [np.array([1])]) == 0.0
    assert sequence_accuracy_score([["A", "B"]], [np.array(["A", "B"])]) == 1.0


# --------------------------------------------------------------------------
# Weights: a weight of k counts a sequence k times
# --------------------------------------------------------------------------


def test_sample_weight_equals_repeating_sequences():
    rng = np.random.default_rng(8)
    y_true, tags = random_tags(rng, "BI", 60)
    y_pred = perturb(rng, y_true, tags)
    weights = rng.integers(0, 4, len(y_true))
    repeated_true = [s for s, w in zip(y_true, weights, strict=True) for _ in range(w)]
    repeated_pred = [s for s, w in zip(y_pred, weights, strict=True) for _ in range(w)]
    for metric, kwargs in [
        (span_f1_score, {}), (span_f1_score, {"average": "macro"}),
        (span_precision_score, {"average": None}), (span_recall_score, {"average": "weighted"}),
        (flat_f1_score, {"average": "macro"}), (flat_accuracy_score, {}),
        (sequence_accuracy_score, {}),
    ]:
        if metric is not flat_accuracy_score and metric is not sequence_accuracy_score:
            kwargs = {**kwargs, "zero_division": 0}
        np.testing.assert_allclose(
            metric(y_true, y_pred, sample_weight=weights, **kwargs),
            metric(repeated_true, repeated_pred, **kwargs), err_msg=metric.__name__)


def test_sample_weight_needs_one_weight_per_sequence():
    with pytest.raises(ValueError, match="one weight per sequence"):
        span_f1_score(Y_TRUE, Y_PRED, sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one weight per sequence"):
        flat_f1_score(Y_TRUE, Y_PRED, average="macro", sample_weight=np.ones(7))


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------

ALL_METRICS = [
    flat_accuracy_score,
    lambda a, b: flat_precision_score(a, b, average="micro"),
    lambda a, b: flat_recall_score(a, b, average="micro"),
    lambda a, b: flat_f1_score(a, b, average="micro"),
    flat_classification_report,
    sequence_accuracy_score,
    span_precision_score,
    span_recall_score,
    span_f1_score,
    span_precision_recall_fscore_support,
    span_classification_report,
]


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_different_number_of_sequences_raises(metric):
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        metric(Y_TRUE, Y_PRED[:1])


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_different_sequence_length_raises_naming_the_sequence(metric):
    # Never truncated to the shorter one, as zip() would.
    y_pred = [Y_PRED[0], Y_PRED[1][:2]]
    with pytest.raises(ValueError, match="Sequence 1 has 3 labels in y_true but 2 in y_pred"):
        metric(Y_TRUE, y_pred)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_flat_list_of_labels_raises(metric):
    with pytest.raises(TypeError, match="Sequence 0 of y_true is a str"):
        metric(["B-PER", "O"], ["B-PER", "O"])
    with pytest.raises(TypeError, match="y_pred must be a list of label sequences"):
        metric(Y_TRUE, "B-PER")


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_any_mix_of_containers_gives_the_same_result(metric):
    mixed_true = (tuple(Y_TRUE[0]), np.array(Y_TRUE[1]))
    mixed_pred = [np.array(Y_PRED[0], dtype=object), list(Y_PRED[1])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected, got = metric(Y_TRUE, Y_PRED), metric(mixed_true, mixed_pred)
    if isinstance(expected, tuple):
        for a, b in zip(expected, got, strict=True):
            np.testing.assert_array_equal(a, b)
    else:
        assert got == expected


def test_two_dimensional_arrays_are_sequences_of_equal_length():
    y = np.array([["B-PER", "O"], ["O", "B-LOC"]])
    assert span_f1_score(y, y) == 1.0
    assert get_spans(y) == [Span(0, "PER", 0, 1), Span(1, "LOC", 1, 2)]


def test_tag_outside_the_scheme_raises_with_its_position():
    y = [["B-PER", "O"], ["O", "O", "S-PER"]]
    with pytest.raises(ValueError, match=r"'S-PER' \(sequence 1, token 2\) is not a IOB2"):
        span_f1_score(y, y)
    with pytest.raises(ValueError, match="not a IOE2 tag"):
        span_f1_score(y, y, scheme="IOE2")
    # A label without prefix is an error unless scheme="plain".
    with pytest.raises(ValueError, match=r"'PER' \(sequence 0, token 0\)"):
        get_spans([["PER"]], scheme="BIOES")
    assert get_spans([["PER"]], scheme="plain") == [Span(0, "PER", 0, 1)]


def test_invalid_scheme_average_and_label_types_raise():
    with pytest.raises(ValueError, match="scheme must be one of"):
        span_f1_score(Y_TRUE, Y_PRED, scheme="BIO")
    with pytest.raises(ValueError, match="average must be one of"):
        span_f1_score(Y_TRUE, Y_PRED, average="binary")
    with pytest.raises(TypeError, match="string tags"):
        span_f1_score([[0, 1]], [[0, 1]])


# --------------------------------------------------------------------------
# Scorers
# --------------------------------------------------------------------------

NAMES = {"john": "PER", "mary": "PER", "paris": "LOC", "rome": "LOC"}
FILLERS = ["the", "in", "went", "to", "saw"]


@pytest.fixture(scope="module")
def ner_data():
    """60 short sentences with one- and two-token names, ragged lengths."""
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(60):
        words, tags = [], []
        for _ in range(int(rng.integers(1, 6))):
            if rng.random() < 0.4:
                name = str(rng.choice(list(NAMES)))
                n = int(rng.integers(1, 3))
                words += [name] * n
                tags += [f"B-{NAMES[name]}"] + [f"I-{NAMES[name]}"] * (n - 1)
            else:
                words.append(str(rng.choice(FILLERS)))
                tags.append("O")
        X.append([{"w": w, "prev": p} for w, p in zip(words, ["<s>", *words[:-1]],
                                                       strict=False)])
        y.append(tags)
    return X, y


def test_scorers_call_predict_and_the_metric(ner_data):
    X, y = ner_data
    crf = CRFClassifier(alpha=0.1, max_iter=50).fit(X[:40], y[:40])
    y_pred = crf.predict(X[40:])
    assert span_f1_scorer(crf, X[40:], y[40:]) == span_f1_score(y[40:], y_pred)
    assert flat_f1_scorer(crf, X[40:], y[40:]) == flat_f1_score(y[40:], y_pred,
                                                                 average="macro")
    assert (sequence_accuracy_scorer(crf, X[40:], y[40:])
            == sequence_accuracy_score(y[40:], y_pred))
    recall = make_sequence_scorer(span_recall_score, average="macro", zero_division=0)
    assert recall(crf, X[40:], y[40:]) == span_recall_score(y[40:], y_pred, average="macro",
                                                            zero_division=0)
    loss = make_sequence_scorer(flat_accuracy_score, greater_is_better=False)
    assert loss(crf, X[40:], y[40:]) == -flat_accuracy_score(y[40:], y_pred)


def test_scorers_pickle():
    for scorer in (span_f1_scorer, flat_f1_scorer, sequence_accuracy_scorer,
                   make_sequence_scorer(span_f1_score, scheme="BIOES")):
        clone = pickle.loads(pickle.dumps(scorer))
        assert repr(clone) == repr(scorer)


def test_make_sequence_scorer_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        make_sequence_scorer("f1")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_span_f1_scorer_in_grid_search_with_two_jobs(ner_data):
    # n_jobs=2 pickles the scorer into worker processes; y is ragged.
    X, y = ner_data
    search = GridSearchCV(CRFClassifier(max_iter=30), {"alpha": [0.01, 10.0]},
                          scoring=span_f1_scorer, cv=KFold(3), n_jobs=2)
    search.fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all((scores >= 0) & (scores <= 1))
    # The names are learnable: light regularization must find most spans.
    assert search.best_score_ > 0.8
    assert search.best_params_ == {"alpha": 0.01}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scorers_in_cross_validate(ner_data):
    X, y = ner_data
    result = cross_validate(
        CRFClassifier(alpha=0.1, max_iter=30), X, y, cv=3,
        scoring={"span_f1": span_f1_scorer, "flat_f1": flat_f1_scorer,
                 "sequence_accuracy": sequence_accuracy_scorer,
                 "span_precision": make_sequence_scorer(span_precision_score,
                                                        zero_division=0)})
    for name in ("span_f1", "flat_f1", "sequence_accuracy", "span_precision"):
        scores = result[f"test_{name}"]
        assert scores.shape == (3,)
        assert np.all((scores >= 0) & (scores <= 1))


def test_sklearn_string_scorer_fails_on_ragged_y(ner_data):
    # The reason for these scorers: "f1_macro" cannot read ragged label sequences.
    X, y = ner_data
    crf = CRFClassifier(alpha=0.1).fit(X[:20], y[:20])
    with pytest.raises(ValueError, match="Sequence of sequences are no longer supported"):
        skm.get_scorer("f1_macro")(crf, X[20:], y[20:])
