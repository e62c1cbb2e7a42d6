"""Pairs of frequent features that occur together, merged into one dense row.

The fused training kernels give the most frequent features dense rows (one
value per label) and add or multiply a token's rows together, in the
emission pass and again, as expected counts, in the scatter pass. With
binary features those rows recur in the same combinations: every occurrence
of a frequent word carries its word, suffix and tag features, and each
neighbour's too. A *merged slot* stands for two slots (frequent features or
merged slots themselves) found together in many tokens: its row is the sum
of its parts' rows (their product, for exponentiated weights), computed once
per evaluation, and each token holding both parts reads one row instead of
two. Expected counts go the other way: a merged slot's partial sum is added
to both of its parts, newest merge first.

The merges are found the way Re-Pair compression finds them (Larsson and
Moffat, 1999) with each row read as a set: in rounds, count how many tokens
hold each pair of slots, merge the most frequent pairs (no slot in two pairs
of a round) and rewrite the rows. The pairs are counted on an evenly spaced
sample of the tokens, and all tokens are rewritten once at the end. The
result is a function of the data alone, so the kernels' sums stay
independent of the thread count; the merged rows only change the order in
which a token's terms are added (the rounding), not the sums. A row may
hold a slot twice (a CSR matrix with a repeated column): each entry is
merged at most once, so the row keeps its multiset of features.
"""

import numpy as np

from ..inference._runtime.batch import compiled

#: A pair merges only if the sample puts at least this many tokens on it
#: (its count times the stride), and two sampled tokens at least: each merge
#: costs one row per evaluation (and one per chunk in the scatter's reduction).
MIN_MERGE_COUNT = 8
#: Rounds of merging stop here, or earlier when a round removes fewer than
#: MIN_ROUND_GAIN of the remaining entries.
MAX_ROUNDS = 8
MIN_ROUND_GAIN = 0.01
#: The pairs are counted on at most this many tokens, evenly spaced.
SAMPLE_TOKENS = 1 << 15


@compiled()
def _frequent_pairs(hot_ptr, hot_entries, n_slots, min_count):
    """Every pair of slots held by at least ``min_count`` tokens, with its count.

    Returns ``(first, second, counts)`` with ``first < second``. Slot by
    slot, the tokens holding it (an inverted index) are read and their other
    slots counted: the work is the sum over tokens of their entries squared.
    """
    n_tokens = hot_ptr.shape[0] - 1
    slot_ptr = np.zeros(n_slots + 1, np.int64)
    for k in range(hot_entries.shape[0]):
        slot_ptr[hot_entries[k] + 1] += 1
    for s in range(n_slots):
        slot_ptr[s + 1] += slot_ptr[s]
    slot_tokens = np.empty(hot_entries.shape[0], np.int64)
    fill = slot_ptr[:-1].copy()
    for t in range(n_tokens):
        for k in range(hot_ptr[t], hot_ptr[t + 1]):
            s = hot_entries[k]
            slot_tokens[fill[s]] = t
            fill[s] += 1

    together = np.zeros(n_slots, np.int64)
    seen = np.empty(n_slots, np.int64)
    capacity = 1024
    first = np.empty(capacity, np.int64)
    second = np.empty(capacity, np.int64)
    counts = np.empty(capacity, np.int64)
    n_pairs = 0
    for x in range(n_slots):
        if slot_ptr[x + 1] - slot_ptr[x] < min_count:
            continue
        n_seen = 0
        for i in range(slot_ptr[x], slot_ptr[x + 1]):
            t = slot_tokens[i]
            for k in range(hot_ptr[t], hot_ptr[t + 1]):
                y = hot_entries[k]
                if y > x:
                    if together[y] == 0:
                        seen[n_seen] = y
                        n_seen += 1
                    together[y] += 1
        for i in range(n_seen):
            y = seen[i]
            if together[y] >= min_count:
                if n_pairs == capacity:
                    capacity *= 2
                    first = _grown(first, capacity)
                    second = _grown(second, capacity)
                    counts = _grown(counts, capacity)
                first[n_pairs] = x
                second[n_pairs] = y
                counts[n_pairs] = together[y]
                n_pairs += 1
            together[y] = 0
    return first[:n_pairs], second[:n_pairs], counts[:n_pairs]


@compiled()
def _grown(values, capacity):
    bigger = np.empty(capacity, values.dtype)
    for i in range(values.shape[0]):
        bigger[i] = values[i]
    return bigger


@compiled()
def _matched(order, first, second, n_slots, budget):
    """Pairs taken greedily in ``order``, no slot in two of them, at most ``budget``.

    Returns ``partner`` (n_slots,), the other slot of each matched slot and
    -1 elsewhere, and the matched pairs as rows of ``(first, second)``.
    """
    partner = np.full(n_slots, -1, np.int32)
    pairs = np.empty((min(order.shape[0], budget), 2), np.int64)
    n_matched = 0
    for i in order:
        if n_matched == budget:
            break
        x = first[i]
        y = second[i]
        if partner[x] >= 0 or partner[y] >= 0:
            continue
        partner[x] = y
        partner[y] = x
        pairs[n_matched, 0] = x
        pairs[n_matched, 1] = y
        n_matched += 1
    return partner, pairs[:n_matched]


