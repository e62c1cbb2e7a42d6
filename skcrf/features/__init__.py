"""Features: raw sequences or feature dicts in, a :class:`SequenceMatrix` out."""

from .featurizer import TokenFeaturizer
from .hasher import SequenceHasher
from .sequence_matrix import SequenceMatrix
from .vectorizer import SequenceVectorizer

__all__ = ["SequenceHasher", "SequenceMatrix", "SequenceVectorizer", "TokenFeaturizer"]
