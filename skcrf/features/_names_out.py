"""``get_feature_names_out`` of the transformers whose output names are one fitted attribute."""

from typing import Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils.validation import check_is_fitted

__all__ = ["NamesOutMixin"]


class NamesOutMixin:
    """Adds ``get_feature_names_out``, read from the attribute ``_names_out_attribute``."""

    #: The fitted attribute holding the output columns' names, in column order.
    _names_out_attribute = "feature_names_"

    def get_feature_names_out(self, input_features: Optional[ArrayLike] = None,
                              ) -> NDArray[np.object_]:
        """The names of the output columns, in column order.

        Parameters
        ----------
        input_features : None
            Ignored: the names were fixed in fit.

        Returns
        -------
        feature_names_out : ndarray of str objects
            A copy: changing it leaves the transformer as it is.
        """
        check_is_fitted(self, self._names_out_attribute)
        return np.array(getattr(self, self._names_out_attribute), dtype=object)
