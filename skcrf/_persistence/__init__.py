"""Saving and loading fitted models in a file that loads without running its code.

``_file`` writes and reads the file (a versioned, checksummed header, then
the model), ``_archive`` turns an estimator into JSON and numpy arrays and
back. The package imports no estimator: the classes a file may name are
an allow-list that the estimators' modules fill (``_registry``).
"""

from ._file import FORMAT_VERSION, ModelVersionWarning, load_model, save_model

__all__ = ["FORMAT_VERSION", "ModelVersionWarning", "load_model", "save_model"]
