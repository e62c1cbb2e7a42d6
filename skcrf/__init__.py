"""skcrf: conditional random fields for scikit-learn: chains, segments and trees.

The public names load on first use (PEP 562): ``import skcrf`` alone does
not import scikit-learn, scipy and numba, which take most of a second;
``from skcrf import CRFClassifier`` (or ``skcrf.CRFClassifier``) does.
"""

from typing import TYPE_CHECKING

from ._utils.lazy import lazy_attributes

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "CRFClassifier": "._chain",
    "CRFClassifierCV": "._cv",
    "CacheDamagedWarning": ".inference._runtime.batch",
    "CacheUnavailableWarning": ".inference._runtime.batch",
    "CalibratedCRF": "._calibration",
    "ModelVersionWarning": "._persistence",
    "SemiMarkovCRF": "._semimarkov",
    "SequenceHasher": ".features",
    "SequenceMatrix": ".features",
    "SequenceVectorizer": ".features",
    "TokenFeaturizer": ".features",
    "TreeCRF": "._tree",
    "load_model": "._persistence",
    "save_model": "._persistence",
}

__all__ = sorted(_PUBLIC) + ["__version__"]

if TYPE_CHECKING:  # what static checkers and IDEs see
    from ._calibration import CalibratedCRF
    from ._chain import CRFClassifier
    from ._cv import CRFClassifierCV
    from ._persistence import ModelVersionWarning, load_model, save_model
    from ._semimarkov import SemiMarkovCRF
    from ._tree import TreeCRF
    from .features import (SequenceHasher, SequenceMatrix, SequenceVectorizer,
                           TokenFeaturizer)
    from .inference._runtime.batch import CacheDamagedWarning, CacheUnavailableWarning


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
