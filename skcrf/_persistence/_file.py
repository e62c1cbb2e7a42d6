"""Saving and loading fitted models: a versioned, checksummed header, then the model.

A model file (format 2) is::

    skcrf-model\\n                       the magic line
    {"format": 2, "sha256": ...}\\n     one line of JSON: versions, metadata, checksum
    <payload>                           "size" bytes, see "payload" in the header

The payload is a zip archive of a JSON description and ``.npy`` arrays
(:mod:`skcrf._persistence._archive`; written by ``_encoder``, read by
``_decoder``): loading it runs no code the file chooses. Only
a model that the safe format cannot hold (a Pipeline with steps from other
libraries) is pickled instead, and only when the caller asks for it with
``allow_pickle=True``; loading such a file, or one in the pickle-based format
1 of earlier skcrf versions, needs the same opt-in.

The SHA-256 in the header covers the payload and every header field but the
informational version strings (skcrf, scikit-learn, numpy, Python), so that a
damaged file is refused with a clear message instead of loading as a
different model. The header is read first: a file that is not a model, or
that a newer skcrf wrote in a format this one does not know, is refused with
a message naming both versions.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pickle
import platform
import stat
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._utils.type_aliases import FileLike
from ._archive import function_reference
from ._decoder import model_from_payload
from ._encoder import model_to_payload
from ._registry import estimator_classes

__all__ = ["ModelVersionWarning", "load_model", "save_model"]

_MAGIC = b"skcrf-model\n"

# Bump when the layout of the file changes in a way an older skcrf cannot
# read; a newer skcrf must keep reading every older format.
#   1: the header, then a pickle (skcrf 0.1): read only with allow_pickle=True
#   2: a checksummed header, then a zip of JSON and arrays (or, by request, a pickle)
FORMAT_VERSION = 2
_PICKLE_FORMAT = 1

# Header fields that describe the writer, not the model: left out of the
# checksum, so that changing them cannot make a different model, only a
# different version warning.
_ENVIRONMENT = ("skcrf", "sklearn", "numpy", "python")

# Fixed rather than pickle.HIGHEST_PROTOCOL, so a file written under a newer
# Python stays readable by every Python skcrf supports (protocol 5: 3.8+).
_PROTOCOL = 5

# A header is a few hundred bytes; the bound keeps a binary file that happens to
# start with the magic from being read whole in search of a newline.
_MAX_HEADER_BYTES = 1 << 16

# The payload is read in pieces of this size, so a damaged size field cannot
# make the reader allocate more than the file holds.
_CHUNK = 1 << 24

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


def _check_model(model, allow_pickle):
    """Raise unless ``model`` is a fitted model that ``save_model`` may write."""
    final = model[-1] if isinstance(model, Pipeline) else model
    if not _is_skcrf_estimator(final):
        what = (f"a Pipeline ending in {type(final).__name__}"
                if final is not model else f"a {type(model).__name__}")
        raise TypeError(
            f"save_model saves skcrf estimators and Pipelines ending in one; got {what}. "
            f"(For a search, save its best_estimator_.)")
    if not allow_pickle:
        known = set(estimator_classes().values())
        steps = model.steps if isinstance(model, Pipeline) else []
        for name, step in steps:
            if type(step) not in known and _holds_estimators(step):
                raise TypeError(_holds_other_estimators(f"Pipeline step {name!r}", step))
            if step is not None and step != "passthrough" and type(step) not in known:
                raise TypeError(
                    f"Pipeline step {name!r} is a {type(step).__module__}."
                    f"{type(step).__qualname__}, not an skcrf estimator: the safe model "
                    f"format holds Pipelines made of skcrf steps only. Save such a "
                    f"pipeline with skops (skops.io.dump), or pickle it with "
                    f"save_model(model, file, allow_pickle=True); loading that file then "
                    f"needs allow_pickle=True too, and can run code, so only for files "
                    f"you trust.")
        if (not isinstance(model, Pipeline) and type(model) not in known
                and _holds_estimators(model)):
            raise TypeError(_holds_other_estimators("The model", model))
    check_is_fitted(model)


def _holds_estimators(step):
    """Whether ``step``'s parameters hold estimators (a composition such as SequenceUnion)."""
    if not _is_skcrf_estimator(step):
        return False
    for value in step.get_params(deep=False).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            item = item[-1] if isinstance(item, tuple) and item else item
            if isinstance(item, BaseEstimator):
                return True
    return False