@compiled()
def _rewritten(hot_ptr, hot_entries, partners, merged_slots, n_rounds):
    """The rows with the matched pairs of rounds 0..n_rounds-1 replaced by their merged slots.

    Round ``r`` matched slot ``x`` with ``partners[r, x]`` (-1 if none) into
    the merged slot ``merged_slots[r, x]``; a row holding both loses them and
    gains the merged slot, in place of the pair's first entry. The rounds
    are applied in order, each to the previous one's rows, one token at a
    time (its row stays in cache).
    """
    n_tokens = hot_ptr.shape[0] - 1
    longest = 0
    for t in range(n_tokens):
        longest = max(longest, hot_ptr[t + 1] - hot_ptr[t])
    taken = np.empty(longest, np.bool_)
    new_ptr = np.empty(n_tokens + 1, np.int64)
    new_ptr[0] = 0
    new_entries = np.empty(hot_entries.shape[0], np.int32)
    at = 0
    for t in range(n_tokens):
        lo = hot_ptr[t]
        n = hot_ptr[t + 1] - lo
        row = new_entries[at:at + n]
        for a in range(n):
            row[a] = hot_entries[lo + a]
        for r in range(n_rounds):
            partner = partners[r]
            for a in range(n):
                taken[a] = False
            kept = 0
            for a in range(n):
                if taken[a]:
                    continue  # merged into an earlier entry of this row
                x = row[a]
                y = partner[x]
                if y >= 0:
                    for b in range(a + 1, n):
                        # a repeated slot: an entry merged already is not y any more
                        if row[b] == y and not taken[b]:
                            taken[b] = True
                            x = merged_slots[r, x]
                            break
                # kept <= a: the entries still to read are past both
                row[kept] = x
                kept += 1
            n = kept
        at += n
        new_ptr[t + 1] = at
    return new_ptr, new_entries[:at].copy()


@compiled()
def _sampled_rows(hot_ptr, hot_entries, stride):
    """Rows of tokens 0, stride, 2 * stride... (the merges are chosen on them)."""
    n_tokens = hot_ptr.shape[0] - 1
    picked = np.arange(0, n_tokens, stride)
    sample_ptr = np.empty(picked.shape[0] + 1, np.int64)
    sample_ptr[0] = 0
    for i in range(picked.shape[0]):
        t = picked[i]
        sample_ptr[i + 1] = sample_ptr[i] + hot_ptr[t + 1] - hot_ptr[t]
    sample_entries = np.empty(sample_ptr[-1], np.int32)
    for i in range(picked.shape[0]):
        t = picked[i]
        for k in range(hot_ptr[t + 1] - hot_ptr[t]):
            sample_entries[sample_ptr[i] + k] = hot_entries[hot_ptr[t] + k]
    return sample_ptr, sample_entries


def merge_frequent_pairs(hot_ptr, hot_entries, n_slots, max_merged):
    """Merge the slot pairs most tokens hold, in rounds, into at most ``max_merged`` new slots.

    The pairs are counted on every ``stride``-th token, at most
    :data:`SAMPLE_TOKENS` of them (the most frequent pairs stand out in any
    large sample), then the merges are applied to every token.

    Parameters
    ----------
    hot_ptr : (n_tokens + 1,) int64
    hot_entries : int32
        Token ``t``'s slots are ``hot_entries[hot_ptr[t]:hot_ptr[t + 1]]``
        (frequent features as slots), usually each once.
    n_slots : int
        The slots in use (frequent features), numbered from 0.
    max_merged : int
        Most merged slots to create.

    Returns
    -------
    hot_ptr, hot_entries : as the parameters
        The rows rewritten with merged slots, numbered from ``n_slots`` in
        order of creation.
    parts : (n_merged, 2) int64
        The two slots each merged slot stands for; both are older than it
        (base slots or earlier merged ones).
    """
    n_tokens = hot_ptr.shape[0] - 1
    stride = max(1, -(-n_tokens // SAMPLE_TOKENS))
    sample_ptr, sample = _sampled_rows(hot_ptr, hot_entries, np.int64(stride))
    min_count = np.int64(max(2, -(-MIN_MERGE_COUNT // stride)))
    rounds = []
    n_now = n_slots
    while len(rounds) < MAX_ROUNDS and n_now - n_slots < max_merged:
        first, second, counts = _frequent_pairs(sample_ptr, sample, n_now, min_count)
        if counts.shape[0] == 0:
            break
        # most tokens first; ties by the slots, so the merges are the data's alone
        order = np.lexsort((second, first, -counts))
        partner, pairs = _matched(order, first, second, n_now,
                                  np.int64(max_merged - (n_now - n_slots)))
        merged_slot = np.full(n_now, -1, np.int32)
        merged_slot[pairs[:, 0]] = n_now + np.arange(pairs.shape[0])
        merged_slot[pairs[:, 1]] = merged_slot[pairs[:, 0]]
        rounds.append((partner, merged_slot, pairs))
        n_now += pairs.shape[0]
        before = sample.shape[0]
        sample_ptr, sample = _rewritten(sample_ptr, sample, partner[None], merged_slot[None],
                                        np.int64(1))
        if before - sample.shape[0] < MIN_ROUND_GAIN * before:
            break
    if not rounds:
        return hot_ptr, hot_entries, np.empty((0, 2), np.int64)
    partners = np.full((len(rounds), n_now), -1, np.int32)
    merged_slots = np.full((len(rounds), n_now), -1, np.int32)
    for r, (partner, merged_slot, _) in enumerate(rounds):
        partners[r, :partner.shape[0]] = partner
        merged_slots[r, :merged_slot.shape[0]] = merged_slot
    hot_ptr, hot_entries = _rewritten(hot_ptr, hot_entries, partners, merged_slots,
                                      np.int64(len(rounds)))
    return hot_ptr, hot_entries, np.concatenate([pairs for _, _, pairs in rounds])
