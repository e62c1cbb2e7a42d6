"""Label patterns: the label n-grams of a higher-order CRF that carry a weight.

A CRF of order ``d`` scores a labelling with its label pairs (dense, every
pair of labels) and with the weights of the label n-grams of 3 to ``d + 1``
labels it keeps, its *patterns*: those seen in the training labels (at least
``min_freq`` times), or all of them. Exact inference runs over the automaton
of :mod:`.pattern_automaton`, whose cost grows with the number of patterns,
not with ``n_classes ** d``.

Nothing here knows tokens or segments: a labelling is a flat array of label
ids with ``offsets``, so a semi-Markov model can pass the labels of its
segments.

Patterns are kept as rows of ``order + 1`` class ids, oldest label first,
left-padded with -1 (the trigram ``(a, b, c)`` of an order-3 model is
``[-1, a, b, c]``), sorted by length, then by labels. Each length also has
sorted integer codes, ``sum_i y_i * C ** (k - 1 - i)``, to find n-grams of a
labelling among them.
"""

import numpy as np

#: The most patterns a model may keep: with ``all_possible_transitions`` an
#: order ``d`` over ``C`` labels has about ``C ** (d + 1)``, and every
#: evaluation touches each of them at every token.
MAX_PATTERNS = 1 << 21

#: Codes are int64: ``n_classes ** (order + 1)`` must stay below this.
_CODE_LIMIT = 1 << 62

#: The shortest pattern: label pairs are the dense transitions, not patterns.
MIN_LENGTH = 3


def check_code_range(n_classes, order):
    """Raise a ValueError if n-grams of ``order + 1`` of ``n_classes`` labels overflow int64 codes."""
    if int(n_classes) ** (int(order) + 1) >= _CODE_LIMIT:
        raise ValueError(
            f"order={order} with {n_classes} labels is beyond what skcrf can index "
            f"({n_classes}**{order + 1} label n-grams); use a lower order.")


def ngram_codes(label_ids, offsets, n_classes, length):
    """Code of the ``length``-gram ending at each token, -1 where the sequence is shorter.

    Parameters
    ----------
    label_ids : ndarray of int64 of shape (n_tokens,)
        -1 for a token without one known label: no n-gram holding it is counted.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    n_classes, length : int

    Returns
    -------
    ndarray of int64 of shape (n_tokens,)
    """
    label_ids = np.asarray(label_ids, dtype=np.int64)
    n_tokens = label_ids.shape[0]
    # position of each token within its sequence
    starts = np.repeat(np.asarray(offsets[:-1], dtype=np.int64), np.diff(offsets))
    position = np.arange(n_tokens, dtype=np.int64) - starts
    codes = label_ids.copy()
    for _ in range(length - 1):
        shifted = np.full(n_tokens, -1, dtype=np.int64)
        shifted[1:] = codes[:-1]
        # a token of unknown label (-1, partial labels) ends no n-gram
        codes = np.where((shifted >= 0) & (label_ids >= 0), shifted * n_classes + label_ids, -1)
    codes[position < length - 1] = -1
    return codes


def rows_of_codes(codes, length, n_classes, order):
    """Pattern rows (n, order + 1), left-padded with -1, of codes of ``length``-grams."""
    rows = np.full((codes.shape[0], order + 1), -1, dtype=np.int64)
    rest = np.asarray(codes, dtype=np.int64).copy()
    for column in range(order, order - length, -1):
        rows[:, column] = rest % n_classes
        rest //= n_classes
    return rows


def row_codes(rows, n_classes):
    """The code of each pattern row (see the module docstring), whatever its length."""
    rows = np.asarray(rows, dtype=np.int64)
    codes = np.zeros(rows.shape[0], dtype=np.int64)
    for column in range(rows.shape[1]):
        codes = np.where(rows[:, column] >= 0, codes * n_classes + rows[:, column], codes)
    return codes


def row_lengths(rows):
    """The number of labels of each pattern row."""
    rows = np.asarray(rows)
    return rows.shape[1] - (rows < 0).sum(axis=1)


