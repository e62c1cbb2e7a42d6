"""What TokenFeaturizer computes from a word alone: flags, the word shape, one-hot groups."""

import re

import numpy as np

from ._numbering import factorize


def _has_digit(word):
    return any(map(str.isdigit, word))


def _has_hyphen(word):
    return "-" in word


_FLAGS = {
    "isupper": str.isupper,
    "islower": str.islower,
    "istitle": str.istitle,
    "isdigit": str.isdigit,
    "isalpha": str.isalpha,
    "hasdigit": _has_digit,
    "hyphen": _has_hyphen,
}
_WORD_FEATURES = ("word", "lower", "prefix", "suffix", "shape", *_FLAGS)
_RUNS = re.compile(r"(.)\1+", re.DOTALL)


def _char_class(char):
    if char.isupper():
        return "X"
    if char.isalpha():
        return "x"
    if char.isdigit():
        return "d"
    return char


def word_shape(word):
    """Collapsed shape of a word: upper case X, other letters x, digits d.

    Other characters stay as they are, and runs of one symbol shrink to one.

    Parameters
    ----------
    word : str

    Returns
    -------
    shape : str

    Examples
    --------
    >>> from skcrf.features._words import word_shape
    >>> word_shape("McDonald's"), word_shape("1990s"), word_shape("U.S."), word_shape("año")
    ("XxXx'x", 'dx', 'X.X.', 'x')
    """
    return _RUNS.sub(r"\1", "".join(map(_char_class, word)))


def _shapes(words):
    """:func:`word_shape` of many words: one ``str.translate`` table for all."""
    table = {ord(char): _char_class(char) for char in set("".join(words))}
    return [_RUNS.sub(r"\1", word.translate(table)) for word in words]


def _word_group(words, feature, length, key):
    """(column of each distinct word or -1, sorted names) of one word feature."""
    if feature in _FLAGS:
        flags = np.fromiter(map(_FLAGS[feature], words), dtype=bool, count=len(words))
        return np.where(flags, 0, -1).astype(np.int32), [key]
    if feature == "word":
        return _one_hot_group(key, words)
    if feature == "lower":
        return _one_hot_group(key, list(map(str.lower, words)))
    if feature == "prefix":
        return _one_hot_group(key, [word[:length] for word in words])
    if feature == "suffix":
        return _one_hot_group(key, [word[-length:] for word in words])
    return _one_hot_group(key, _shapes(words))  # shape


def _one_hot_group(key, values):
    """One column ``key=value`` per distinct value, in name order, and the column of each value."""
    codes, distinct = factorize(values)
    order = sorted(range(len(distinct)), key=distinct.__getitem__)
    rank = np.empty(len(distinct), dtype=np.int32)
    rank[order] = np.arange(len(distinct), dtype=np.int32)
    return rank[codes], [f"{key}={distinct[j]}" for j in order]


def _word_value(feature, length, word):
    if feature in _FLAGS:
        return _FLAGS[feature](word)
    if feature == "word":
        return word
    if feature == "lower":
        return word.lower()
    if feature == "prefix":
        return word[:length]
    if feature == "suffix":
        return word[-length:]
    return word_shape(word)
