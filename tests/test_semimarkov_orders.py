"""SemiMarkovCRF(order=d): brute force over all segmentations, identities with order 1, the
estimator's queries, model files and the limits it refuses by name."""

import io
import json
import pickle

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.pipeline import make_pipeline

from skcrf import SemiMarkovCRF, SequenceVectorizer, TokenFeaturizer, load_model, save_model
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.patterns.label_patterns import LabelPatterns
from skcrf.structures.semimarkov.segment_scores import (SegmentScores, segment_decode, segment_nbest,
                                             segment_role_posteriors, segmentation_scores)
from skcrf.structures.semimarkov.patterns import (PatternSegmentScores,
                                                  PatternSemiMarkovStructure)
from skcrf.inference.semimarkov.queries import CUT
from tests import _model_files as model_files
from tests._threads import (assert_same_fits_for_one_and_two_jobs, needs_two_threads,
                            results_per_thread_count)
from tests.naive_semimarkov_patterns import enumerate_ordered, ordered_score
from tests._ties import assert_same_predictions
from tests.structures.semimarkov.test_segments import _problem
from tests.test_semimarkov import _toy_corpus

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


# --- inference against brute force -------------------------------------------------

def _random_scores(seed, order, n_labels=3, max_length=3, with_spans=False):
    """Random order-d potentials with -inf here and there, and their pattern rows and weights."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, size=4)
    lengths[:2] = (1, 5)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n, C = int(offsets[-1]), n_labels

    def forbid(values, fraction):
        values[rng.random(values.shape) < fraction] = -np.inf
        return values

    longest = rng.integers(1, max_length + 1, size=C)
    length = rng.normal(size=(C, max_length))
    length[np.arange(1, max_length + 1) > longest[:, None]] = -np.inf
    scores = SegmentScores(forbid(rng.normal(size=(n, C)), 0.1), rng.normal(size=(n, C)),
                           rng.normal(size=(n, C)), length,
                           forbid(rng.normal(size=(C, C)), 0.2), forbid(rng.normal(size=C), 0.2),
                           rng.normal(size=C))
    if with_spans:
        scores.spans = rng.normal(size=(n, 2, C))
    every = LabelPatterns.every(C, order).rows
    rows = every[rng.random(every.shape[0]) < 0.4]
    rows = rows[rng.permutation(rows.shape[0])]  # a fitted model's rows need no order
    row_weights = rng.normal(size=rows.shape[0])
    patterns, index = LabelPatterns.from_rows(rows, C, order)
    weights = np.zeros(patterns.n_patterns)
    weights[index] = row_weights
    return PatternSegmentScores(scores, patterns, weights), offsets, rows, row_weights


def _sequence(scores, lo, hi):
    labels = scores.labels
    return (labels.state[lo:hi], labels.first[lo:hi], labels.last[lo:hi], labels.length,
            labels.transitions, labels.start, labels.end)


def _segments(segmentation, offsets, q):
    """The (start, stop, label) segments of sequence q, positions local to it."""
    lo, hi = offsets[q], offsets[q + 1]
    starts = np.flatnonzero(segmentation.starts[lo:hi]).tolist() + [hi - lo]
    return tuple((a, b, int(segmentation.label_ids[lo + a])) for a, b in zip(starts, starts[1:]))


@pytest.mark.parametrize("with_spans", [False, True])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("order", [2, 3])
def test_posteriors_and_paths_match_brute_force(order, seed, with_spans):
    scores, offsets, rows, row_weights = _random_scores(10 * order + seed, order,
                                                        with_spans=with_spans)
    posteriors = scores.posteriors(offsets)
    decoded = scores.decode(offsets)
    segmentations, nbest_scores, counts = scores.nbest(offsets, 4)
    totals = {name: 0.0 for name in ("lengths", "pairs", "starts", "ends", "patterns")}
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        spans = None if scores.labels.spans is None else scores.labels.spans[lo:hi]
        found = enumerate_ordered(_sequence(scores, lo, hi), rows, row_weights, spans)
        np.testing.assert_allclose(posteriors.log_z[q], found["log_z"], rtol=1e-10)
        # REPEAT (role 4) is not computed at order >= 2: see semimarkov_patterns
        np.testing.assert_allclose(posteriors.roles[lo:hi, :4], found["roles"][:, :4],
                                   atol=1e-10)
        for name in totals:
            totals[name] = totals[name] + found[name]
        finite = found["scores"][np.isfinite(found["scores"])]
        assert counts[q] == min(4, max(finite.size, 1 if hi == lo else 0))
        np.testing.assert_allclose(nbest_scores[q, :counts[q]], finite[:counts[q]], rtol=1e-10)
        if found["log_z"] > -np.inf and hi > lo:
            best = _segments(decoded, offsets, q)
            np.testing.assert_allclose(
                ordered_score(_sequence(scores, lo, hi), rows, row_weights, best, spans),
                found["scores"][0], rtol=1e-10)
            for k in range(counts[q]):
                kth = _segments(segmentations[k], offsets, q)
                np.testing.assert_allclose(
                    ordered_score(_sequence(scores, lo, hi), rows, row_weights, kth, spans),
                    nbest_scores[q, k], rtol=1e-10)
    np.testing.assert_allclose(posteriors.length_counts, totals["lengths"], atol=1e-10)
    np.testing.assert_allclose(posteriors.transition_counts, totals["pairs"], atol=1e-10)
    np.testing.assert_allclose(posteriors.start_counts, totals["starts"], atol=1e-10)
    np.testing.assert_allclose(posteriors.end_counts, totals["ends"], atol=1e-10)
    np.testing.assert_allclose(posteriors.pattern_counts, totals["patterns"][
        np.argsort(LabelPatterns.from_rows(rows, 3, order)[1])], atol=1e-10)
    # the score of a given segmentation: the decoded one's is its brute-force score
    given = scores.segmentation_scores(offsets, decoded)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        expected = ordered_score(_sequence(scores, lo, hi), rows, row_weights,
                                 _segments(decoded, offsets, q),
                                 None if scores.labels.spans is None
                                 else scores.labels.spans[lo:hi]) if hi > lo else 0.0
        np.testing.assert_allclose(given[q], expected, rtol=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [2, 3])
def test_fixed_boundaries_match_brute_force(order, seed):
    scores, offsets, rows, row_weights = _random_scores(50 + 10 * order + seed, order)
    rng = np.random.default_rng(seed)
    boundaries = np.where(rng.random(offsets[-1]) < 0.3, CUT, 0).astype(np.int8)
    boundaries[offsets[:-1][np.diff(offsets) > 0]] = 0
    scores.labels.boundaries = boundaries
    log_z, roles = scores.role_posteriors(offsets)
    decoded = scores.decode(offsets)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        cuts = [int(i) for i in np.flatnonzero(boundaries[lo:hi])]
        found = enumerate_ordered(_sequence(scores, lo, hi), rows, row_weights, cuts=cuts)
        np.testing.assert_allclose(log_z[q], found["log_z"], rtol=1e-10)
        np.testing.assert_allclose(roles[lo:hi, :4], found["roles"][:, :4], atol=1e-10)
        if found["log_z"] > -np.inf and hi > lo:
            best = _segments(decoded, offsets, q)
            assert all(any(a == cut for a, _, _ in best) for cut in cuts)
            np.testing.assert_allclose(
                ordered_score(_sequence(scores, lo, hi), rows, row_weights, best),
                found["scores"][0], rtol=1e-10)


# --- the structure: loss and gradient ----------------------------------------------

def _structure(order, allow_repeats=True, seed=2, every=True, segments=True):
    features, x, _, offsets, codes = _problem(seed, n_sequences=5, max_length=4)
    if not segments:
        features.segments = None
    if not allow_repeats:  # relabel so that no two consecutive gold segments share a label
        labels, starts = codes % 3, codes >= 3
        for i in range(1, labels.shape[0]):
            if starts[i] and i not in offsets and labels[i] == labels[i - 1]:
                labels[i:][labels[i:] == labels[i]] = (labels[i] + 1) % 3
        codes = labels + 3 * starts
    structure = PatternSemiMarkovStructure.for_training(
        features, offsets, codes, [3, 3, 3], order=order, all_possible_transitions=every,
        allow_repeats=allow_repeats)
    return structure, features, offsets, codes


@pytest.mark.parametrize("allow_repeats", [True, False])
@pytest.mark.parametrize("order", [2, 3])
def test_loss_matches_brute_force_and_gradient_finite_differences(order, allow_repeats):
    structure, features, offsets, codes = _structure(order, allow_repeats)
    assert structure.patterns.n_patterns > 0
    loss = NegativeLogLikelihood(structure, features, offsets, codes, l2=0.2)
    w = np.random.default_rng(3).normal(scale=0.5, size=loss.n_parameters)
    value, grad = loss(w)
    scores = structure.scores(features, w)
    rows = structure.patterns.rows
    weights = scores.pattern_weights
    expected = 0.5 * 0.2 * (w @ w)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        spans = scores.labels.spans[lo:hi]
        found = enumerate_ordered(_sequence(scores, lo, hi), rows, weights, spans)
        starts = [i - lo for i in range(lo, hi) if codes[i] >= 3 or i == lo] + [hi - lo]
        segments = tuple((a, b, int(codes[lo + a] % 3)) for a, b in zip(starts, starts[1:]))
        gold_score = (ordered_score(_sequence(scores, lo, hi), rows, weights, segments, spans)
                      if hi > lo else 0.0)
        expected += found["log_z"] - gold_score
    np.testing.assert_allclose(value, expected, rtol=1e-9)
    numeric = approx_fprime(w, lambda v: loss(v)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("order", [2, 3])
def test_online_statistics_sum_to_the_batch_ones(order):
    # the online solvers' token form has no segment features (refused by name)
    structure, features, offsets, codes = _structure(order, segments=False)
    w = np.random.default_rng(4).normal(scale=0.5, size=structure.n_parameters)
    pairs = structure.pair_blocks()
    gold = structure.statistics_rows(features, offsets, codes)
    np.testing.assert_allclose(gold.flatten(structure.layout, pairs, features),
                               structure.gold_statistics(features, offsets, codes), atol=1e-12)
    log_z, expected = structure.expected_rows(features, offsets, w)
    batch_log_z, batch = structure.expectation_terms(features, offsets)(w)
    np.testing.assert_allclose(log_z, batch_log_z, rtol=1e-12)
    np.testing.assert_allclose(expected.flatten(structure.layout, pairs, features), batch,
                               atol=1e-12)


# --- identities with order 1 ---------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_no_patterns_or_zero_weights_equal_order_1(seed):
    scores, offsets, _, _ = _random_scores(90 + seed, 3, with_spans=True)
    plain = scores.labels
    log_z, roles = segment_role_posteriors(plain, offsets)
    decoded = segment_decode(plain, offsets)
    _, nbest_scores, counts = segment_nbest(plain, offsets, 3)
    pairs_only = PatternSegmentScores(plain, LabelPatterns(3, 3, {}), np.zeros(0))
    zero = PatternSegmentScores(plain, scores.patterns, np.zeros(scores.patterns.n_patterns))
    for same in (pairs_only, zero):
        other_log_z, other_roles = same.role_posteriors(offsets)
        np.testing.assert_allclose(other_log_z, log_z, rtol=1e-12)
        np.testing.assert_allclose(other_roles[:, :4], roles[:, :4], atol=1e-12)
        other = same.decode(offsets)
        np.testing.assert_array_equal(other.label_ids, decoded.label_ids)
        np.testing.assert_array_equal(other.starts, decoded.starts)
        _, other_scores, other_counts = same.nbest(offsets, 3)
        np.testing.assert_array_equal(other_counts, counts)
        np.testing.assert_allclose(other_scores, nbest_scores, rtol=1e-12)
        np.testing.assert_allclose(same.segmentation_scores(offsets, decoded),
                                   segmentation_scores(plain, offsets, decoded), rtol=1e-12)
    # the pairs-only automaton's states are the labels: the kernels see order 1's arrays
    np.testing.assert_array_equal(pairs_only.posteriors(offsets).log_z, log_z)


@pytest.fixture(scope="module")
def toy():
    return _toy_corpus(n_sequences=60)


@pytest.fixture(scope="module")
def second(toy):
    X, y = toy
    return SemiMarkovCRF(alpha=0.1, order=2, max_iter=60).fit(X, y)


@pytest.mark.parametrize("scheme_tags", ["IOB2", "plain"])
def test_order_2_with_pairs_only_fits_as_order_1(toy, scheme_tags):
    X, y = toy
    if scheme_tags == "plain":
        y = [[tag.partition("-")[2] or "O" for tag in tags] for tags in y]
    one = SemiMarkovCRF(alpha=0.1, max_iter=40).fit(X, y)
    two = SemiMarkovCRF(alpha=0.1, max_iter=40, order=2, min_pattern_freq=10 ** 6).fit(X, y)
    assert two.label_patterns_.shape == (0, 3)
    for name in ("coef_", "first_coef_", "last_coef_", "length_coef_", "transition_coef_",
                 "start_coef_", "end_coef_"):
        np.testing.assert_allclose(getattr(two, name), getattr(one, name), rtol=1e-6,
                                   atol=1e-8)
    assert_same_predictions(two, one, X)
    for a, b in zip(two.predict_marginals(X[:5]), one.predict_marginals(X[:5])):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_plain_labels_never_repeat_at_order_2(toy):
    X, y = toy
    y = [[tag.partition("-")[2] or "O" for tag in tags] for tags in y]
    crf = SemiMarkovCRF(alpha=0.1, order=2, all_possible_transitions=True, max_iter=40)
    crf.fit(X, y)
    rows = crf.label_patterns_
    # no pattern holds a repeat: consecutive segments of plain labels differ
    assert not ((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] >= 0)).any()
    for q, segments in enumerate(crf.predict_segments(X)):
        for before, after in zip(segments, segments[1:]):
            assert before.label != after.label or before.stop != after.start
    assert np.isfinite(crf.sequence_log_proba(X[:5], y[:5])).all()


# --- the estimator ---------------------------------------------------------------

def test_queries_at_order_2(second, toy):
    crf = second
    X, y = toy
    assert crf.label_patterns_.shape[1] == 3 and crf.label_patterns_.shape[0] > 0
    assert crf.score(X, y) > 0.9
    marginals = crf.predict_marginals(X[:5])
    for m in marginals:
        np.testing.assert_allclose(m.sum(axis=1), 1.0, rtol=1e-9)
    predicted = crf.predict(X[:5])
    best = crf.predict_nbest(X[:5], 3)
    for tags, candidates in zip(predicted, best):
        assert candidates[0][0].tolist() == tags.tolist()
        probabilities = [p for _, p in candidates]
        assert probabilities == sorted(probabilities, reverse=True)
    log_proba = crf.sequence_log_proba(X[:5], [tags.tolist() for tags in predicted])
    np.testing.assert_allclose(np.exp(log_proba), [c[0][1] for c in best], rtol=1e-9)
    # fixing every tag to the gold gives the gold, fixing one keeps it
    fixed = [list(tags) for tags in y[:5]]
    for a, b in zip(crf.predict(X[:5], fixed=fixed), y[:5]):
        assert a.tolist() == list(b)
    one = [[None] * len(tags) for tags in y[:5]]
    one[0][0] = "B-ORG"
    assert crf.predict(X[:1], fixed=one[:1])[0][0] == "B-ORG"
    conditioned = crf.predict_marginals(X[:1], fixed=one[:1])[0]
    assert conditioned[0, list(crf.classes_).index("B-ORG")] == pytest.approx(1.0)


def test_iob1_marginals_are_refused_by_name_but_decoding_works():
    X, y = _toy_corpus(n_sequences=30, seed=3)
    crf = SemiMarkovCRF(alpha=0.1, order=2, scheme="IOB1", max_iter=30).fit(X, y)
    assert len(crf.predict(X[:2])) == 2
    assert np.isfinite(crf.sequence_log_proba(X[:2], crf.predict(X[:2]))).all()
    with pytest.raises(ValueError, match="Tag marginals of scheme IOB1 need"):
        crf.predict_marginals(X[:2])


def test_partial_fit_at_order_2_is_refused_by_name(toy):
    X, y = toy
    with pytest.raises(ValueError, match="partial_fit needs order=1 for a SemiMarkovCRF"):
        SemiMarkovCRF(order=2, solver="sgd").partial_fit(X, y, classes=sorted(
            {tag for tags in y for tag in tags}))


def test_online_solver_fits_order_2(toy):
    X, y = toy
    crf = SemiMarkovCRF(order=2, solver="perceptron", max_iter=10, random_state=0).fit(X, y)
    assert crf.label_patterns_.shape[1] == 3
    assert crf.score(X, y) > 0.9


def test_segment_features_at_order_2():
    X, y = _toy_corpus(n_sequences=40, seed=5)
    words = [[token["w"] for token in sequence] for sequence in X]
    pipe = make_pipeline(TokenFeaturizer(segment_features=True), SequenceVectorizer(),
                         SemiMarkovCRF(alpha=0.1, order=2, max_iter=40))
    pipe.fit(words, y)
    crf = pipe[-1]
    assert crf.segment_coef_.shape[0] == len(crf.segment_classes_)
    assert pipe.score(words, y) > 0.9
    assert all(np.isfinite(m).all() for m in pipe.predict_proba(words[:3]))


def test_too_many_automaton_states_fail_with_advice():
    rng = np.random.default_rng(0)
    types = [f"T{k}" for k in range(9)]
    X, y = [], []
    for _ in range(20):
        tags = [f"B-{types[k]}" for k in rng.integers(9, size=6)]
        X.append([{"w": t} for t in tags])
        y.append(tags)
    with pytest.raises(ValueError, match="automaton states, more than the 1024"):
        SemiMarkovCRF(order=3, all_possible_transitions=True).fit(X, y)


@needs_two_threads
def test_order_2_is_bitwise_identical_for_thread_counts(toy):
    X, y = toy
    assert_same_fits_for_one_and_two_jobs(
        lambda n_jobs: SemiMarkovCRF(alpha=0.1, order=2, n_jobs=n_jobs, max_iter=15), X, y,
        ["pattern_coef_", "coef_"])
    scores, offsets, _, _ = _random_scores(7, 3, with_spans=True)
    first, second = results_per_thread_count(lambda: scores.posteriors(offsets))
    for name in ("log_z", "roles", "transition_counts", "pattern_counts", "span_marginals"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


# --- model files -----------------------------------------------------------------

def _saved(crf, tmp_path):
    path = tmp_path / "order2.skcrf"
    save_model(crf, path)
    return path.read_bytes()


def _with_array(data, attribute, value):
    """The model file ``data`` with the array of ``attribute`` replaced (checksum recomputed)."""
    tree = json.loads(model_files.members(model_files.split(data)[1])["model.json"])
    ref = tree["model"]["attributes"][attribute]["ref"]
    buffer = io.BytesIO()
    np.save(buffer, value)
    return model_files.rewritten(data, **{f"{ref}__npy": buffer.getvalue()})


def test_model_files_and_pickles_keep_the_patterns(second, toy, tmp_path):
    X, _ = toy
    loaded = load_model(io.BytesIO(_saved(second, tmp_path)))
    for copy in (loaded, pickle.loads(pickle.dumps(second))):
        np.testing.assert_array_equal(copy.label_patterns_, second.label_patterns_)
        np.testing.assert_array_equal(copy.pattern_coef_, second.pattern_coef_)
        assert copy.order == 2
        for a, b in zip(copy.predict(X), second.predict(X)):
            assert a.tolist() == b.tolist()
        for a, b in zip(copy.predict_marginals(X[:3]), second.predict_marginals(X[:3])):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("edit, match", [
    (lambda rows, coef: (np.where(rows == rows[0, -1], 99, rows), coef), "label pattern"),
    (lambda rows, coef: (rows[:, 1:], coef), "label_patterns_"),
    (lambda rows, coef: (np.vstack([rows[:1]] * len(rows)), coef), "repeats pattern 0"),
    (lambda rows, coef: (rows, np.full_like(coef, np.nan)), "pattern_coef_"),
    (lambda rows, coef: (rows, coef[1:]), "pattern_coef_|n_patterns"),
])
def test_edited_pattern_files_are_refused_by_name(second, tmp_path, edit, match):
    data = _saved(second, tmp_path)
    rows, coef = edit(second.label_patterns_.copy(), second.pattern_coef_.copy())
    edited = _with_array(_with_array(data, "label_patterns_", rows), "pattern_coef_", coef)
    with pytest.raises(ValueError, match=match):
        load_model(io.BytesIO(edited))


def test_a_pattern_file_without_its_order_is_refused(second, tmp_path):
    data = _saved(second, tmp_path)

    def order_one(tree):
        tree["model"]["params"]["order"] = 1

    with pytest.raises(ValueError, match="order=1 has no label_patterns_"):
        load_model(io.BytesIO(model_files.rewritten(data, order_one)))


def test_pattern_features_name_segment_labels(second):
    from skcrf.inspection import pattern_features

    rows = pattern_features(second, top=None)
    assert len(rows) == second.label_patterns_.shape[0]
    segment_labels = set(second.segment_classes_.tolist())
    assert all(len(row.labels) == 3 and set(row.labels) <= segment_labels for row in rows)


def test_allowed_transitions_hold_at_order_2(toy):
    X, y = toy
    allowed = {("O", "PER"), ("O", "ORG"), ("O", "LOC"), ("PER", "O"), ("ORG", "O"),
               ("LOC", "O"), ("O", "O")}
    crf = SemiMarkovCRF(alpha=0.1, order=2, all_possible_transitions=True,
                        allowed_transitions=allowed, max_iter=30)
    # the toy has entities right after entities: a gold segmentation the pairs forbid
    with pytest.raises(ValueError, match="a transition allowed_transitions forbids"):
        crf.fit(X, y)
    keep = [q for q, tags in enumerate(y) if set(zip(_segment_labels(tags),
                                                      _segment_labels(tags)[1:])) <= allowed]
    X, y = [X[q] for q in keep], [y[q] for q in keep]
    crf.fit(X, y)
    labels = crf.segment_classes_.tolist()
    for row in crf.label_patterns_:
        pairs = [(labels[a], labels[b]) for a, b in zip(row, row[1:]) if a >= 0]
        assert set(pairs) <= allowed
    for candidates in crf.predict_nbest(X[:5], 4):
        for tags, _ in candidates:
            segments = _segment_labels(tags)
            assert set(zip(segments, segments[1:])) <= allowed


def _segment_labels(tags):
    from skcrf.tags import tags_to_segments

    found, labels, position = tags_to_segments(list(tags), "IOB2"), [], 0
    for segment in found:  # each "O" token is a segment of its own
        labels += ["O"] * (segment.start - position) + [segment.label]
        position = segment.stop
    return labels + ["O"] * (len(tags) - position)


def test_warm_start_carries_the_patterns(toy):
    X, y = toy
    crf = SemiMarkovCRF(alpha=0.1, order=2, warm_start=True, max_iter=200).fit(X, y)
    first = crf.n_iter_
    patterns = crf.label_patterns_.copy()
    crf.set_params(alpha=0.09).fit(X, y)
    assert crf.n_iter_ < first
    assert crf.label_patterns_.shape[1] == patterns.shape[1] == 3
