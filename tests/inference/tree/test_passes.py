"""Tree kernels against brute-force enumeration, the chain they generalize, and invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from skcrf.inference.chain.order1 import forward_backward, viterbi
from skcrf.inference.tree.passes import tree_forward_backward, tree_layout, tree_viterbi
from tests._kernel_checks import (assert_decoded_scores_are_best, assert_inputs_not_mutated,
                                  brute_force_tests, forest_problems, kernel_settings)
from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads
from tests.naive_tree import (SHAPES, batch_of_forests, enumerate_batch, labelling_score,
                              random_forest)

SETTINGS = kernel_settings(150)
#: The chain identities run two kernels on longer sequences: fewer examples
IDENTITY_SETTINGS = settings(SETTINGS, max_examples=100)


def problems(scale=3.0, max_classes=3, max_length=5, forbid=True):
    """Random forests, one block for every link (tests._kernel_checks.forest_problems)."""
    return forest_problems(scale, max_classes, max_length, forbid, per_link=False)


def _check_against_brute_force(problem):
    unary, transitions, root, parents, offsets = problem
    log_z, marginals, counts, _, best_scores = enumerate_batch(*problem)
    got_log_z, got_marginals, got_counts = tree_forward_backward(*problem, True)
    for got in (got_log_z, got_marginals, got_counts):
        assert not np.isnan(got).any()
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, atol=1e-9)
    np.testing.assert_allclose(got_counts, counts, atol=1e-8)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if log_z[q] == -np.inf:  # infeasible: no probability anywhere
            assert not got_marginals[lo:hi].any()
        elif hi > lo:
            np.testing.assert_allclose(got_marginals[lo:hi].sum(axis=1), 1.0, atol=1e-12)
    # without counts: the same log Z and marginals, bit for bit, and no counts
    again = tree_forward_backward(*problem, False)
    assert np.array_equal(again[0], got_log_z) and np.array_equal(again[1], got_marginals)
    assert again[2].shape == (0, 0)
    # Viterbi: the labelling's score equals the best score (ties may pick another)
    labels = tree_viterbi(*problem)
    assert labels.shape == (offsets[-1],)
    assert np.all((labels >= 0) & (labels < unary.shape[1]))
    assert_decoded_scores_are_best(offsets, log_z, best_scores, lambda q, lo, hi: (
        labelling_score(unary[lo:hi], transitions, root, parents[lo:hi], labels[lo:hi])))


# at scores in the hundreds, messages and link blocks that underflow a factored
# product go through the exact log-space sums
test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=400.0)


def test_a_downward_value_in_the_subnormal_range_is_not_trusted():
    """Found by the test above: a child's downward values, 1.6e-323 and 2.7e-77 before
    their scaling, kept a few bits of the first, and its link count came out 0.964, not 1."""
    problem = (np.array([[-63.91243997, -201.55569715], [-783.52199899, -135.35008668]]),
               np.array([[433.92718627, -374.8476091], [395.34802465, -171.29700353]]),
               np.array([-234.81926623, 1127.6464793]), np.array([-1, 0]),
               np.array([0, 2]))
    _check_against_brute_force(problem)


#: Infeasible forests: (parents, {token: unary row}, transitions, root); None
#: draws random finite scores.
_DIAGONAL = [[0.0, -np.inf], [-np.inf, 0.0]]  # a child has its parent's label
INFEASIBLE = {
    "a leaf's unary row all -inf": ([-1, 0, 0], {2: [-np.inf, -np.inf]}, None, None),
    "no root label": ([-1, 0, 0], {}, None, [-np.inf, -np.inf]),
    "no link": ([-1, 0, 0], {}, np.full((2, 2), -np.inf), None),
    "root and child disagree": ([-1, 0, 0], {1: [-np.inf, 0.0]}, _DIAGONAL, [0.0, -np.inf]),
    # each constraint alone is feasible: only combining the children shows it
    "two children disagree under the root": ([-1, 0, 0], {1: [0.0, -np.inf],
                                                          2: [-np.inf, 0.0]}, _DIAGONAL, None),
    "two children disagree under an inner node": ([-1, 0, 1, 1], {2: [0.0, -np.inf],
                                                                  3: [-np.inf, 0.0]},
                                                  _DIAGONAL, None),
    "parents after children": ([2, 2, -1], {0: [0.0, -np.inf], 1: [-np.inf, 0.0]},
                               _DIAGONAL, None),
    "one infeasible tree of a forest": ([-1, 0, -1, 2], {2: [-np.inf, -np.inf]}, None, None),
}


@pytest.mark.parametrize("case", list(INFEASIBLE))
def test_infeasible_forest_gives_minus_inf_zeros_and_no_nan(case):
    tree_parents, rows, transitions, root = INFEASIBLE[case]
    n = len(tree_parents)
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(n, 2))
    for token, row in rows.items():
        unary[token] = row
    transitions = rng.normal(size=(2, 2)) if transitions is None else np.array(transitions)
    root = rng.normal(size=2) if root is None else np.array(root)
    # between two single nodes, which keep their own results
    unary = np.vstack([rng.normal(size=(1, 2)), unary, rng.normal(size=(1, 2))])
    parents = np.array([-1, *tree_parents, -1], dtype=np.int64)
    offsets = np.array([0, 1, n + 1, n + 2], dtype=np.int64)
    problem = (unary, transitions, root, parents, offsets)
    brute = enumerate_batch(*problem)
    assert brute[0][1] == -np.inf  # the case is infeasible indeed
    log_z, marginals, counts = tree_forward_backward(*problem, True)
    assert log_z[1] == -np.inf
    assert not marginals[1:n + 1].any() and not np.isnan(marginals).any()
    np.testing.assert_allclose(marginals, brute[1], atol=1e-12)
    np.testing.assert_allclose(log_z, brute[0], rtol=1e-12)
    np.testing.assert_allclose(counts, brute[2], atol=1e-12)  # nothing from the infeasible
    labels = tree_viterbi(*problem)
    if np.isfinite(root).any():
        assert labels[0] == np.argmax(unary[0] + root)
        assert labels[-1] == np.argmax(unary[-1] + root)


def test_single_nodes_and_empty_sequences():
    unary = np.array([[0.5, -1.0], [2.0, 0.0]])
    transitions = np.array([[0.0, 3.0], [1.0, -2.0]])
    root = np.array([0.2, 0.0])
    offsets = np.array([0, 0, 1, 1, 2, 2], dtype=np.int64)
    parents = np.array([-1, -1], dtype=np.int64)
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    assert log_z[0] == log_z[2] == log_z[4] == 0.0
    for q, token in ((1, 0), (3, 1)):
        scores = unary[token] + root
        np.testing.assert_allclose(log_z[q], logsumexp(scores), rtol=1e-14)
        np.testing.assert_allclose(marginals[token], np.exp(scores - logsumexp(scores)),
                                   rtol=1e-14)
    assert not counts.any()  # no links, whatever the transitions
    labels = tree_viterbi(unary, transitions, root, parents, offsets)
    assert labels.tolist() == [int(np.argmax(unary[0] + root)), int(np.argmax(unary[1] + root))]
    # a batch of nothing at all
    none = tree_forward_backward(np.zeros((0, 2)), transitions, root,
                                 np.zeros(0, dtype=np.int64), np.array([0]), True)
    assert none[0].shape == (0,) and none[1].shape == (0, 2) and not none[2].any()
    assert tree_viterbi(np.zeros((0, 2)), transitions, root, np.zeros(0, dtype=np.int64),
                        np.array([0, 0])).shape == (0,)


def test_forbidden_scores_get_zero_probability_and_never_appear_in_viterbi():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 30, size=20)
    parents, offsets = batch_of_forests(rng, lengths, ["random"] * 20)
    unary = rng.normal(size=(offsets[-1], 3))
    transitions = rng.normal(size=(3, 3))
    transitions[0, 1] = transitions[2, 2] = -np.inf
    root = np.array([0.0, -np.inf, 0.5])
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    assert np.isfinite(log_z).all() and np.isfinite(marginals).all()
    assert counts[0, 1] == 0.0 and counts[2, 2] == 0.0
    is_root = parents < 0
    assert not marginals[is_root, 1].any()
    labels = tree_viterbi(unary, transitions, root, parents, offsets)
    assert not (labels[is_root] == 1).any()
    absolute = parents + np.repeat(offsets[:-1], lengths)
    child = np.flatnonzero(~is_root)
    pairs = set(zip(labels[absolute[child]].tolist(), labels[child].tolist()))
    assert (0, 1) not in pairs and (2, 2) not in pairs


# --- the chain is the special case of a path-shaped tree ---------------------


def _chain_of(problem, reversed_path=False):
    """The tree problem's potentials as a chain's: (unary, transitions, start, end)."""
    unary, transitions, root, _, _ = problem
    zeros = np.zeros_like(root)
    if reversed_path:
        return unary, np.ascontiguousarray(transitions.T), zeros, root
    return unary, transitions, root, zeros


@st.composite
def path_problems(draw, shape="path", forbid=False, max_length=8):
    n_classes = draw(st.integers(1, 4))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.5, 3.0, 50.0]))
    parents, offsets = batch_of_forests(rng, lengths, [shape] * len(lengths))
    unary = rng.normal(scale=scale, size=(offsets[-1], n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    if forbid:
        transitions[rng.random(transitions.shape) < 0.3] = -np.inf
    root = rng.normal(scale=scale, size=n_classes)
    return unary, transitions, root, parents, offsets


def _check_equals_chain(problem, reversed_path):
    offsets = problem[4]
    chain = _chain_of(problem, reversed_path)
    log_z, marginals, counts = tree_forward_backward(*problem, True)
    chain_log_z, chain_marginals, chain_counts = forward_backward(*chain, offsets, True)
    # an absolute error in log Z is a relative one in Z: log Z near 0 has no digits to lose
    np.testing.assert_allclose(log_z, chain_log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(marginals, chain_marginals, rtol=1e-12, atol=1e-15)
    expected_counts = chain_counts.T if reversed_path else chain_counts
    np.testing.assert_allclose(counts, expected_counts, rtol=1e-12, atol=1e-13)
    feasible = np.repeat(np.isfinite(chain_log_z), np.diff(offsets))
    labels = tree_viterbi(*problem)
    chain_labels = viterbi(*chain, offsets)
    np.testing.assert_array_equal(labels[feasible], chain_labels[feasible])


@IDENTITY_SETTINGS
@given(path_problems())
def test_path_tree_equals_chain_with_start_root_and_no_end(problem):
    _check_equals_chain(problem, reversed_path=False)


@IDENTITY_SETTINGS
@given(path_problems(forbid=True))
def test_path_tree_equals_chain_with_forbidden_links(problem):
    _check_equals_chain(problem, reversed_path=False)


@IDENTITY_SETTINGS
@given(path_problems(shape="reversed"))
def test_reversed_path_equals_chain_with_transposed_transitions_and_end_root(problem):
    # parents 1, 2, ..., -1: each token's parent is the next one, the root last
    _check_equals_chain(problem, reversed_path=True)


def test_long_path_equals_chain_and_stays_finite():
    # 100,000 nodes deep: no recursion, no score growing with depth
    rng = np.random.default_rng(2)
    n, n_classes = 100_000, 4
    unary = rng.normal(scale=3.0, size=(n, n_classes))
    transitions = rng.normal(scale=3.0, size=(n_classes, n_classes))
    root = rng.normal(size=n_classes)
    offsets = np.array([0, n], dtype=np.int64)
    problem = (unary, transitions, root, np.arange(-1, n - 1, dtype=np.int64), offsets)
    log_z, marginals, counts = tree_forward_backward(*problem, True)
    assert np.isfinite(log_z).all() and np.isfinite(marginals).all()
    chain_log_z, chain_marginals, chain_counts = forward_backward(
        unary, transitions, root, np.zeros(n_classes), offsets, True)
    np.testing.assert_allclose(log_z, chain_log_z, rtol=1e-12)
    np.testing.assert_allclose(marginals, chain_marginals, atol=1e-9)
    np.testing.assert_allclose(counts, chain_counts, rtol=1e-9)
    np.testing.assert_allclose(counts.sum(), n - 1, rtol=1e-12)
    np.testing.assert_array_equal(tree_viterbi(*problem),
                                  viterbi(unary, transitions, root, np.zeros(n_classes),
                                          offsets))


def test_wide_star_matches_its_closed_form():
    # one root with 100,000 children: each child's rest of the root comes from
    # prefix and suffix sums over 100,000 messages
    rng = np.random.default_rng(3)
    n, n_classes = 100_000, 3
    unary = rng.normal(scale=2.0, size=(n, n_classes))
    transitions = rng.normal(scale=2.0, size=(n_classes, n_classes))
    transitions[1, 2] = -np.inf
    root = rng.normal(size=n_classes)
    parents = np.zeros(n, dtype=np.int64)
    parents[0] = -1
    offsets = np.array([0, n], dtype=np.int64)
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    # messages[c, a] = log sum_b exp(T[a, b] + unary[c, b]) for every child c
    messages = logsumexp(transitions[None, :, :] + unary[1:, None, :], axis=2)
    root_scores = root + unary[0] + messages.sum(axis=0)
    expected_log_z = logsumexp(root_scores)
    p_root = np.exp(root_scores - expected_log_z)
    # a child's label given the root's: exp(T[a, b] + unary[c, b] - messages[c, a])
    conditional = np.exp(transitions[None] + unary[1:, None, :] - messages[:, :, None])
    child_marginals = np.einsum("a,cab->cb", p_root, conditional)
    np.testing.assert_allclose(log_z[0], expected_log_z, rtol=1e-12)
    np.testing.assert_allclose(marginals[0], p_root, atol=1e-12)
    np.testing.assert_allclose(marginals[1:], child_marginals, atol=1e-10)
    np.testing.assert_allclose(counts, np.einsum("a,cab->ab", p_root, conditional),
                               rtol=1e-9)


# --- the scaled pass against the exact pass -----------------------------------


def _with_a_forbidden_class(unary, transitions, root):
    """The same problem with one more class that no token may take.

    Its -inf unary scores send every forest to the exact log-space pass; the
    distribution over the other classes is unchanged.
    """
    n_tokens, n_classes = unary.shape
    rng = np.random.default_rng(0)
    wider = np.hstack([unary, np.full((n_tokens, 1), -np.inf)])
    wider_transitions = rng.normal(size=(n_classes + 1, n_classes + 1))
    wider_transitions[:n_classes, :n_classes] = transitions
    return wider, wider_transitions, np.append(root, rng.normal())


@pytest.mark.parametrize("scale", [0.1, 2.0, 20.0, 200.0])
def test_scaled_pass_equals_the_exact_pass(scale):
    # large forests of every shape, beyond brute force: scaled where it can be,
    # exact where its values under- or overflow (the larger scales)
    unary, transitions, root, parents, offsets = _random_batch(11, n_sequences=60,
                                                               scale=scale, longest=40)
    root = root * scale
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    wider = _with_a_forbidden_class(unary, transitions, root)
    exact_log_z, exact_marginals, exact_counts = tree_forward_backward(*wider, parents,
                                                                       offsets, True)
    n_classes = unary.shape[1]
    assert not exact_marginals[:, n_classes].any() and not exact_counts[n_classes].any()
    np.testing.assert_allclose(log_z, exact_log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(marginals, exact_marginals[:, :n_classes], rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(counts, exact_counts[:n_classes, :n_classes], rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(tree_viterbi(unary, transitions, root, parents, offsets),
                                  tree_viterbi(*wider, parents, offsets))


# --- a huge finite score on one node -----------------------------------------

#: A feature value of 1e17 times weights of order 1: exact arithmetic pins its
#: node to one label; the other nodes must keep their digits.
HUGE = 1e17


@pytest.mark.parametrize("where", ["root", "inner", "leaf"])
@pytest.mark.parametrize("seed", range(3))
def test_huge_unary_leaves_the_other_nodes_exact(where, seed):
    rng = np.random.default_rng(seed)
    n, n_classes = 7, 4
    # 0 is the root; 1 is an inner node with children 3, 4; 6 is a leaf under 2
    parents = np.array([-1, 0, 0, 1, 1, 2, 2], dtype=np.int64)
    node = {"root": 0, "inner": 1, "leaf": 6}[where]
    unary = rng.normal(size=(n, n_classes))
    big, reference = unary.copy(), unary.copy()
    big[node] = HUGE * rng.normal(size=n_classes) + unary[node]
    reference[node] = np.full(n_classes, -np.inf)
    reference[node, np.argmax(big[node])] = 0.0
    transitions = rng.normal(size=(n_classes, n_classes))
    root = rng.normal(size=n_classes)
    offsets = np.array([0, n], dtype=np.int64)
    _, got, got_counts = tree_forward_backward(big, transitions, root, parents, offsets, True)
    _, want, want_counts = tree_forward_backward(reference, transitions, root, parents,
                                                 offsets, True)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got_counts, want_counts, atol=1e-12)
    np.testing.assert_array_equal(tree_viterbi(big, transitions, root, parents, offsets),
                                  tree_viterbi(reference, transitions, root, parents, offsets))
    # and the reference is right: brute force on the pinned problem
    brute = enumerate_batch(reference, transitions, root, parents, offsets)
    np.testing.assert_allclose(want, brute[1], atol=1e-12)


# --- invariants, determinism -------------------------------------------------


def _random_batch(seed, n_sequences=200, n_classes=5, scale=2.0, longest=30):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, longest, size=n_sequences)
    shapes = rng.choice(SHAPES, size=n_sequences)
    parents, offsets = batch_of_forests(rng, lengths, shapes)
    unary = rng.normal(scale=scale, size=(offsets[-1], n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    return unary, transitions, rng.normal(size=n_classes), parents, offsets


def test_marginals_sum_to_one_and_counts_to_the_number_of_links():
    batch = _random_batch(4)
    parents = batch[3]
    _, marginals, counts = tree_forward_backward(*batch, True)
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(counts.sum(), np.count_nonzero(parents >= 0), rtol=1e-12)


def test_shifting_a_nodes_unary_scores_shifts_log_z_only():
    unary, transitions, root, parents, offsets = _random_batch(5, n_sequences=20)
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    q = int(np.flatnonzero(np.diff(offsets) > 3)[0])
    shifted = unary.copy()
    shifted[offsets[q] + 2] += 7.5
    log_z2, marginals2, counts2 = tree_forward_backward(shifted, transitions, root, parents,
                                                        offsets, True)
    expected = log_z.copy()
    expected[q] += 7.5
    np.testing.assert_allclose(log_z2, expected, rtol=1e-12)
    np.testing.assert_allclose(marginals2, marginals, atol=1e-12)
    np.testing.assert_allclose(counts2, counts, rtol=1e-10)


def test_relabelling_the_nodes_changes_nothing():
    # the same forest with its nodes in another index order: per-node results
    # follow the nodes, the sums stay
    rng = np.random.default_rng(6)
    n = 12
    parents = random_forest(rng, n)
    unary = rng.normal(size=(n, 3))
    transitions, root = rng.normal(size=(3, 3)), rng.normal(size=3)
    offsets = np.array([0, n], dtype=np.int64)
    perm = rng.permutation(n)  # new node i is old node perm[i]
    new_index = np.argsort(perm)
    new_parents = np.where(parents[perm] >= 0, new_index[parents[perm]], -1)
    log_z, marginals, counts = tree_forward_backward(unary, transitions, root, parents,
                                                     offsets, True)
    log_z2, marginals2, counts2 = tree_forward_backward(
        unary[perm], transitions, root, new_parents, offsets, True)
    np.testing.assert_allclose(log_z2, log_z, rtol=1e-13)
    np.testing.assert_allclose(marginals2, marginals[perm], atol=1e-13)
    np.testing.assert_allclose(counts2, counts, rtol=1e-12)
    labels = tree_viterbi(unary, transitions, root, parents, offsets)
    np.testing.assert_array_equal(
        tree_viterbi(unary[perm], transitions, root, new_parents, offsets), labels[perm])


def test_ties_are_decided_the_same_way_every_time():
    # every labelling of a forest scores 0: any is a best one, but the same each call
    rng = np.random.default_rng(7)
    lengths = [5, 0, 7, 1, 6]
    parents, offsets = batch_of_forests(rng, lengths, ["random"] * 5)
    zeros = np.zeros((offsets[-1], 3))
    problem = (zeros, np.zeros((3, 3)), np.zeros(3), parents, offsets)
    first = tree_viterbi(*problem)
    for _ in range(3):
        np.testing.assert_array_equal(tree_viterbi(*problem), first)
    # ties among feasible labellings only: forbidden scores still never win
    transitions = np.zeros((3, 3))
    transitions[:, 0] = -np.inf
    labels = tree_viterbi(zeros, transitions, np.zeros(3), parents, offsets)
    assert not (labels[parents >= 0] == 0).any()
    np.testing.assert_array_equal(
        tree_viterbi(zeros, transitions, np.zeros(3), parents, offsets), labels)


def test_inputs_are_not_mutated():
    batch = _random_batch(8, n_sequences=10)
    assert_inputs_not_mutated(batch, lambda: tree_forward_backward(*batch, True),
                              lambda: tree_viterbi(*batch))


def test_layout_orders_every_node_after_its_parent():
    rng = np.random.default_rng(9)
    for shape in SHAPES:
        for n in (1, 2, 9):
            parents = random_forest(rng, n, shape)
            padded = np.concatenate([[-1, -1], parents]).astype(np.int64)  # lo = 2
            child_ptr = np.empty(n + 1, np.int64)
            children, order, cursor = (np.empty(n, np.int64) for _ in range(3))
            assert tree_layout(padded, 2, 2 + n, child_ptr, children, order, cursor) == n
            assert sorted(order.tolist()) == list(range(n))
            position = np.argsort(order)
            for v in range(n):
                kids = children[child_ptr[v]:child_ptr[v + 1]].tolist()
                assert kids == np.flatnonzero(parents == v).tolist()  # increasing
                if parents[v] >= 0:
                    assert position[parents[v]] < position[v]
            roots = np.flatnonzero(parents < 0).tolist()
            assert order[:len(roots)].tolist() == roots
    # a cycle leaves its nodes out of the order
    cyclic = np.array([-1, 2, 1], dtype=np.int64)
    scratch = [np.empty(k, np.int64) for k in (4, 3, 3, 3)]
    assert tree_layout(cyclic, 0, 3, *scratch) == 1


@needs_two_threads
def test_bitwise_identical_for_one_and_two_threads():
    batch = _random_batch(10, n_sequences=500)
    assert_same_for_one_and_two_threads(
        lambda: (*tree_forward_backward(*batch, True), tree_viterbi(*batch)))
