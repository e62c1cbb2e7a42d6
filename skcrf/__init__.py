"""skcrf: conditional random fields for scikit-learn: chains, segments and trees."""

# features first: the estimators' modules import parts of it
from .features import (SequenceHasher, SequenceMatrix, SequenceVectorizer,  # isort: skip
                       TokenFeaturizer)
from ._chain import CRFClassifier
from ._cv import CRFClassifierCV
from ._persistence import ModelVersionWarning, load_model, save_model
from ._semimarkov import SemiMarkovCRF
from ._tree import TreeCRF
from .inference._batch import CacheDamagedWarning, CacheUnavailableWarning

__version__ = "0.1.0"

__all__ = [
    "CRFClassifier",
    "CRFClassifierCV",
    "CacheDamagedWarning",
    "CacheUnavailableWarning",
    "ModelVersionWarning",
    "SemiMarkovCRF",
    "SequenceHasher",
    "SequenceMatrix",
    "SequenceVectorizer",
    "TokenFeaturizer",
    "TreeCRF",
    "load_model",
    "save_model",
    "__version__",
]
