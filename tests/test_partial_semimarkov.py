"""Semi-Markov structures on token constraints: log Z - log Z_allowed against brute force.

Every labelled segmentation of small sequences is enumerated; those with a
segment covering a token that does not allow its label are dropped from
``Z_allowed``. Checked: the loss, its gradient (numerically), the constrained
role marginals and counts, with ``-inf`` potentials (forbidden repeats and
transitions, lengths a label may not take).
"""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import logsumexp

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.partial import ConstrainedTerms, masked_structure
from skcrf.learning.partial_segments import segment_label_mask, tag_segment_label
from skcrf.structures._parameters import StatePairs
from skcrf.structures.semimarkov.segment_scores import SegmentPosteriors
from skcrf.structures.semimarkov.structure import SemiMarkovStructure
from tests._structure_checks import nonempty_sequences
from tests.naive_semimarkov import enumerate_sequence, labelled_segmentations, segmentation_score


def _problem(seed, n_sequences=4, n_features=4, max_length=4, forbid=False):
    rng = np.random.default_rng(seed)
    X, offsets = nonempty_sequences(rng, n_sequences, n_features, max_length)
    n_tokens = int(offsets[-1])
    max_lengths = [2, 3, 1]
    allowed = None
    if forbid:
        allowed = np.ones((3, 3), dtype=bool)
        allowed[0, 1] = False
    structure = SemiMarkovStructure(StatePairs.every(n_features, 9), max_lengths,
                                    allow_repeats=not forbid, allowed_transitions=allowed)
    # each token allows a random non-empty set of segment labels, some all of them
    mask = rng.random((n_tokens, 3)) < 0.6
    mask[np.arange(n_tokens), rng.integers(0, 3, size=n_tokens)] = True
    mask[rng.random(n_tokens) < 0.3] = True
    return X, offsets, structure, mask, rng


def _brute_force(structure, X, offsets, allowed, w):
    """sum_q log Z_q - log Z_allowed_q by enumeration (``inf`` where nothing is allowed)."""
    scores = structure.scores(as_feature_arrays(X), w)
    total = 0.0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        candidates = list(labelled_segmentations(hi - lo, 3, structure.max_length))
        with np.errstate(invalid="ignore"):
            values = np.array([segmentation_score(
                scores.state[lo:hi], scores.first[lo:hi], scores.last[lo:hi], scores.length,
                scores.transitions, scores.start, scores.end, s) for s in candidates])
        values[np.isnan(values)] = -np.inf
        consistent = np.array([all(allowed[lo + a:lo + b, y].all() for a, b, y in s)
                               for s in candidates])
        total += logsumexp(values) - logsumexp(values[consistent])
    return total


@pytest.mark.parametrize("seed, forbid", [(0, False), (1, True), (2, False), (3, True)])
def test_segment_loss_and_gradient_match_enumeration_of_consistent_segmentations(seed,
                                                                                 forbid):
    X, offsets, structure, allowed, rng = _problem(seed, forbid=forbid)
    terms = ConstrainedTerms(structure, as_feature_arrays(X), offsets, allowed)
    w = rng.normal(scale=0.6, size=structure.n_parameters)
    expected = _brute_force(structure, X, offsets, allowed, w)
    loss, grad = terms(w)
    assert np.isfinite(expected)
    np.testing.assert_allclose(loss, expected, rtol=1e-10)
    numeric = approx_fprime(w, lambda v: _brute_force(structure, X, offsets, allowed, v), 1e-6)
    # weights of forbidden (-inf) cells get no gradient either way
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def test_constrained_segment_marginals_match_enumeration():
    X, offsets, structure, allowed, rng = _problem(4, forbid=True)
    mask = np.where(allowed, 0.0, -np.inf)
    w = rng.normal(size=structure.n_parameters)
    features = as_feature_arrays(X)
    scores = masked_structure(structure, mask).scores(features, w)
    posteriors = SegmentPosteriors.of_scores(scores, offsets)
    lengths, pairs = np.zeros_like(scores.length), np.zeros((3, 3))
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        log_z, roles, length_counts, pair_counts, *_ = enumerate_sequence(
            scores.state[lo:hi], scores.first[lo:hi], scores.last[lo:hi], scores.length,
            scores.transitions, scores.start, scores.end)
        lengths += length_counts
        pairs += pair_counts
        np.testing.assert_allclose(posteriors.log_z[q], log_z, rtol=1e-10)
        np.testing.assert_allclose(posteriors.roles[lo:hi], roles, atol=1e-12)
        # no segment of a disallowed label covers a token (the kernel's role
        # marginals are differences of sums: zero to rounding)
        assert (np.abs(posteriors.roles[lo:hi, 0][~allowed[lo:hi]]) < 1e-12).all()
    np.testing.assert_allclose(posteriors.length_counts, lengths, atol=1e-10)
    np.testing.assert_allclose(posteriors.transition_counts, pairs, atol=1e-10)


