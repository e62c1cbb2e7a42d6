"""Type aliases of the public API's annotations.

The numpydoc docstrings remain the reference for what an argument may hold;
these aliases say the same to a type checker. The modules that use them start
with ``from __future__ import annotations``: annotations are evaluated only by
whoever asks (``typing.get_type_hints``), never on import.
"""

from collections.abc import Hashable, Iterable, Mapping, Sequence
from os import PathLike
from typing import IO, Any, Literal, Optional, Union

from numpy.typing import ArrayLike, NDArray

# imported, not named in a string: typing.get_type_hints must resolve the aliases
from ..features.sequence_matrix import SequenceMatrix

#: One token's features: name -> str (a one-hot feature ``name=value``), number
#: or bool (a real-valued feature), or a list or set of str.
FeatureDict = Mapping[Any, Any]

#: ``X`` of the estimators: sequences of per-token feature dicts, or a
#: SequenceMatrix from a vectorizer.
FeatureSequences = Union[Sequence[Sequence[FeatureDict]], SequenceMatrix]

#: One label per token, per sequence: lists, tuples or 1-D arrays, ragged.
LabelSequences = Sequence[Union[Sequence[Hashable], NDArray[Any]]]

#: ``fixed`` of the prediction methods: per sequence None, or one label (or None,
#: for a free token) per token.
FixedLabels = Optional[Sequence[Union[Sequence[Hashable], NDArray[Any], None]]]

#: A raw token of TokenFeaturizer and the CoNLL readers: a word, or a tuple of
#: columns (str, and for a tree the head's index).
Token = Union[str, tuple[Any, ...]]

#: ``X`` of TokenFeaturizer: sequences of raw tokens.
TokenSequences = Sequence[Sequence[Token]]

#: What the dataset loaders return: token sequences and their label sequences.
LabelledCorpus = tuple[list[list[Token]], list[list[str]]]

#: The same, the labels None when none were asked for.
Corpus = tuple[list[list[Token]], Optional[list[list[str]]]]

#: A file name: a str or a path-like object.
StrPath = Union[str, PathLike]

#: One weight per sequence, or None.
SequenceWeights = Union[ArrayLike, None]

#: ``solver`` of the CRF estimators: batch L-BFGS or one of the online solvers.
Solver = Literal["lbfgs", "sgd", "perceptron", "passive_aggressive", "arow"]

#: ``allowed_transitions`` of the estimators: a scheme's name ("bio", "auto", ...),
#: allowed (from, to) pairs, a dict from a label to the labels allowed after it, or a
#: boolean matrix.
AllowedTransitions = Union[str, Iterable[tuple[Hashable, Hashable]],
                           Mapping[Hashable, Iterable[Hashable]], ArrayLike, None]

#: ``zero_division`` of the metrics: what a 0/0 score is, or "warn" (0 and a warning).
ZeroDivision = Union[Literal["warn"], float]

#: Where a model is written or read: a path or a binary file object.
FileLike = Union[str, PathLike, IO[bytes]]

__all__ = ["AllowedTransitions", "Corpus", "FeatureDict", "FeatureSequences", "FileLike",
           "FixedLabels", "LabelSequences", "LabelledCorpus", "SequenceWeights", "StrPath",
           "Token", "TokenSequences", "ZeroDivision"]
