"""Merged slots: rewritten rows expand back to the originals, and the loss is unchanged.

The fused kernels merge pairs of frequent features that many tokens share
(:mod:`skcrf.structures._merged_slots`). The rows must stay the same sets of
features, and the loss and gradient the same numbers up to rounding: against
the same kernel without merges, against the unfused path and against brute
force (chain and tree), on problems built like real feature templates, so
that merges do happen.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.features.arrays import FeatureArrays, as_feature_arrays
from skcrf.features.sequence_matrix import SequenceMatrix
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures import _merged_slots
from skcrf.structures._merged_slots import merge_frequent_pairs
from skcrf.structures.tree._fused import FusedTreeTerms
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.tree.structure import TreeStructure
from tests._threads import results_per_thread_count
from tests.naive_tree import batch_of_forests, layout_loss_and_gradient


def _template_rows(rng, n_tokens, n_words, noise):
    """Feature ids of tokens made like a template's: a bias, the word's, the previous word's.

    Word ``w`` owns features ``1 + 3w .. 3 + 3w`` (a word, a suffix, a shape)
    and, as the previous word, ``1 + 3 n_words + 2w`` and the one after;
    ``noise`` adds that many random features per token (from their own range).
    """
    words = rng.integers(0, n_words, size=n_tokens)
    rows = []
    for t in range(n_tokens):
        own = [0] + [1 + 3 * words[t] + k for k in range(3)]
        if t > 0:
            own += [1 + 3 * n_words + 2 * words[t - 1] + k for k in range(2)]
        extra = rng.choice(50, size=noise, replace=False) + 1 + 5 * n_words
        rows.append(sorted(set(own) | set(extra.tolist())))
    return rows


def _csr(rows, n_columns):
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    indices = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows])
    return sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr),
                         shape=(len(rows), n_columns))


def _expanded(slot, n_slots, parts):
    if slot < n_slots:
        return [slot]
    a, b = parts[slot - n_slots]
    return _expanded(a, n_slots, parts) + _expanded(b, n_slots, parts)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_tokens=st.integers(0, 400),
       n_words=st.integers(1, 12), noise=st.integers(0, 3),
       max_merged=st.integers(0, 40), sample=st.sampled_from([16, 1 << 15]),
       repeated=st.booleans())
def test_rewritten_rows_expand_to_the_original_rows(seed, n_tokens, n_words, noise, max_merged,
                                                    sample, repeated):
    rng = np.random.default_rng(seed)
    rows = _template_rows(rng, n_tokens, n_words, noise)
    if repeated:
        # a CSR matrix may repeat a column in a row: half the rows repeat an entry
        rows = [sorted(row + [row[rng.integers(len(row))]] * int(rng.random() < 0.5))
                for row in rows]
    # the rows' slots in a shuffled order, as a frequency rank would number them
    n_slots = 1 + 5 * n_words + 50
    relabel = rng.permutation(n_slots)
    slot_rows = [[int(relabel[f]) for f in row] for row in rows]
    hot_ptr = np.concatenate([[0], np.cumsum([len(r) for r in slot_rows])]).astype(np.int64)
    hot_entries = np.array([s for r in slot_rows for s in r], dtype=np.int32)
    previous = _merged_slots.SAMPLE_TOKENS
    _merged_slots.SAMPLE_TOKENS = sample  # 16: the pairs are counted on a sample
    try:
        new_ptr, new_entries, parts = merge_frequent_pairs(hot_ptr, hot_entries, n_slots,
                                                           max_merged)
    finally:
        _merged_slots.SAMPLE_TOKENS = previous
    assert parts.shape == (min(parts.shape[0], max_merged), 2)
    for m, (a, b) in enumerate(parts):
        assert 0 <= a < n_slots + m and 0 <= b < n_slots + m and a != b
    assert new_ptr.shape == hot_ptr.shape and new_ptr[-1] == new_entries.shape[0]
    for t, row in enumerate(slot_rows):
        merged_row = new_entries[new_ptr[t]:new_ptr[t + 1]]
        expanded = [s for slot in merged_row for s in _expanded(int(slot), n_slots, parts)]
        assert sorted(expanded) == sorted(row), t


def test_template_rows_shrink():
    rows = _template_rows(np.random.default_rng(0), 3000, 20, 1)
    n_slots = 1 + 5 * 20 + 50
    hot_ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    hot_entries = np.array([s for r in rows for s in r], dtype=np.int32)
    _, new_entries, parts = merge_frequent_pairs(hot_ptr, hot_entries, n_slots, 2 * n_slots)
    # 7 entries a token, of which the 6 of the bias and the two words repeat
    assert new_entries.shape[0] < 0.5 * hot_entries.shape[0]
    assert 0 < parts.shape[0] <= 2 * n_slots


def _chain_problem(seed, n_sequences, max_length, binary=True, n_classes=3):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_length + 1, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = _template_rows(rng, int(offsets[-1]), 4, 1)
    X = _csr(rows, 1 + 5 * 4 + 50)
    if not binary:
        X.data = rng.normal(size=X.data.shape[0])
    label_ids = rng.integers(0, n_classes, size=X.shape[0])
    return X, offsets, label_ids, n_classes


def _chain_loss(X, offsets, label_ids, n_classes, fused=True):
    features = as_feature_arrays(X)
    structure = ChainStructure.for_training(features, offsets, label_ids, n_classes)
    return NegativeLogLikelihood(structure, features, offsets, label_ids, 0.1, fused=fused)


def _without_merges(loss, monkeypatch):
    fused = loss.terms.fused
    monkeypatch.setattr(_merged_slots, "MAX_ROUNDS", 0)
    fused.use_hot_features(fused.hot_features)
    assert fused.merged_parts.shape[0] == 0


# 0.5: the exponentiated-weight route; 400: past its bound, the summed route
# (merged rows as sums of their parts' weights)
@pytest.mark.parametrize("scale", [0.5, 400.0])
def test_chain_loss_with_merges_equals_without_and_unfused(scale, monkeypatch):
    X, offsets, label_ids, n_classes = _chain_problem(1, n_sequences=60, max_length=12)
    loss = _chain_loss(X, offsets, label_ids, n_classes)
    assert loss.terms.fused.merged_parts.shape[0] > 0
    w = np.random.default_rng(2).normal(scale=scale, size=loss.n_parameters)
    value, grad = loss(w)
    unfused_value, unfused_grad = _chain_loss(X, offsets, label_ids, n_classes, fused=False)(w)
    _without_merges(loss, monkeypatch)
    plain_value, plain_grad = loss(w)
    for other_value, other_grad in ((plain_value, plain_grad), (unfused_value, unfused_grad)):
        np.testing.assert_allclose(value, other_value, rtol=1e-11)
        np.testing.assert_allclose(grad, other_grad, rtol=1e-9, atol=1e-9)


def test_chain_loss_with_merges_equals_brute_force():
    from tests.structures.chain.test_order1 import _brute_force_loss

    # sequences of up to 3 tokens, many of them: brute force stays small and
    # the template's pairs occur often enough to merge
    X, offsets, label_ids, n_classes = _chain_problem(3, n_sequences=80, max_length=3)
    loss = _chain_loss(X, offsets, label_ids, n_classes)
    assert loss.terms.fused.merged_parts.shape[0] > 0
    w = np.random.default_rng(4).normal(size=loss.n_parameters)
    expected = _brute_force_loss(loss.structure, X, offsets, label_ids, w, 0.1)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)


def test_repeated_columns_keep_their_count_through_the_merges():
    # rows [0, 0, 1]: the pair (0, 1) merges, and the second 0 must stay
    X = sp.csr_matrix((np.ones(60), np.tile([0, 0, 1], 20), np.arange(0, 61, 3)),
                      shape=(20, 2))
    assert not X.has_canonical_format
    offsets = np.array([0, 7, 20], dtype=np.int64)
    label_ids = np.arange(20) % 3
    loss = _chain_loss(X, offsets, label_ids, 3)
    assert loss.terms.fused.merged_parts.shape[0] > 0
    w = np.random.default_rng(9).normal(size=loss.n_parameters)
    value, grad = loss(w)
    unfused_value, unfused_grad = _chain_loss(X, offsets, label_ids, 3, fused=False)(w)
    np.testing.assert_allclose(value, unfused_value, rtol=1e-11)
    np.testing.assert_allclose(grad, unfused_grad, rtol=1e-9, atol=1e-9)


def test_non_binary_features_are_not_merged():
    X, offsets, label_ids, n_classes = _chain_problem(5, n_sequences=60, max_length=12,
                                                      binary=False)
    assert _chain_loss(X, offsets, label_ids, n_classes).terms.fused.merged_parts.shape[0] == 0


def test_tree_loss_with_merges_equals_brute_force():
    rng = np.random.default_rng(6)
    lengths = rng.integers(1, 4, size=80)
    parents, offsets = batch_of_forests(rng, lengths, ["random"] * lengths.shape[0])
    rows = _template_rows(rng, int(offsets[-1]), 4, 1)
    X = _csr(rows, 1 + 5 * 4 + 50)
    features = FeatureArrays.of_sequences(SequenceMatrix(X, offsets, parents=parents))
    label_ids = rng.integers(0, 3, size=X.shape[0])
    structure = TreeStructure.for_training(features, label_ids, 3)
    loss = NegativeLogLikelihood(structure, features, offsets, label_ids, 0.3)
    # the loss's kernel is built the same way, from the same data
    kernel = FusedTreeTerms(features, offsets, structure.state_pairs, 3)
    assert kernel.merged_parts.shape[0] > 0
    w = rng.normal(size=loss.n_parameters)
    value, grad = loss(w)
    expected_value, expected_grad = layout_loss_and_gradient(
        structure, X.toarray(), offsets, features.parents, label_ids, w, l2=0.3)
    np.testing.assert_allclose(value, expected_value, rtol=1e-10)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-10)


def test_merges_and_loss_are_the_same_for_one_and_two_threads():
    X, offsets, label_ids, n_classes = _chain_problem(7, n_sequences=200, max_length=20)

    def build_and_evaluate():
        loss = _chain_loss(X, offsets, label_ids, n_classes)
        w = np.random.default_rng(8).normal(size=loss.n_parameters)
        return loss.terms.fused.merged_parts, loss(w)

    (parts_1, (value_1, grad_1)), (parts_2, (value_2, grad_2)) = results_per_thread_count(
        build_and_evaluate)
    assert parts_1.shape[0] > 0 and np.array_equal(parts_1, parts_2)
    assert value_1 == value_2 and np.array_equal(grad_1, grad_2)
