"""Inference over a lattice of candidate labels against brute-force enumeration.

Summing over the labellings of each token's candidates is summing over every
labelling with the other labels' unary scores at ``-inf``: that is the
oracle, by enumeration for small problems and by the exact pattern pass for
larger ones.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skcrf.inference.patterns.automaton import forward_backward_patterns
from skcrf.structures.patterns.label_patterns import LabelPatterns
from skcrf.structures.patterns.automaton import PatternAutomaton
from skcrf.structures.patterns.chain import _ExactTables
from skcrf.structures.patterns.pruned import CandidateLattice, candidate_labels
from tests._kernel_checks import kernel_settings
from tests._threads import results_per_thread_count
from tests.naive_patterns import enumerate_batch

SETTINGS = kernel_settings(60)


@st.composite
def pruned_problems(draw, orders=(2, 3, 4), max_classes=3, max_length=5):
    """Random batches with random candidate sets (every label, some, one), and -inf scores."""
    n_classes = draw(st.integers(1, max_classes))
    order = draw(st.sampled_from(orders))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    labels = rng.integers(0, n_classes, n_tokens)
    if draw(st.booleans()):
        patterns = LabelPatterns.every(n_classes, order)
    else:
        patterns = LabelPatterns.seen(labels, offsets, n_classes, order)
        if patterns.n_patterns and draw(st.booleans()):
            kept = patterns.rows[rng.random(patterns.n_patterns) < 0.6]
            patterns, _ = LabelPatterns.from_rows(kept, n_classes, order)
    # a random "marginal" per label: the candidates are those above a threshold
    scores = rng.random((n_tokens, n_classes))
    threshold = draw(st.sampled_from([0.0, 0.3, 0.7, 1.1]))
    unary = rng.normal(scale=2.0, size=(n_tokens, n_classes))
    transitions = rng.normal(scale=2.0, size=(n_classes, n_classes))
    weights = rng.normal(scale=2.0, size=patterns.n_patterns)
    start = rng.normal(size=n_classes)
    end = rng.normal(size=n_classes)
    if draw(st.booleans()):
        transitions[rng.random((n_classes, n_classes)) < 0.3] = -np.inf
    if draw(st.booleans()):
        end[rng.random(n_classes) < 0.3] = -np.inf
    regime = draw(st.sampled_from(["moderate", "huge pattern", "huge unary"]))
    if regime == "huge pattern" and weights.size:
        weights[rng.integers(weights.size)] = 60.0  # past THETA_GUARD: log space throughout
    elif regime == "huge unary":
        unary *= 400.0  # token totals underflow in the scaled pass: log space for those
    return dict(unary=unary, transitions=transitions, patterns=patterns, weights=weights,
                start=start, end=end, offsets=offsets, labels=labels, scores=scores,
                threshold=threshold)


def _lattice(p):
    return CandidateLattice.of_marginals(p["offsets"], p["scores"], p["labels"], p["threshold"],
                                         p["patterns"])


def _masked_unary(p):
    """The unary scores with every label that is not a candidate at -inf."""
    cand_ptr, cand_label = candidate_labels(p["scores"], p["labels"], p["threshold"])
    keep = np.zeros(p["unary"].shape, dtype=bool)
    tokens = np.repeat(np.arange(keep.shape[0]), np.diff(cand_ptr))
    keep[tokens, cand_label] = True
    return np.where(keep, p["unary"], -np.inf)


def _posteriors(p, lattice=None, weights=None):
    lattice = _lattice(p) if lattice is None else lattice
    return lattice.posteriors(p["unary"], p["transitions"], p["weights"], p["start"], p["end"],
                              weights)


def _start_end_counts(offsets, marginals):
    n_classes = marginals.shape[1]
    nonempty = np.diff(offsets) > 0
    first, last = offsets[:-1][nonempty], offsets[1:][nonempty] - 1
    return (marginals[first].sum(axis=0) if first.size else np.zeros(n_classes),
            marginals[last].sum(axis=0) if last.size else np.zeros(n_classes))


@SETTINGS
@given(pruned_problems())
def test_the_lattice_sums_the_candidates_labellings(p):
    _check_against_enumeration(p)


def test_an_end_term_in_the_subnormal_range_sends_the_sequence_to_log_space():
    # found by a stress run: the first sequence's best label ends with a weight
    # 728 below the best end, so alpha * beta summed to a subnormal 5e-317 that
    # the scaled pass accepted; dividing by it gave inf, and the marginals NaN
    p = dict(unary=np.array([[-153.07536925, -571.04063034, 2193.17968099],
                             [149.01916473, -232.73632427, -185.64969598]]),
             transitions=np.array([[-440.91058843, -696.3993638, -257.92864497],
                                   [318.08395641, -157.44538034, 632.12074395],
                                   [-131.86940518, 16.01131295, 1020.2417618]]),
             weights=np.zeros(0), start=np.array([179.88482249, -166.72548275, -60.33686162]),
             end=np.array([178.37329348, 638.57905125, -88.97470802]),
             offsets=np.array([0, 1, 2]), labels=np.array([2, 0]),
             scores=np.array([[0.23681051, 0.80127447, 0.58216204],
                              [0.09412864, 0.43312694, 0.4790513]]), threshold=0.0)
    p["patterns"] = LabelPatterns.seen(p["labels"], p["offsets"], 3, 2)
    _check_against_enumeration(p)


def _check_against_enumeration(p):
    expected = enumerate_batch(_masked_unary(p), p["transitions"], p["patterns"].rows,
                               p["weights"], p["start"], p["end"], p["offsets"])
    log_z, marginals, pairs, pattern_counts, start_counts, end_counts = _posteriors(p)
    feasible = np.isfinite(expected["log_z"])
    np.testing.assert_allclose(log_z[feasible], expected["log_z"][feasible], rtol=1e-10,
                               atol=1e-10)
    assert np.all(np.isneginf(log_z[~feasible]))
    for array in (marginals, pairs, pattern_counts, start_counts, end_counts):
        assert np.isfinite(array).all()
    np.testing.assert_allclose(marginals, expected["marginals"], atol=1e-9)
    np.testing.assert_allclose(pairs, expected["pair_counts"], atol=1e-9)
    np.testing.assert_allclose(pattern_counts, expected["pattern_counts"], atol=1e-9)
    first, last = _start_end_counts(p["offsets"], expected["marginals"])
    np.testing.assert_allclose(start_counts, first, atol=1e-9)
    np.testing.assert_allclose(end_counts, last, atol=1e-9)


def _larger_problem(seed, order, n_classes=6, threshold=0.5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 14, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    labels = rng.integers(0, n_classes, n_tokens)
    patterns = LabelPatterns.seen(labels, offsets, n_classes, order)
    return dict(unary=rng.normal(scale=3.0, size=(n_tokens, n_classes)),
                transitions=rng.normal(size=(n_classes, n_classes)), patterns=patterns,
                weights=rng.normal(size=patterns.n_patterns), start=rng.normal(size=n_classes),
                end=rng.normal(size=n_classes), offsets=offsets, labels=labels,
                scores=rng.random((n_tokens, n_classes)), threshold=threshold)


@pytest.mark.parametrize("order", [2, 3, 4])
def test_longer_sequences_match_the_exact_pattern_pass(order):
    p = _larger_problem(order, order)
    automaton = PatternAutomaton(p["patterns"])
    log_z, marginals, arc_counts = forward_backward_patterns(
        _masked_unary(p), automaton.kernel_graph(),
        automaton.arc_weights(p["transitions"], p["weights"]),
        automaton.own_weights(p["weights"]), p["start"], p["end"], p["offsets"], True,
        _ExactTables(automaton))
    got = _posteriors(p)
    C = p["unary"].shape[1]
    np.testing.assert_allclose(got[0], log_z, rtol=1e-10)
    np.testing.assert_allclose(got[1], marginals, atol=1e-9)
    np.testing.assert_allclose(got[2], arc_counts[:C * C].reshape(C, C), atol=1e-8)
    np.testing.assert_allclose(got[3], automaton.pattern_counts(arc_counts), atol=1e-8)


def test_sequence_weights_scale_each_sequence():
    p = _larger_problem(7, 3)
    lattice = _lattice(p)
    n_sequences = p["offsets"].shape[0] - 1
    weights = np.random.default_rng(0).integers(1, 4, n_sequences).astype(float)
    plain = _posteriors(p, lattice)
    weighted = _posteriors(p, lattice, weights)
    np.testing.assert_allclose(weighted[0], weights * plain[0], rtol=1e-12)
    per_token = np.repeat(weights, np.diff(p["offsets"]))
    np.testing.assert_allclose(weighted[1], per_token[:, None] * plain[1], rtol=1e-12)
    # counts: the same as repeating each sequence its weight's times
    repeated = np.repeat(np.arange(n_sequences), weights.astype(int))
    lengths = np.diff(p["offsets"])[repeated]
    rows = np.concatenate([np.arange(p["offsets"][q], p["offsets"][q + 1]) for q in repeated])
    copy = dict(p, unary=p["unary"][rows], labels=p["labels"][rows], scores=p["scores"][rows],
                offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    again = _posteriors(copy)
    for got, want in zip(weighted[2:], again[2:]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_one_and_two_threads_give_the_same_bits():
    p = _larger_problem(3, 3)
    lattice = _lattice(p)
    first, second = results_per_thread_count(lambda: _posteriors(p, lattice))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_a_lattice_too_large_is_refused_naming_where(monkeypatch):
    import skcrf.structures.patterns.pruned as pruned_chain

    p = _larger_problem(5, 3, threshold=0.0)
    monkeypatch.setattr(pruned_chain, "MAX_LATTICE_SIZE", 1000)
    with pytest.raises(ValueError, match=r"widest is at token \d+ of sequence \d+.*"
                                         r"Raise prune_threshold"):
        _lattice(p)


def test_the_gold_label_is_always_a_candidate():
    marginals = np.array([[0.9, 0.1, 0.0], [np.nan, np.nan, np.nan], [0.2, 0.5, 0.3]])
    cand_ptr, cand_label = candidate_labels(marginals, np.array([2, 1, 0]), 0.25)
    assert [cand_label[cand_ptr[g]:cand_ptr[g + 1]].tolist() for g in range(3)] == [
        [0, 2], [1], [0, 1, 2]]


def test_the_scaled_pass_is_the_log_space_pass(monkeypatch):
    import skcrf.inference.patterns.lattice as lattice_module

    for order in (2, 3, 4):
        p = _larger_problem(order + 10, order, threshold=0.3)
        lattice = _lattice(p)
        scaled = _posteriors(p, lattice)
        with monkeypatch.context() as patch:
            patch.setattr(lattice_module, "THETA_GUARD", -1.0)  # every sequence in log space
            assert not lattice_module.exp_pattern_weights(p["weights"])[1]
            logspace = _posteriors(p, lattice)
        for a, b in zip(scaled, logspace):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        # and the scaled pass did run: it gives up on no sequence of this problem
        offsets = p["offsets"]
        exp_patterns, fast = lattice_module.exp_pattern_weights(p["weights"])
        assert fast
        n_nodes = lattice.n_nodes
        C = p["unary"].shape[1]
        for q in range(offsets.shape[0] - 1):
            lo, hi = int(offsets[q]), int(offsets[q + 1])
            if hi == lo:
                continue
            z = lattice_module.scaled_sequence_pass(
                p["unary"], np.int64(0), p["transitions"], p["weights"], exp_patterns,
                p["start"], p["end"], lo, hi, np.int64(order), lattice.cand_ptr,
                lattice.node_ptr, lattice.node_label, lattice.node_prev, lattice.node_patterns,
                lattice.edge_ptr, lattice.edge_pattern, 1.0, np.zeros_like(p["unary"]),
                np.zeros((C, C)), np.zeros(p["weights"].shape[0]), np.zeros(C), np.zeros(C),
                np.empty(n_nodes), np.empty(n_nodes), np.empty(n_nodes), np.empty(hi - lo))
            np.testing.assert_allclose(z, logspace[0][q], rtol=1e-10)


def test_a_lattice_whose_size_overflows_int64_is_refused_before_any_allocation():
    """Sizes past int64 are refused, not wrapped into a small lattice the fill writes past.

    Order 60 over 2 labels (the most their codes allow), every label a
    candidate: a sequence of 64 tokens has nodes and edges summing to
    ``2**64 - 6``, a second one of 2 tokens 10 more, so int64 sums read 4.
    """
    order = 60
    lengths = [order + 4, 2]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    cand_ptr = np.arange(0, 2 * n_tokens + 1, 2, dtype=np.int64)
    cand_label = np.tile(np.array([0, 1], dtype=np.int64), n_tokens)
    patterns = LabelPatterns(2, order, {})
    with pytest.raises(ValueError, match=r"more nodes and edges than the \d+ skcrf affords; "
                                         r"the widest is at token \d+ of sequence 0 "
                                         r"\(more than \d+ nodes\)"):
        CandidateLattice(offsets, cand_ptr, cand_label, patterns)


def test_candidate_pointers_that_disagree_with_the_labels_are_refused():
    patterns = LabelPatterns(3, 2, {})
    offsets = np.array([0, 2], dtype=np.int64)
    with pytest.raises(ValueError, match="cand_ptr"):
        CandidateLattice(offsets, np.array([0, 2, 9], dtype=np.int64),
                         np.array([0, 1, 2], dtype=np.int64), patterns)
