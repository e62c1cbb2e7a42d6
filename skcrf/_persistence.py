"""Saving and loading fitted models: a small versioned header, then a pickle.

A model file is::

    skcrf-model\\n                      the magic line
    {"format": 1, "skcrf": ...}\\n     one line of JSON: versions and metadata
    <pickle payload>

The header is read before anything is unpickled, so a file that is not a model,
or that a newer skcrf wrote in a format this one does not know, is refused with
a message naming both versions instead of failing somewhere inside pickle.
"""

import io
import json
import os
import pickle
import platform
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["ModelVersionWarning", "load_model", "save_model"]

_MAGIC = b"skcrf-model\n"

# Bump when the layout of the file or of the pickled objects changes in a way an
# older skcrf cannot read; a newer skcrf must keep reading every older format.
FORMAT_VERSION = 1

# Fixed rather than pickle.HIGHEST_PROTOCOL, so a file written under a newer
# Python stays readable by every Python skcrf supports (protocol 5: 3.8+).
_PROTOCOL = 5

# A header is a few hundred bytes; the bound keeps a binary file that happens to
# start with the magic from being read whole in search of a newline.
_MAX_HEADER_BYTES = 1 << 16


# Where classes pickled by skcrf 0.1 (before the layered layout) live now.
_MOVED_MODULES = {
    "skcrf._estimator": "skcrf._chain",
    "skcrf._featurizer": "skcrf.features.featurizer",
    "skcrf._vectorizer": "skcrf.features.vectorizer",
    "skcrf._sequence_matrix": "skcrf.features.sequence_matrix",
}


class _Unpickler(pickle.Unpickler):
    """Reads files of every earlier layout: classes that moved are found where they are now."""

    def find_class(self, module, name):
        return super().find_class(_MOVED_MODULES.get(module, module), name)


class ModelVersionWarning(UserWarning):
    """A model file was written by a different skcrf version.

    Its format is one this skcrf reads, so the model loads, but predictions
    may differ from the ones it gave when it was saved. Re-save it (or
    retrain) with this version to silence the warning.
    """


def _skcrf_version():
    # read at call time: skcrf/__init__.py imports this module before it sets
    # __version__
    import skcrf

    return skcrf.__version__


