"""skcrf: linear-chain conditional random fields for scikit-learn."""

from ._estimator import CRFClassifier
from ._featurizer import TokenFeaturizer
from ._kernels import CacheUnavailableWarning
from ._persistence import ModelVersionWarning, load_model, save_model
from ._sequence_matrix import SequenceMatrix
from ._vectorizer import SequenceVectorizer

__version__ = "0.1.0"

__all__ = [
    "CRFClassifier",
    "CacheUnavailableWarning",
    "ModelVersionWarning",
    "SequenceMatrix",
    "SequenceVectorizer",
    "TokenFeaturizer",
    "load_model",
    "save_model",
    "__version__",
]
