"""Features: raw sequences or feature dicts in, a :class:`SequenceMatrix` out.

The names load on first use (PEP 562), as the package's own: importing one
submodule (``skcrf.features.sequence_matrix``) does not import the others.
"""

from typing import TYPE_CHECKING

from .._utils.lazy import lazy_attributes

_PUBLIC = {
    "DenseWindow": ".dense_window",
    "PerTokenTransformer": ".per_token",
    "SequenceHasher": ".hasher",
    "SequenceMatrix": ".sequence_matrix",
    "SequenceUnion": ".union",
    "SequenceVectorizer": ".vectorizer",
    "TokenFeaturizer": ".featurizer",
    "WordClusters": ".distributional",
    "WordVectorizer": ".word_vectors",
    "from_lengths": "._dense",
    "learn_word_vectors": ".distributional",
    "make_sequence_union": ".union",
}

__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:  # what static checkers and IDEs see
    from .dense_window import DenseWindow
    from .distributional import WordClusters, learn_word_vectors
    from .featurizer import TokenFeaturizer
    from .hasher import SequenceHasher
    from ._dense import from_lengths
    from .per_token import PerTokenTransformer
    from .sequence_matrix import SequenceMatrix
    from .union import SequenceUnion, make_sequence_union
    from .vectorizer import SequenceVectorizer
    from .word_vectors import WordVectorizer


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