def test_tokens_allowing_every_label_add_nothing():
    X, offsets, structure, allowed, rng = _problem(5)
    terms = ConstrainedTerms(structure, as_feature_arrays(X), offsets,
                             np.ones_like(allowed))
    loss, grad = terms(rng.normal(size=structure.n_parameters))
    np.testing.assert_allclose(loss, 0.0, atol=1e-10)
    np.testing.assert_allclose(grad, 0.0, atol=1e-10)


def test_tag_sets_map_to_segment_labels_whatever_their_prefixes():
    tags = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]
    assert [tag_segment_label(t, "IOB2") for t in tags] == ["LOC", "PER", "LOC", "PER", "O"]
    allowed_tags = np.array([[False, True, False, False, False],   # {B-PER}
                             [True, False, False, True, False],    # {B-LOC, I-PER}
                             [False, False, False, False, True],   # O
                             [True, True, True, True, True]])      # unknown
    mask = segment_label_mask(allowed_tags, tags, ["LOC", "PER", "O"], "IOB2")
    np.testing.assert_array_equal(mask == 0, [[False, True, False], [True, True, False],
                                              [False, False, True], [True, True, True]])
    with pytest.raises(ValueError, match="'B-ORG' reads as the segment label 'ORG'"):
        segment_label_mask(np.ones((1, 1), bool), ["B-ORG"], ["LOC", "O"], "IOB2")