def _environment():
    return {
        "skcrf": _skcrf_version(),
        "sklearn": sklearn.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def _file_name(file):
    """How to name ``file`` in messages: its path, else its type."""
    if isinstance(file, (str, os.PathLike)):
        return str(file)
    name = getattr(file, "name", None)
    return str(name) if isinstance(name, (str, os.PathLike)) else f"<{type(file).__name__}>"


def _is_skcrf_estimator(obj):
    return isinstance(obj, BaseEstimator) and type(obj).__module__.split(".")[0] == "skcrf"


def _check_model(model):
    """Raise unless ``model`` is a fitted skcrf estimator or a Pipeline ending in one."""
    final = model[-1] if isinstance(model, Pipeline) else model
    if not _is_skcrf_estimator(final):
        what = (f"a Pipeline ending in {type(final).__name__}"
                if final is not model else f"a {type(model).__name__}")
        raise TypeError(
            f"save_model saves skcrf estimators and Pipelines ending in one; got {what}. "
            f"(For a search, save its best_estimator_.)")
    check_is_fitted(model)


def save_model(model, file, *, metadata=None):
    """Save a fitted skcrf model to a file.

    The file holds a short header (a magic line, then one line of JSON with the
    model format version, the skcrf, scikit-learn, numpy and Python versions
    and ``metadata``) followed by the pickled model, written straight into
    ``file``: no temporary file. The pickle is made in memory first (as much
    memory again as the file's size), so a model that cannot be pickled
    leaves ``file`` untouched.

    Parameters
    ----------
    model : estimator
        A fitted :class:`CRFClassifier`, :class:`SequenceVectorizer` or
        :class:`TokenFeaturizer`, or a fitted :class:`~sklearn.pipeline.Pipeline`
        whose last step is one of them.
    file : str, path-like or binary file object
        Where to write. A path is created or overwritten; a model that cannot
        be pickled leaves it untouched, and a failed write removes it. A file
        object must be open for binary writing and is left open.
    metadata : dict, default=None
        JSON-serializable information to keep beside the model, such as how
        its input files are laid out; :func:`load_model` returns it with
        ``return_metadata=True``.

    Raises
    ------
    TypeError
        If ``model`` is not an skcrf estimator or a Pipeline ending in one, if
        ``metadata`` is not JSON-serializable, if ``file`` is a text-mode file,
        or if the model cannot be pickled (a lambda as ``custom``, say).
    sklearn.exceptions.NotFittedError
        If ``model`` is not fitted.

    See Also
    --------
    load_model : Read the model back.

    Examples
    --------
    >>> import io
    >>> from skcrf import CRFClassifier
    >>> from skcrf import load_model, save_model
    >>> X = [[{"w": "the"}, {"w": "cat"}]]
    >>> crf = CRFClassifier(alpha=0.1).fit(X, [["DET", "N"]])
    >>> buffer = io.BytesIO()
    >>> save_model(crf, buffer)
    >>> _ = buffer.seek(0)
    >>> load_model(buffer).predict(X)[0].tolist()
    ['DET', 'N']
    """
    _check_model(model)
    header = {"format": FORMAT_VERSION, **_environment(), "model": type(model).__name__,
              "metadata": {} if metadata is None else metadata}
    try:
        header_line = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
    except (TypeError, ValueError) as error:
        raise TypeError(f"metadata must be JSON-serializable: {error}") from None
    if len(header_line) >= _MAX_HEADER_BYTES:
        raise ValueError(
            f"metadata is too large for the header ({len(header_line)} bytes; at most "
            f"{_MAX_HEADER_BYTES - 1}); keep large objects in the model itself.")

    if not isinstance(file, (str, os.PathLike)):
        _check_binary(file)
        _write(_pickled(model), header_line, file)
        return
    # pickled before the file is opened: a model that cannot be pickled leaves
    # an existing file as it was
    payload = _pickled(model)
    path = Path(file)
    with open(path, "wb") as handle:
        try:
            _write(payload, header_line, handle)
        except BaseException:
            # leave no half-written model behind that would fail only when loaded
            handle.close()
            path.unlink(missing_ok=True)
            raise


def _check_binary(handle):
    if isinstance(handle, io.TextIOBase):
        raise TypeError(
            f"{_file_name(handle)} is open in text mode; save_model writes bytes: open it "
            f"with mode 'wb'.")


def _pickled(model):
    try:
        return pickle.dumps(model, protocol=_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise TypeError(
            f"The model cannot be pickled: {error}. Callables in it (such as "
            f"TokenFeaturizer's custom) must be module-level functions, not lambdas or "
            f"local functions.") from error


def _write(payload, header_line, handle):
    handle.write(_MAGIC)
    handle.write(header_line + b"\n")
    handle.write(payload)


def load_model(file, *, return_metadata=False):
    """Load a model written by :func:`save_model`.

    The header is checked before the payload is unpickled: a file that is not
    an skcrf model, or whose format is newer than this skcrf reads, is refused.
    A model saved by another skcrf version in a format this one reads loads
    with a :class:`ModelVersionWarning`.

    .. warning::
       Loading unpickles the payload, which can run arbitrary code. Only load
       files you trust, such as ones you saved yourself, as with
       :mod:`pickle` and scikit-learn's own persistence.

    Parameters
    ----------
    file : str, path-like or binary file object
        The model file; a file object must be open for binary reading,
        positioned at the start of the model, and is left open.
    return_metadata : bool, default=False
        Also return the ``metadata`` given to :func:`save_model`.

    Returns
    -------
    model : estimator
        The fitted estimator or Pipeline that was saved.
    metadata : dict
        Only with ``return_metadata=True``: the saved metadata, plus the
        header's version information under ``"saved_with"``.

    Raises
    ------
    ValueError
        If ``file`` is not an skcrf model, its header or payload is corrupt,
        or its format version is newer than this skcrf reads; the message names
        the file and the versions.

    Warns
    -----
    ModelVersionWarning
        If the model was saved by a different skcrf version.

    See Also
    --------
    save_model : Write a model.
    """
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as handle:
            return _load(handle, str(file), return_metadata)
    if isinstance(file, io.TextIOBase):
        raise TypeError(
            f"{_file_name(file)} is open in text mode; load_model reads bytes: open it "
            f"with mode 'rb'.")
    return _load(file, _file_name(file), return_metadata)


def _load(handle, name, return_metadata):
    header = _read_header(handle, name)
    try:
        model = _Unpickler(handle).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise ValueError(
            f"{name}: the model payload is truncated or corrupt ({error}).") from error
    except (AttributeError, ImportError) as error:
        raise ValueError(
            f"{name} refers to code this environment lacks ({error}); it was saved with "
            f"{_describe(header)}.") from error
    if not return_metadata:
        return model
    metadata = dict(header.get("metadata") or {})
    metadata["saved_with"] = {key: header.get(key)
                              for key in ("format", "skcrf", "sklearn", "numpy", "python")}
    return model, metadata


def _describe(header):
    return (f"skcrf {header.get('skcrf', '?')} (scikit-learn {header.get('sklearn', '?')}, "
            f"numpy {header.get('numpy', '?')})")


def _read_header(handle, name):
    """The parsed header of an open model file; checks magic and format version."""
    magic = handle.read(len(_MAGIC))
    if magic != _MAGIC:
        hint = (" It looks like a plain pickle: load it with pickle.load, or write it "
                "with skcrf's save_model." if magic[:1] == b"\x80" else "")
        raise ValueError(
            f"{name} is not an skcrf model file: it does not start with "
            f"{_MAGIC.decode().strip()!r}.{hint}")
    line = handle.readline(_MAX_HEADER_BYTES)
    try:
        header = json.loads(line.decode("ascii"))
        if not isinstance(header, dict) or not isinstance(header.get("format"), int):
            raise ValueError("no integer 'format' field")
    except ValueError as error:
        raise ValueError(
            f"{name}: the skcrf model header is corrupt ({error}).") from None
    ours = _skcrf_version()
    if header["format"] > FORMAT_VERSION:
        raise ValueError(
            f"{name} was saved by skcrf {header.get('skcrf', '?')} in model format "
            f"{header['format']}; this skcrf {ours} reads model formats up to "
            f"{FORMAT_VERSION}. Upgrade skcrf to load it.")
    if header.get("skcrf") != ours:
        here = _environment()
        warnings.warn(ModelVersionWarning(
            f"{name} was saved with {_describe(header)}; this is skcrf {ours} "
            f"(scikit-learn {here['sklearn']}, numpy {here['numpy']}). Its format "
            f"({header['format']}) is compatible, but predictions may differ: re-save or "
            f"retrain it with this version."), stacklevel=4)
    return header