def _holds_other_estimators(what, step):
    """Why the safe format refuses an skcrf step it has no declaration for.

    SequenceUnion and PerTokenTransformer hold whatever transformers the
    user gives them (StandardScaler, PCA, ...): their fitted state is those
    objects' own attributes, which no declaration of skcrf's describes, so a
    file could not be checked attribute by attribute when loaded.
    """
    kind = type(step)
    return (f"{what} is a {kind.__module__}.{kind.__qualname__}, which holds other "
            f"(scikit-learn) estimators whose fitted state the safe model format does not "
            f"declare, so it cannot save it. Save such a pipeline with skops "
            f"(skops.io.dump), or pickle it with save_model(model, file, "
            f"allow_pickle=True); loading that file then needs allow_pickle=True too, and "
            f"can run code, so only for files you trust. Or save the CRF alone and "
            f"rebuild the feature steps from code.")


def save_model(model: BaseEstimator, file: FileLike, *,
               metadata: Mapping[str, Any] | None = None, allow_pickle: bool = False) -> None:
    """Save a fitted skcrf model to a file.

    The file holds a short header (a magic line, then one line of JSON with the
    model format version, the skcrf, scikit-learn, numpy and Python versions,
    ``metadata`` and a SHA-256 checksum) followed by the model: a zip archive
    of a JSON description (classes, parameters, labels, feature names) and
    numpy arrays, which :func:`load_model` reads without running any code
    from the file.

    A path is written atomically: the model goes to a temporary file in the
    same folder, which then replaces ``file``. A failure at any point (a
    model that cannot be saved, a full disk, an interrupt) leaves an existing
    ``file`` as it was and no temporary file behind.

    Parameters
    ----------
    model : estimator
        A fitted :class:`CRFClassifier`, :class:`SemiMarkovCRF`,
        :class:`SequenceVectorizer` or :class:`TokenFeaturizer` (any public
        skcrf estimator), or a fitted :class:`~sklearn.pipeline.Pipeline` of
        them.
    file : str, path-like or binary file object
        Where to write. A path is created or replaced; a file object must be
        open for binary writing and is left open.
    metadata : dict, default=None
        JSON-serializable information to keep beside the model, such as how
        its input files are laid out; :func:`load_model` returns it with
        ``return_metadata=True``.
    allow_pickle : bool, default=False
        Pickle the model instead. Needed only for a Pipeline with steps from
        other libraries, which the safe format cannot hold (skops is another
        way to save those). Loading such a file needs ``allow_pickle=True``
        too and can run arbitrary code: keep it for files you trust.

    Raises
    ------
    TypeError
        If ``model`` is not an skcrf estimator or a Pipeline of them (ending
        in one, with ``allow_pickle=True``), if something in it cannot be
        stored (a lambda as ``custom``, say: the message names its place), if
        ``metadata`` is not JSON-serializable, or if ``file`` is a text-mode
        file.
    sklearn.exceptions.NotFittedError
        If ``model`` is not fitted.

    See Also
    --------
    load_model : Read the model back.

    Notes
    -----
    A function in the model (:class:`TokenFeaturizer`'s ``custom``) is saved
    as a reference, its module and name, not as code, so it must be defined
    at module level; :func:`load_model` needs it passed in ``functions``.

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
    _check_model(model, allow_pickle)
    if not isinstance(file, (str, os.PathLike)):
        _check_binary(file)
    payload = _pickled(model) if allow_pickle else model_to_payload(model)
    header = {"format": FORMAT_VERSION, **_environment(), "model": type(model).__name__,
              "metadata": {} if metadata is None else metadata,
              "payload": {"encoding": "pickle" if allow_pickle else "npz",
                          "size": len(payload)}}
    try:
        header["sha256"] = _checksum(header, payload)
        header_line = json.dumps(header, ensure_ascii=True, sort_keys=True).encode("ascii")
    except (TypeError, ValueError) as error:
        raise TypeError(f"metadata must be JSON-serializable: {error}") from None
    if len(header_line) >= _MAX_HEADER_BYTES:
        raise ValueError(
            f"metadata is too large for the header ({len(header_line)} bytes; at most "
            f"{_MAX_HEADER_BYTES - 1}); keep large objects in the model itself.")
    parts = (_MAGIC, header_line + b"\n", payload)
    if isinstance(file, (str, os.PathLike)):
        _write_atomically(Path(file), parts)
    else:
        for part in parts:
            file.write(part)


def _checksum(header, payload):
    """SHA-256 (hex) of the payload and of the header fields that are not versions."""
    covered = {key: value for key, value in header.items()
               if key not in _ENVIRONMENT and key != "sha256"}
    # the canonical form, not the line as written: a reader re-derives it from
    # the parsed header
    digest = hashlib.sha256(json.dumps(covered, ensure_ascii=True, sort_keys=True,
                                       separators=(",", ":"), allow_nan=False).encode())
    digest.update(b"\n")
    digest.update(payload)
    return digest.hexdigest()


def _write_atomically(path, parts):
    """Write ``parts`` to a new file beside ``path``, then move it over ``path``."""
    # replace the file a link points to, not the link
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    # os.open with 0o666 lets the umask set the mode, as open(path, "wb") does
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with open(descriptor, "wb") as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            # a replaced model keeps its permissions
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            pass
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
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


def load_model(file: FileLike, *, return_metadata: bool = False, allow_pickle: bool = False,
               functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]]
               | None = None) -> BaseEstimator | tuple[BaseEstimator, dict[str, Any]]:
    """Load a model written by :func:`save_model`, running no code from the file.

    The header is checked first: a file that is not an skcrf model, or whose
    format is newer than this skcrf reads, is refused. Then the checksum: a
    damaged or truncated file is refused rather than loaded as a different
    model. The model is rebuilt from JSON and numpy arrays (read with
    ``allow_pickle=False``); its classes must be skcrf estimators or
    scikit-learn's Pipeline, and no module named by the file is imported.
    A model saved by another skcrf version in a format this one reads loads
    with a :class:`ModelVersionWarning`.

    Parameters
    ----------
    file : str, path-like or binary file object
        The model file; a file object must be open for binary reading,
        positioned at the start of the model, and is left open.
    return_metadata : bool, default=False
        Also return the ``metadata`` given to :func:`save_model`.
    allow_pickle : bool, default=False
        Also load pickled models: files of skcrf 0.1 (model format 1) and
        files saved with ``save_model(..., allow_pickle=True)``; and import
        the functions the model refers to. Unpickling can run arbitrary
        code, so only pass True for a file you trust, such as one you saved
        yourself. Loading a pickle-based file warns; re-save it with
        :func:`save_model` to convert it to the safe format.
    functions : list of callable or dict of str to callable, default=None
        The functions the model refers to, such as the ``custom`` function of
        a :class:`TokenFeaturizer`, matched by module and name (or given as
        ``{"module:name": function}``). They are used as given: nothing is
        imported.

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
        If ``file`` is not an skcrf model; if its header, checksum or content
        is damaged or it is truncated; if its format is newer than this skcrf
        reads; if it holds a pickle and ``allow_pickle`` is False; or if it
        refers to a function not in ``functions``. The message names the
        file and what to do.

    Warns
    -----
    ModelVersionWarning
        If the model was saved by a different skcrf version.
    UserWarning
        If a pickle-based file is loaded (with ``allow_pickle=True``).

    See Also
    --------
    save_model : Write a model.
    """
    functions = _function_table(functions)
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as handle:
            model, header = _load(handle, str(file), allow_pickle, functions)
    elif isinstance(file, io.TextIOBase):
        raise TypeError(
            f"{_file_name(file)} is open in text mode; load_model reads bytes: open it "
            f"with mode 'rb'.")
    else:
        model, header = _load(file, _file_name(file), allow_pickle, functions)
    if not return_metadata:
        return model
    metadata = dict(header.get("metadata") or {})
    metadata["saved_with"] = {key: header.get(key) for key in ("format", *_ENVIRONMENT)}
    return model, metadata


def _function_table(functions):
    """``functions`` as a dict from ``"module:qualname"`` to the function."""
    if functions is None:
        return {}
    if isinstance(functions, dict):
        return dict(functions)
    table = {}
    for function in functions:
        reference = function_reference(function)
        if reference is None:
            raise TypeError(
                f"functions must hold module-level functions (or be a dict from "
                f"'module:name' to function); got {function!r}.")
        table[reference] = function
    return table


# load_model -> _load -> warnings.warn: the warning points at load_model's caller
_STACKLEVEL = 3


def _load(handle, name, allow_pickle, functions):
    """The model and the header of an open model file."""
    header = _read_header(handle, name)
    if header["format"] == _PICKLE_FORMAT:
        _check_pickle_allowed(name, header, allow_pickle)
        _warn_version(name, header)
        return _unpickled(handle, name, header), header
    payload_info = header.get("payload")
    if not (isinstance(payload_info, dict) and type(payload_info.get("size")) is int
            and payload_info["size"] >= 0 and isinstance(header.get("sha256"), str)):
        raise ValueError(
            f"{name}: the skcrf model header is corrupt (no payload size or checksum).")
    payload = _read_payload(handle, payload_info["size"], name)
    try:
        expected = _checksum(header, payload)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: the skcrf model header is corrupt ({error}).") from None
    if not hmac.compare_digest(expected, header["sha256"]):
        raise ValueError(
            f"{name} is damaged: its SHA-256 checksum does not match its content, so it "
            f"was changed or corrupted after it was saved. Restore it from a copy or save "
            f"the model again.")
    encoding = payload_info.get("encoding")
    if encoding == "pickle":
        _check_pickle_allowed(name, header, allow_pickle)
        _warn_version(name, header)
        return _unpickled(io.BytesIO(payload), name, header), header
    if encoding != "npz":
        raise ValueError(f"{name}: unknown model payload encoding {encoding!r}.")
    _warn_version(name, header)
    try:
        model = model_from_payload(payload, functions=functions,
                                   import_functions=allow_pickle)
    except ValueError as error:
        raise ValueError(f"{name}: cannot load the model: {error}") from None
    except MemoryError:
        # every array's size is checked against the bytes it holds: only a model
        # too large for this machine gets here
        raise ValueError(f"{name}: cannot load the model: it needs more memory than there "
                         f"is.") from None
    return model, header


def _read_payload(handle, size, name):
    chunks, remaining = [], size
    while remaining:
        chunk = handle.read(min(remaining, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    if remaining:
        raise ValueError(
            f"{name} is truncated: its header announces a {size}-byte model, but only "
            f"{size - remaining} bytes follow.")
    return b"".join(chunks)


def _check_pickle_allowed(name, header, allow_pickle):
    saved = (f"skcrf {header.get('skcrf', '?')}'s pickle-based model format 1"
             if header["format"] == _PICKLE_FORMAT
             else "a pickle (save_model(..., allow_pickle=True))")
    if not allow_pickle:
        raise ValueError(
            f"{name} holds a model saved as {saved}. Loading it would unpickle it, which "
            f"can run any code the file holds. If you trust the file, load it with "
            f"load_model(file, allow_pickle=True), then save it again with save_model to "
            f"get a file that loads safely.")
    warnings.warn(
        f"{name} holds a model saved as {saved}; unpickling it can run arbitrary code "
        f"(allowed by allow_pickle=True). Save it again with save_model to get a file "
        f"that loads safely.", UserWarning, stacklevel=_STACKLEVEL + 1)


def _unpickled(handle, name, header):
    try:
        return _Unpickler(handle).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise ValueError(
            f"{name}: the model payload is truncated or corrupt ({error}).") from error
    except (AttributeError, ImportError) as error:
        raise ValueError(
            f"{name} refers to code this environment lacks ({error}); it was saved with "
            f"{_describe(header)}.") from error


def _describe(header):
    return (f"skcrf {header.get('skcrf', '?')} (scikit-learn {header.get('sklearn', '?')}, "
            f"numpy {header.get('numpy', '?')})")


def _warn_version(name, header):
    ours = _skcrf_version()
    if header.get("skcrf") != ours:
        here = _environment()
        warnings.warn(ModelVersionWarning(
            f"{name} was saved with {_describe(header)}; this is skcrf {ours} "
            f"(scikit-learn {here['sklearn']}, numpy {here['numpy']}). Its format "
            f"({header['format']}) is compatible, but predictions may differ: re-save or "
            f"retrain it with this version."), stacklevel=_STACKLEVEL + 1)


def _read_header(handle, name):
    """The parsed header of an open model file; checks magic and format version."""
    magic = handle.read(len(_MAGIC))
    if magic != _MAGIC:
        hint = (" It looks like a plain pickle: load it with pickle.load if you trust "
                "it, or write it with skcrf's save_model." if magic[:1] == b"\x80" else "")
        raise ValueError(
            f"{name} is not an skcrf model file: it does not start with "
            f"{_MAGIC.decode().strip()!r}.{hint}")
    line = handle.readline(_MAX_HEADER_BYTES)
    try:
        if not line.endswith(b"\n"):
            raise ValueError("no end of line")
        header = json.loads(line.decode("ascii"))
        if not isinstance(header, dict) or type(header.get("format")) is not int:
            raise ValueError("no integer 'format' field")
    except (ValueError, RecursionError) as error:
        raise ValueError(
            f"{name}: the skcrf model header is corrupt ({error}).") from None
    if header["format"] > FORMAT_VERSION:
        raise ValueError(
            f"{name} was saved by skcrf {header.get('skcrf', '?')} in model format "
            f"{header['format']}; this skcrf {_skcrf_version()} reads model formats up to "
            f"{FORMAT_VERSION}. Upgrade skcrf to load it.")
    if header["format"] < _PICKLE_FORMAT:
        raise ValueError(
            f"{name}: the skcrf model header is corrupt (format {header['format']}).")
    return header