class LabelPatterns:
    """The label n-grams (3 to ``order + 1`` labels) a chain of order ``order`` weighs.

    Parameters
    ----------
    n_classes, order : int
    codes : dict of int to ndarray of int64
        For each length 3..order + 1, the sorted, unique codes of its patterns
        (a length may be missing or empty).

    Attributes
    ----------
    rows : ndarray of int64 of shape (n_patterns, order + 1)
        The patterns, in weight order (see the module docstring).
    """

    def __init__(self, n_classes, order, codes):
        check_code_range(n_classes, order)
        self.n_classes = int(n_classes)
        self.order = int(order)
        self.codes = {k: np.unique(np.asarray(codes.get(k, ()), dtype=np.int64))
                      for k in self.lengths}
        self.starts = {}
        start = 0
        for k in self.lengths:
            self.starts[k] = start
            start += self.codes[k].shape[0]
        self.n_patterns = start
        self.rows = (np.concatenate([rows_of_codes(self.codes[k], k, self.n_classes, self.order)
                                     for k in self.lengths])
                     if self.lengths else np.zeros((0, self.order + 1), dtype=np.int64))

    @property
    def lengths(self):
        """The pattern lengths, 3..order + 1 (none for order 1)."""
        return range(MIN_LENGTH, self.order + 2)

    @classmethod
    def seen(cls, label_ids, offsets, n_classes, order, min_freq=1):
        """The n-grams of 3 to ``order + 1`` labels that occur at least ``min_freq`` times.

        Since an occurrence of a pattern holds one of each of its shorter
        prefixes and suffixes, the kept set holds those too: counting keeps it
        closed.
        """
        check_code_range(n_classes, order)
        codes = {}
        for k in range(MIN_LENGTH, order + 2):
            found = ngram_codes(label_ids, offsets, n_classes, k)
            unique, counts = np.unique(found[found >= 0], return_counts=True)
            codes[k] = unique[counts >= min_freq]
        patterns = cls(n_classes, order, codes)
        _check_size(patterns.n_patterns, n_classes, order, every=False)
        return patterns

    @classmethod
    def every(cls, n_classes, order, allowed=None):
        """Every n-gram of 3 to ``order + 1`` labels whose consecutive pairs ``allowed`` allows.

        ``allowed`` is a (n_classes, n_classes) boolean array [from, to], or
        None for all pairs. A pattern with a forbidden pair has probability 0
        wherever it could occur, so it gets no weight. Raises a ValueError when
        there are more than :data:`MAX_PATTERNS`.
        """
        check_code_range(n_classes, order)
        C = int(n_classes)
        if allowed is None:
            allowed = np.ones((C, C), dtype=bool)
        bound = sum(int(allowed.sum()) * C ** (k - 2) for k in range(MIN_LENGTH, order + 2))
        _check_size(bound, C, order, every=True)
        sources, targets = np.nonzero(allowed)
        codes = {}
        previous = np.sort(sources * C + targets).astype(np.int64)  # the allowed pairs
        for k in range(MIN_LENGTH, order + 2):
            last = previous % C
            # extend each (k-1)-gram by every label its last one may precede
            n_next = allowed[last].sum(axis=1)
            extended = np.repeat(previous, n_next) * C + np.nonzero(allowed[last])[1]
            codes[k] = extended
            previous = extended
        patterns = cls(C, order, codes)
        _check_size(patterns.n_patterns, C, order, every=True)
        return patterns

    @classmethod
    def from_rows(cls, rows, n_classes, order):
        """The patterns of rows as :attr:`rows` gives them (a fitted model's ``label_patterns_``).

        Raises a ValueError naming the first row that is not a pattern of
        ``order`` over ``n_classes`` labels (wrong shape, a label out of
        range, -1 anywhere but a left padding, fewer than 3 labels) or that
        repeats an earlier one; rows need not be sorted. Returns the patterns
        and, for each row, its index among them.
        """
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != order + 1 or rows.dtype.kind not in "iu":
            raise ValueError(
                f"label patterns must be an integer array of shape (n_patterns, order + 1 = "
                f"{order + 1}); got {rows.dtype} of shape {rows.shape}.")
        rows = rows.astype(np.int64)
        padded = rows < 0
        lengths = row_lengths(rows)
        # -1 only as a left padding, and labels in range
        bad = ((rows < -1) | (rows >= n_classes)
               | (padded & ~np.cumprod(padded, axis=1).astype(bool))
               | (lengths < MIN_LENGTH)[:, np.newaxis])
        bad_rows = np.flatnonzero(bad.any(axis=1))
        if bad_rows.size:
            raise ValueError(
                f"label pattern {bad_rows[0]} is {rows[bad_rows[0]].tolist()}: a pattern holds "
                f"{MIN_LENGTH} to {order + 1} class ids in [0, {n_classes}), left-padded with -1.")
        codes = row_codes(rows, n_classes)
        patterns = cls(n_classes, order,
                       {k: codes[lengths == k] for k in range(MIN_LENGTH, order + 2)})
        if patterns.n_patterns != rows.shape[0]:
            order_ = np.lexsort((np.arange(rows.shape[0]), codes, lengths))
            same = ((lengths[order_][1:] == lengths[order_][:-1])
                    & (codes[order_][1:] == codes[order_][:-1]))
            at = int(np.flatnonzero(same)[0])
            first, later = int(order_[at]), int(order_[at + 1])
            raise ValueError(f"label pattern {later} repeats pattern {first} "
                             f"({rows[later].tolist()}).")
        return patterns, patterns.index_of(lengths, codes)

    def index_of(self, lengths, codes):
        """Index of each (length, code) among the patterns, -1 where it is not one."""
        lengths = np.asarray(lengths)
        codes = np.asarray(codes, dtype=np.int64)
        index = np.full(codes.shape, -1, dtype=np.int64)
        for k in self.lengths:
            at = np.flatnonzero(lengths == k)
            if not at.size or not self.codes[k].size:
                continue
            found = np.minimum(np.searchsorted(self.codes[k], codes[at]), self.codes[k].size - 1)
            hit = self.codes[k][found] == codes[at]
            index[at[hit]] = self.starts[k] + found[hit]
        return index

    def occurrences(self, label_ids, offsets):
        """Every occurrence of a pattern in a labelling: (token, pattern index) arrays.

        The token is where the occurrence ends.
        """
        tokens, found = [], []
        for k in self.lengths:
            if not self.codes[k].size:
                continue
            codes = ngram_codes(label_ids, offsets, self.n_classes, k)
            at = np.flatnonzero(codes >= 0)
            index = self.index_of(np.full(at.shape, k), codes[at])
            tokens.append(at[index >= 0])
            found.append(index[index >= 0])
        if not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(tokens), np.concatenate(found)

    def counts(self, label_ids, offsets):
        """(n_patterns,) how many times each pattern occurs in a labelling."""
        _, found = self.occurrences(label_ids, offsets)
        return np.bincount(found, minlength=self.n_patterns).astype(np.float64)

    def labelling_scores(self, label_ids, offsets, weights):
        """(n_sequences,) the sum of the pattern weights of each sequence's labelling."""
        tokens, found = self.occurrences(label_ids, offsets)
        n_sequences = offsets.shape[0] - 1
        owner = np.searchsorted(offsets, tokens, side="right") - 1
        total = np.zeros(n_sequences)
        total += np.bincount(owner, weights=np.asarray(weights)[found], minlength=n_sequences)
        return total

    def complete(self):
        """Whether these are every n-gram of every length (as :meth:`every` with no constraint)."""
        return all(self.codes[k].shape[0] == self.n_classes ** k for k in self.lengths)


def _check_size(n_patterns, n_classes, order, every):
    if n_patterns <= MAX_PATTERNS:
        return
    if every:
        raise ValueError(
            f"all_possible_transitions=True with order={order} and {n_classes} labels gives "
            f"{n_patterns} label patterns, more than the {MAX_PATTERNS} skcrf can afford "
            f"(every one is visited at every token of every evaluation); use "
            f"all_possible_transitions=False (the patterns seen in training) or a lower order.")
    raise ValueError(
        f"order={order} keeps {n_patterns} label patterns seen in training, more than the "
        f"{MAX_PATTERNS} skcrf can afford (every one is visited at every token of every "
        f"evaluation); raise min_pattern_freq or use a lower order.")
