"""The words of raw token sequences, for the transformers that look words up in a table."""

from itertools import chain

import numpy as np

from .._utils.validation import check_sequences
from .sequence_matrix import SequenceMatrix

_PLAIN_TOKENS = {str, tuple, list}


def sequence_words(X, word_column, owner):
    """(list of every token's word, int64 offsets) of raw token sequences, or raise.

    A token is a ``str`` (the word) or a tuple or list of str whose column
    ``word_column`` is the word, as :class:`TokenFeaturizer` takes them. An
    error names the sequence and the token.
    """
    X = check_sequences(X, tokens="str tokens or tuples of str", matrix_ok=False)
    if isinstance(X, SequenceMatrix):
        raise TypeError(f"{owner} takes raw token sequences (lists of str or of tuples of "
                        f"str), not a SequenceMatrix.")
    offsets = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum([len(sequence) for sequence in X], out=offsets[1:])
    words = _plain_words(X, word_column)
    if words is not None:
        return words, offsets
    words = []
    for q, sequence in enumerate(X):
        for t, token in enumerate(sequence):
            if type(token) is not str:
                token = _word_of(token, word_column, q, t, owner)
            words.append(token)
    return words, offsets


def _plain_words(X, word_column):
    """The words when every token is a str or a tuple or list (exactly) whose column
    ``word_column`` is a str, with no Python frame per token; else None (the loop of
    :func:`sequence_words` then takes each token and names what is wrong)."""
    tokens = list(chain.from_iterable(X))
    if not set(map(type, tokens)) <= _PLAIN_TOKENS:
        return None
    try:
        words = [token if type(token) is str else token[word_column] for token in tokens]
    except IndexError:
        return None
    return words if set(map(type, words)) <= {str} else None


def _word_of(token, word_column, q, t, owner):
    if isinstance(token, str):
        return str(token)
    if isinstance(token, (tuple, list)):
        if len(token) <= word_column:
            raise ValueError(f"Sequence {q}, token {t} of X has {len(token)} column(s); "
                             f"{owner} reads the word from column {word_column} "
                             f"(word_column).")
        word = token[word_column]
        if isinstance(word, str):
            return word
        raise TypeError(f"Sequence {q}, token {t}, column {word_column} of X is a "
                        f"{type(word).__name__}; {owner} expects the word as a str.")
    raise TypeError(f"Sequence {q}, token {t} of X is a {type(token).__name__}; {owner} "
                    f"expects a str or a tuple of str.")
