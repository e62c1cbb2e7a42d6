"""TokenFeaturizer's view of raw token sequences, checked once: columns and offsets."""

from itertools import chain
from operator import itemgetter

import numpy as np

from .._utils.validation import _locate, check_sequences
from ._numbering import factorize
from ._parents import checked_parents
from .sequence_matrix import SequenceMatrix


class _Tokens:
    """Validated raw sequences, their tokens numbered by distinct value.

    Checks run on the distinct tokens (a few tens of thousands), not on every
    token; only when one fails is every token visited, to name the culprit.
    """

    def __init__(self, X, head_column=None):
        X = check_sequences(X, tokens="str tokens or tuples of str", matrix_ok=False)
        if isinstance(X, SequenceMatrix):
            raise TypeError(
                "TokenFeaturizer takes raw token sequences (lists of str or of tuples "
                "of str), not a SequenceMatrix.")
        self.lengths = np.fromiter(map(len, X), dtype=np.int64, count=len(X))
        self.offsets = np.zeros(len(X) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        self.n_tokens = int(self.offsets[-1])
        tokens = list(chain.from_iterable(X))
        try:
            self.token_ids, self.types = factorize(tokens)
        except TypeError:
            # lists do not hash: as tuples they do, if their items are str
            _check_tokens(tokens, self.lengths, head_column)
            tokens = list(map(tuple, tokens))
            self.token_ids, self.types = factorize(tokens)
        self.tokens = tokens
        self.n_columns = 0
        if self.types:
            self.n_columns = _check_types(self.types, tokens, self.lengths, head_column)
        self.is_str = isinstance(self.types[0], str) if self.types else True
        self.parents = None
        if head_column is not None and not self.n_tokens:
            self.parents = checked_parents(np.zeros(0, dtype=np.int64), self.offsets)
        elif head_column is not None:
            if self.is_str or head_column >= self.n_columns:
                raise ValueError(
                    f"head_column={head_column}, but the tokens have {self.n_columns} "
                    f"column(s).")
            self.parents = checked_parents(
                np.fromiter(map(itemgetter(head_column), tokens), dtype=np.int64,
                            count=self.n_tokens), self.offsets)

    def column(self, c):
        """Column ``c`` of every token, as a list."""
        return self.tokens if self.is_str else list(map(itemgetter(c), self.tokens))

    def column_codes(self, c):
        """Code of column ``c`` of every token and its distinct values.

        Numbered over the distinct tokens, then spread to all tokens with numpy.
        """
        if self.is_str:
            return self.token_ids, self.types
        codes, values = factorize(list(map(itemgetter(c), self.types)))
        return codes[self.token_ids], values


def _check_types(types, tokens, lengths, head_column=None):
    """Number of columns of the distinct tokens; raise (naming a token) if bad.

    Every column holds str, but ``head_column``, which holds int.
    """
    kinds = set(map(type, types))
    if all(issubclass(kind, str) for kind in kinds) and head_column is None:
        return 1
    if all(issubclass(kind, (tuple, list)) for kind in kinds):
        widths = set(map(len, types))
        if len(widths) == 1 and 0 not in widths:
            width = next(iter(widths))
            if head_column is None:
                text = types
            elif head_column < width:
                text = [token[:head_column] + token[head_column + 1:] for token in types]
                heads = set(map(type, map(itemgetter(head_column), types)))
            if (head_column is None or head_column < width and all(
                    issubclass(kind, (int, np.integer)) and not issubclass(kind, bool)
                    for kind in heads)) \
                    and all(issubclass(kind, str)
                            for kind in set(map(type, chain.from_iterable(text)))):
                return width
    _check_tokens(tokens, lengths, head_column)
    raise AssertionError("a malformed token escaped _check_tokens")  # pragma: no cover


def _check_tokens(tokens, lengths, head_column=None):
    """Raise a TypeError naming the first malformed token, if any.

    A token is a str, or a tuple or list of str, all of one form and width;
    with a ``head_column``, a tuple whose column ``head_column`` is an int.
    """
    if head_column is not None and isinstance(tokens[0], str):
        raise _token_error(lengths, 0, f"is a str, but head_column={head_column} needs "
                                       f"tuples (word, ..., head)")
    first_kind = type(tokens[0])
    is_str = isinstance(tokens[0], str)
    width = None if is_str else len(tokens[0]) if isinstance(tokens[0], (tuple, list)) else 0
    for i, token in enumerate(tokens):
        kind = type(token)
        if not isinstance(token, (str, tuple, list)):
            raise _token_error(lengths, i, f"is a {kind.__name__}; expected a str or a "
                                           f"tuple of str (word, POS, ...)")
        if isinstance(token, str) != is_str:
            raise _token_error(lengths, i, f"is a {kind.__name__}, but the first token "
                                           f"is a {first_kind.__name__}; all tokens must "
                                           f"have the same form")
        if is_str:
            continue
        if len(token) != width:
            raise _token_error(lengths, i, f"has {len(token)} columns, but the first "
                                           f"token has {width}")
        if width == 0:
            raise _token_error(lengths, i, "has no columns")
        if head_column is not None and head_column >= width:
            raise ValueError(f"head_column={head_column}, but the tokens have {width} "
                             f"column(s).")
        for c, value in enumerate(token):
            if c == head_column:
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise _token_error(lengths, i, f"has a {type(value).__name__} in "
                                                   f"head column {c} ({value!r:.40}); a "
                                                   f"head is the int index of the parent "
                                                   f"token, -1 for a root")
                continue
            if not isinstance(value, str):
                raise _token_error(lengths, i, f"has a {type(value).__name__} in column "
                                               f"{c} ({value!r:.40}); token columns must "
                                               f"be str")


def _token_error(lengths, index, what):
    sequence, position = _locate(lengths, index)
    return TypeError(f"Sequence {sequence}, token {position} {what}.")


# ---------------------------------------------------------------------------
# fast path: each feature group at each offset is a "slot" holding at most one
# column per token, computed once per distinct value and gathered for all
# tokens by the slot_features kernel
