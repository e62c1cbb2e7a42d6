"""Features: raw sequences or feature dicts in, a :class:`SequenceMatrix` out.

The names load on first use (PEP 562), as the package's own: importing one
submodule (``skcrf.features.sequence_matrix``) does not import the others.
"""

from importlib import import_module
from typing import TYPE_CHECKING

_PUBLIC = {
    "SequenceHasher": ".hasher",
    "SequenceMatrix": ".sequence_matrix",
    "SequenceVectorizer": ".vectorizer",
    "TokenFeaturizer": ".featurizer",
    "from_lengths": ".sequence_matrix",
}

__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:  # what static checkers and IDEs see
    from .featurizer import TokenFeaturizer
    from .hasher import SequenceHasher
    from .sequence_matrix import SequenceMatrix, from_lengths
    from .vectorizer import SequenceVectorizer


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'skcrf.features' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
