"""What TokenFeaturizer computes from a word alone: flags and the word shape."""

import re


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
    >>> from skcrf.features.featurizer import word_shape
    >>> word_shape("McDonald's"), word_shape("1990s"), word_shape("U.S."), word_shape("año")
    ("XxXx'x", 'dx', 'X.X.', 'x')
    """
    return _RUNS.sub(r"\1", "".join(map(_char_class, word)))


def _shapes(words):
    """:func:`word_shape` of many words: one ``str.translate`` table for all."""
    table = {ord(char): _char_class(char) for char in set("".join(words))}
    return [_RUNS.sub(r"\1", word.translate(table)) for word in words]
