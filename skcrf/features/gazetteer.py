"""Gazetteers: phrases with their types, matched on whole spans of tokens.

A gazetteer maps a phrase (words separated by spaces) to one or more types,
``{"Nueva York": "LOC", "Naciones Unidas": ["ORG"]}``, or comes from a text
file of ``phrase<TAB>type`` lines. A span of tokens matches an entry when its
words are the entry's words, in three ways, each stronger one implying the
weaker ones:

- ``exact``: the same words, as written;
- ``lower``: the same words once case-folded (``str.casefold``);
- ``fuzzy``: the same number of words, each equal to the entry's once
  case-folded and stripped of accents, or within one edit (an insertion,
  deletion, substitution or swap of two neighbours) when both have at least
  :data:`FUZZY_MIN_LENGTH` characters: the soft dictionary match of Sarawagi
  and Cohen (2004), with a word-level edit distance for their string
  similarity.

Matching walks a trie of the entries' words from every token, a level (one
more word) at a time for all tokens at once, so it costs a few numpy calls per
word of the longest entry, not a Python loop per token. Words are compared
through their distinct values (a corpus has a few tens of thousands), never
per token.
"""

import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

#: The kinds of match, weakest last, and the prefix of their feature names.
MATCH_KINDS = ("exact", "lower", "fuzzy")
FEATURE_PREFIXES = {"exact": "gaz", "lower": "gaz.lower", "fuzzy": "gaz~"}

#: Shortest word a fuzzy match may change by an edit; shorter words must be equal.
FUZZY_MIN_LENGTH = 4


def _strip_accents(word):
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _fold(word):
    """The form words are compared in by fuzzy matches: case-folded, no accents."""
    return _strip_accents(word.casefold())


_NORMAL_FORMS = {"exact": str, "lower": str.casefold, "fuzzy": _fold}