def _names_corpus(n_sequences=60, seed=0):
    """First names (B-PER), surnames after them (I-PER), cities (B-LOC), other words (O)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words, tags = [], []
        for _ in range(int(rng.integers(2, 6))):
            kind = rng.integers(4)
            if kind == 0:
                words += [str(rng.choice(["john", "mary"])), str(rng.choice(["smith", "lee"]))]
                tags += ["B-PER", "I-PER"]
            elif kind == 1:
                words.append(str(rng.choice(["paris", "rome"])))
                tags.append("B-LOC")
            else:
                words.append(str(rng.choice(["the", "went", "to", "saw"])))
                tags.append("O")
        X.append([{"w": w} for w in words])
        y.append(tags)
    return X, y


def _partly_labelled(y, seed=1):
    """The first 10 sequences as they are; in the others 40% of the tags unknown and
    half of the remaining PER tags the set {B-PER, I-PER}."""
    rng = np.random.default_rng(seed)
    return [list(tags) for tags in y[:10]] + [
        [None if rng.random() < 0.4 else ({"B-PER", "I-PER"} if tag.endswith("PER")
                                          and rng.random() < 0.5 else tag) for tag in tags]
        for tags in y[10:]]


def test_semimarkov_crf_learns_from_unknown_and_set_tags():
    from skcrf import SemiMarkovCRF

    X, y = _names_corpus()
    partial = _partly_labelled(y)
    crf = SemiMarkovCRF(alpha=0.01, max_iter=100).fit(X, partial)
    assert list(crf.segment_classes_) == ["LOC", "PER", "O"]
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95


@pytest.mark.parametrize("solver", ["sgd", "perceptron"])
def test_semimarkov_crf_learns_online_from_unknown_and_set_tags(solver):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from skcrf import SemiMarkovCRF

    X, y = _names_corpus()
    partial = _partly_labelled(y)
    crf = SemiMarkovCRF(alpha=0.01, solver=solver, max_iter=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 15 epochs are enough here
        crf.fit(X, partial)
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95


def test_an_online_step_on_a_constrained_segmentation_is_the_partial_gradient():
    # SGD without a penalty steps along -eta times the gradient of log Z - log Z_allowed
    from skcrf.features.arrays import take_sequences
    from skcrf.learning.online import OnlineProblem
    from tests._online_checks import assert_step_along_gradient, one_sgd_step

    X, offsets, structure, allowed, rng = _problem(1, forbid=True)
    features = as_feature_arrays(X)
    problem = OnlineProblem(structure, features, offsets,
                            np.full(offsets[-1], -1, dtype=np.int64), allowed)
    q = 0  # the longest sequence
    assert problem.constrained[q] and not allowed[offsets[q]:offsets[q + 1]].all()
    w0 = rng.normal(scale=0.5, size=structure.n_parameters)
    state = one_sgd_step(problem, q, w0)
    part, part_offsets, rows = take_sequences(features, offsets, np.array([q]))
    loss, grad = ConstrainedTerms(structure, part, part_offsets, allowed[rows])(w0)
    assert_step_along_gradient(state, w0, loss, grad)


def test_semimarkov_partial_fit_refuses_partial_labels_and_says_what_to_do():
    from skcrf import SemiMarkovCRF

    X, y = _names_corpus(n_sequences=5)
    y[1][0] = None
    classes = sorted({tag for tags in y for tag in tags if tag is not None})
    with pytest.raises(ValueError, match="partial_fit cannot train on .*fit takes them"):
        SemiMarkovCRF(solver="sgd").partial_fit(X, y, classes=classes)


def test_semimarkov_crf_needs_a_fully_labelled_sequence_for_the_lengths():
    from skcrf import SemiMarkovCRF

    X, y = _names_corpus(n_sequences=5)
    y = [[None] + tags[1:] for tags in y]
    with pytest.raises(ValueError, match="at least one fully labelled sequence"):
        SemiMarkovCRF().fit(X, y)


def _brute_force_ordered(structure, features, offsets, allowed, w):
    """sum_q log Z_q - log Z_allowed_q of an order-d structure (segment features too)."""
    from tests.naive_semimarkov_patterns import ordered_score

    scores = structure.scores(features, w)
    labels = getattr(scores, "labels", scores)
    rows = structure.patterns.rows if hasattr(scores, "labels") else np.zeros((0, 1))
    weights = scores.pattern_weights if hasattr(scores, "labels") else np.zeros(0)
    total = 0.0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        potentials = (labels.state[lo:hi], labels.first[lo:hi], labels.last[lo:hi],
                      labels.length, labels.transitions, labels.start, labels.end)
        spans = None if labels.spans is None else labels.spans[lo:hi]
        candidates = list(labelled_segmentations(hi - lo, structure.n_labels,
                                                 labels.length.shape[1]))
        values = np.array([ordered_score(potentials, rows, weights, s, spans)
                           for s in candidates])
        consistent = np.array([all(allowed[lo + a:lo + b, y].all() for a, b, y in s)
                               for s in candidates])
        total += logsumexp(values) - logsumexp(values[consistent])
    return total


@pytest.mark.parametrize("order, segments", [(1, True), (2, False), (2, True), (3, True)])
def test_orders_and_segment_features_match_enumeration_of_consistent_segmentations(
        order, segments):
    from tests.test_semimarkov_orders import _structure

    if order == 1:
        from tests.structures.semimarkov.test_segments import _problem as segment_problem

        features, _, _, offsets, codes = segment_problem(2, n_sequences=5, max_length=4)
        structure = SemiMarkovStructure.for_training(features, offsets, codes, [3, 3, 3],
                                                     all_possible_states=True)
        assert structure.segment_pairs is not None
    else:
        structure, features, offsets, _ = _structure(order, segments=segments)
    rng = np.random.default_rng(order)
    allowed = rng.random((offsets[-1], 3)) < 0.6
    allowed[np.arange(offsets[-1]), rng.integers(0, 3, size=offsets[-1])] = True
    terms = ConstrainedTerms(structure, features, offsets, allowed)
    w = rng.normal(scale=0.5, size=structure.n_parameters)
    expected = _brute_force_ordered(structure, features, offsets, allowed, w)
    loss, grad = terms(w)
    assert np.isfinite(expected)
    np.testing.assert_allclose(loss, expected, rtol=1e-9)
    numeric = approx_fprime(w, lambda v: _brute_force_ordered(structure, features, offsets,
                                                              allowed, v), 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def test_semimarkov_crf_learns_from_partial_tags_with_segment_features():
    from skcrf import SemiMarkovCRF
    from skcrf.metrics import span_f1_score
    from tests.test_semimarkov_segments import _dictionary_task, _pipeline

    X_train, y_train = _dictionary_task(300, seed=2)
    X_test, y_test = _dictionary_task(200, seed=3)
    rng = np.random.default_rng(0)
    # a third of the sentences fully labelled; in the others, O tokens unknown at random
    partial = [list(tags) if q % 3 == 0 else
               [None if tag == "O" and rng.random() < 0.4 else tag for tag in tags]
               for q, tags in enumerate(y_train)]
    pipe = _pipeline(SemiMarkovCRF(alpha=0.01), segment_features=["words"],
                     max_segment_length=2).fit(X_train, partial)
    assert span_f1_score(y_test, [list(p) for p in pipe.predict(X_test)]) > 0.99


def test_semimarkov_crf_learns_from_partial_tags_at_order_2():
    from skcrf import SemiMarkovCRF

    X, y = _names_corpus()
    rng = np.random.default_rng(1)
    partial = [list(tags) for tags in y[:10]] + [
        [None if rng.random() < 0.4 else tag for tag in tags] for tags in y[10:]]
    crf = SemiMarkovCRF(alpha=0.01, order=2, max_iter=100).fit(X, partial)
    assert crf.label_patterns_.shape[1] == 3
    predicted = crf.predict(X)
    accuracy = np.mean([a == b for p, t in zip(predicted, y) for a, b in zip(p, t)])
    assert accuracy > 0.95
