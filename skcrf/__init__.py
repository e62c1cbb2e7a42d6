"""skcrf: conditional random fields for scikit-learn: chains, segments and trees."""

# features first: the estimators' modules import parts of it
from .features import SequenceMatrix, SequenceVectorizer, TokenFeaturizer  # isort: skip
from ._chain import CRFClassifier
from ._cv import CRFClassifierCV
from ._persistence import ModelVersionWarning, load_model, save_model
from ._semimarkov import SemiMarkovCRF
from ._tree import TreeCRF
from .inference._batch import CacheDamagedWarning, CacheUnavailableWarning

# sklearn-crfsuite's interface registers its CRF with the model format on import,
# so that load_model reads the files it saves without the caller importing it
from . import compat  # noqa: E402,F401  isort: skip

__version__ = "0.1.0"

__all__ = [
    "CRFClassifier",
    "CRFClassifierCV",
    "CacheDamagedWarning",
    "CacheUnavailableWarning",
    "ModelVersionWarning",
    "SemiMarkovCRF",
    "SequenceMatrix",
    "SequenceVectorizer",
    "TokenFeaturizer",
    "TreeCRF",
    "load_model",
    "save_model",
    "__version__",
]