def _within_one_edit(a, b):
    """Whether ``a`` and ``b`` differ by at most one insertion, deletion, substitution or swap."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) < len(b):
        return a[i:] == b[i + 1:]
    if a[i + 1:] == b[i + 1:]:
        return True  # a substitution
    return (i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
            and a[i + 2:] == b[i + 2:])  # a swap


@dataclass
class Matches:
    """Matches of a gazetteer in a batch of sequences, one row per (span, type).

    Attributes
    ----------
    starts : ndarray of int64
        First token of the span (a row of the stacked tokens).
    lengths : ndarray of int64
        Number of tokens of the span.
    type_ids : ndarray of int64
        Index of the type in :attr:`Gazetteer.types`.
    """

    starts: np.ndarray
    lengths: np.ndarray
    type_ids: np.ndarray


class _Trie:
    """The entries' words as a trie over word ids, with the types ending at each node.

    Node 0 is the root; the child of ``node`` by word ``w`` is found by the key
    ``node * n_words + w`` in the sorted ``keys``.
    """

    def __init__(self, phrases, types_of, normal):
        vocabulary = {}
        children = {}
        ends = {}
        for phrase, type_ids in zip(phrases, types_of):
            node = 0
            for word in map(normal, phrase):
                w = vocabulary.setdefault(word, len(vocabulary))
                node = children.setdefault((node, w), len(children) + 1)
            ends.setdefault(node, set()).update(type_ids)
        self.vocabulary = vocabulary
        n_words = max(len(vocabulary), 1)
        self.n_words = n_words
        keys = np.fromiter((node * n_words + w for node, w in children), dtype=np.int64,
                           count=len(children))
        child = np.fromiter(children.values(), dtype=np.int64, count=len(children))
        order = np.argsort(keys)
        self.keys, self.child = keys[order], child[order]
        n_nodes = len(children) + 1
        counts = np.zeros(n_nodes + 1, dtype=np.int64)
        for node, found in ends.items():
            counts[node + 1] = len(found)
        self.type_ptr = np.cumsum(counts)
        self.type_ids = np.zeros(self.type_ptr[-1], dtype=np.int64)
        for node, found in ends.items():
            self.type_ids[self.type_ptr[node]:self.type_ptr[node + 1]] = sorted(found)

    def step(self, nodes, words):
        """The child of each node by each word, -1 where there is none (or the word is -1)."""
        children = np.full(nodes.shape[0], -1, dtype=np.int64)
        if not self.keys.shape[0]:
            return children
        keys = nodes * self.n_words + words
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.shape[0] - 1)
        hit = (words >= 0) & (self.keys[at] == keys)
        children[hit] = self.child[at[hit]]
        return children


class Gazetteer:
    """Checked gazetteer entries, with the tries that match them.

    Parameters
    ----------
    entries : dict of str to tuple of str
        Phrase to its types.
    """

    def __init__(self, entries):
        self.types = sorted({t for types in entries.values() for t in types})
        type_index = {t: k for k, t in enumerate(self.types)}
        phrases = [phrase.split() for phrase in entries]
        types_of = [[type_index[t] for t in types] for types in entries.values()]
        self.longest = max(map(len, phrases), default=0)
        self._tries = {kind: _Trie(phrases, types_of, _NORMAL_FORMS[kind])
                       for kind in MATCH_KINDS}
        self._deletions = None

    @classmethod
    def of(cls, spec, name="gazetteer"):
        """The gazetteer of a mapping phrase -> type(s) or of a file of ``phrase<TAB>type`` lines.

        Raises ValueError or TypeError naming the bad entry (and for a file
        its line).
        """
        if isinstance(spec, (str, os.PathLike)):
            return cls(read_entries(spec, name))
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"{name} must be a mapping from phrases to types (a str or a list of str) "
                f"or the path of a file of 'phrase<TAB>type' lines; got a "
                f"{type(spec).__name__}.")
        entries = {}
        for phrase, types in spec.items():
            if not isinstance(phrase, str) or not phrase.split():
                raise ValueError(f"{name} has the phrase {phrase!r}; phrases must be "
                                 f"non-empty str.")
            if isinstance(types, str):
                types = [types]
            elif isinstance(types, (list, tuple, set, frozenset)):
                types = list(types)
            else:
                raise TypeError(f"{name}[{phrase!r}] is a {type(types).__name__}; give a "
                                f"type (str) or a list of types.")
            if not types or not all(isinstance(t, str) and t for t in types):
                raise ValueError(f"{name}[{phrase!r}] is {types!r}; give one or more "
                                 f"non-empty str types.")
            key = " ".join(phrase.split())
            entries[key] = tuple(sorted(set(entries.get(key, ())) | set(types)))
        return cls(entries)

    def matches(self, words, word_ids, offsets, kind):
        """:class:`Matches` of the entries in the tokens, for one kind of match.

        ``words`` are the distinct words and ``word_ids`` (n_tokens,) each
        token's index into them; ``offsets`` bound the sequences (a match never
        crosses one's end).
        """
        trie = self._tries[kind]
        normal = _NORMAL_FORMS[kind]
        if kind == "fuzzy":
            word_ptr, candidates = self._fuzzy_candidates(words, trie)
        else:
            ids = np.fromiter((trie.vocabulary.get(normal(word), -1) for word in words),
                              dtype=np.int64, count=len(words))
            word_ptr = np.arange(len(words) + 1, dtype=np.int64)
            candidates = ids
        n_tokens = word_ids.shape[0]
        sequence_end = np.repeat(offsets[1:], np.diff(offsets))
        # each token's candidate dictionary words
        counts = word_ptr[word_ids + 1] - word_ptr[word_ids]
        token_of = np.repeat(np.arange(n_tokens, dtype=np.int64), counts)
        first = np.repeat(word_ptr[word_ids], counts)
        within = np.arange(token_of.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
        starts = token_of
        nodes = trie.step(np.zeros_like(starts), candidates[first + within])
        found = []
        depth = 1
        while True:
            keep = nodes >= 0
            starts, nodes = starts[keep], nodes[keep]
            if not starts.shape[0]:
                break
            n_types = trie.type_ptr[nodes + 1] - trie.type_ptr[nodes]
            ended = np.flatnonzero(n_types)
            if ended.size:
                reps = n_types[ended]
                at = (np.repeat(trie.type_ptr[nodes[ended]], reps) + np.arange(reps.sum())
                      - np.repeat(np.cumsum(reps) - reps, reps))
                found.append((np.repeat(starts[ended], reps),
                              np.full(reps.sum(), depth, dtype=np.int64), trie.type_ids[at]))
            following = starts + depth
            inside = following < sequence_end[starts]
            starts, nodes, following = starts[inside], nodes[inside], following[inside]
            ids = word_ids[following]
            counts = word_ptr[ids + 1] - word_ptr[ids]
            starts = np.repeat(starts, counts)
            nodes = np.repeat(nodes, counts)
            first = np.repeat(word_ptr[ids], counts)
            within = np.arange(starts.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
            nodes = trie.step(nodes, candidates[first + within])
            depth += 1
        if not found:
            empty = np.zeros(0, dtype=np.int64)
            return Matches(empty, empty.copy(), empty.copy())
        starts, lengths, type_ids = (np.concatenate(parts) for parts in zip(*found))
        # a span reached through two fuzzy readings of its words counts once
        unique = np.unique(np.stack([starts, lengths, type_ids]), axis=1)
        return Matches(unique[0], unique[1], unique[2])

    def _fuzzy_candidates(self, words, trie):
        """For each distinct word, the dictionary words (ids) a fuzzy match may read it as.

        Returns CSR arrays ``(word_ptr, candidates)``. Candidates come from an
        index of the dictionary words and their one-deletion variants, then
        are checked with :func:`_within_one_edit`.
        """
        if self._deletions is None:
            index = {}
            for word, w in trie.vocabulary.items():
                index.setdefault(word, []).append(w)
                if len(word) >= FUZZY_MIN_LENGTH:
                    for i in range(len(word)):
                        index.setdefault(word[:i] + word[i + 1:], []).append(w)
            self._deletions = index
            self._dictionary_words = list(trie.vocabulary)
        index, dictionary = self._deletions, self._dictionary_words
        ptr = [0]
        candidates = []
        for word in words:
            folded = _fold(word)
            found = set(index.get(folded, ()))
            if len(folded) >= FUZZY_MIN_LENGTH:
                for i in range(len(folded)):
                    found.update(index.get(folded[:i] + folded[i + 1:], ()))
            kept = sorted(w for w in found
                          if dictionary[w] == folded
                          or (min(len(folded), len(dictionary[w])) >= FUZZY_MIN_LENGTH
                              and _within_one_edit(folded, dictionary[w])))
            candidates += kept
            ptr.append(len(candidates))
        return (np.asarray(ptr, dtype=np.int64),
                np.asarray(candidates, dtype=np.int64).reshape(-1))


def read_entries(path, name):
    """Entries of a file of ``phrase<TAB>type`` lines (blank lines and ``#`` comments skipped)."""
    entries = {}
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                phrase, tab, kind = line.rpartition("\t")
                if not tab or not phrase.split() or not kind.strip():
                    raise ValueError(
                        f"{path}, line {number}: expected 'phrase<TAB>type', got "
                        f"{line!r:.80}.")
                key = " ".join(phrase.split())
                entries[key] = tuple(sorted(set(entries.get(key, ())) | {kind.strip()}))
    except OSError as error:
        raise ValueError(f"{name}: cannot read {path!s} ({error.strerror or error}).") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: {path!s} is not UTF-8 text ({error.reason} at byte "
                         f"{error.start}).") from None
    return entries


def _longest_per_start(found):
    """The longest match of each (start, type): the shorter ones cover nothing it does not.

    Nested entries ("a", "a a", ... of up to ``L`` words) on repetitive text
    match ``L`` times at each token; covering every match would cost
    ``n_tokens * L**2``, covering the longest ``n_tokens * L``.
    """
    order = np.lexsort((-found.lengths, found.type_ids, found.starts))
    starts, type_ids = found.starts[order], found.type_ids[order]
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = (starts[1:] != starts[:-1]) | (type_ids[1:] != type_ids[:-1])
    keep = order[first]
    return Matches(found.starts[keep], found.lengths[keep], found.type_ids[keep])


def token_features(gazetteer, words, word_ids, offsets):
    """BIO-style token features of the matches, as the entries of a sparse matrix.

    Every token a match of type ``T`` starts at gets ``gaz:B-T`` (with the
    prefix of its kind, :data:`FEATURE_PREFIXES`), every other token it
    covers ``gaz:I-T``, for each kind of match that holds. Returns ``(rows,
    columns, names)``: the token row and column of every entry (an entry may
    repeat), and the names of the columns, only those some token has. Only
    the longest match of each start and type is spread over its tokens, so
    the entries number at most ``n_tokens * longest entry`` per kind and type.
    """
    rows, columns, names = [], [], []
    for kind in MATCH_KINDS:
        found = gazetteer.matches(words, word_ids, offsets, kind)
        if not found.starts.shape[0]:
            continue
        found = _longest_per_start(found)
        n_types = len(gazetteer.types)
        covered = np.repeat(found.starts, found.lengths) + (
            np.arange(found.lengths.sum())
            - np.repeat(np.cumsum(found.lengths) - found.lengths, found.lengths))
        inside = covered != np.repeat(found.starts, found.lengths)
        tags = np.repeat(found.type_ids, found.lengths) + n_types * inside
        used, local = np.unique(tags, return_inverse=True)
        prefix = FEATURE_PREFIXES[kind]
        columns.append(len(names) + local.reshape(-1))
        names += [f"{prefix}:{'BI'[tag // n_types]}-{gazetteer.types[tag % n_types]}"
                  for tag in used.tolist()]
        rows.append(covered)
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), []
    return np.concatenate(rows), np.concatenate(columns), names
