"""The safe model format: estimators as a JSON description plus numpy arrays, and back.

Loading a model file must run no code that the file chooses, so nothing here
unpickles. A fitted estimator is written generically, with no per-class code,
so that every estimator skcrf adds later is covered as soon as it is public:

- an estimator becomes ``{"$type": "estimator", "class": "skcrf.CRFClassifier",
  "params": {...}, "attributes": {...}}``: its ``get_params(deep=False)`` and
  the rest of its ``__dict__`` (fitted attributes and private caches). On
  loading, the class is looked up by that name in the allow-list the
  estimators' modules fill (:mod:`._registry`) and built as ``cls(**params)``;
  no module named by the file is ever imported. Only the attributes the
  class declares (:mod:`skcrf._fitted_state`) may be set, and the loaded
  estimator must pass its declaration's check (shapes, dtypes, index ranges)
  before anything reads it;
- numbers, str, bool and None are JSON values; tuples, dicts, sets, numpy
  scalars, dtypes, non-finite floats and scipy sparse matrices are small
  tagged JSON objects;
- arrays are ``.npy`` members of a zip archive, each read once, with
  ``allow_pickle=False``, after checking that its header's shape and dtype
  are what the member holds; arrays of Python objects (such as
  feature names) are described in the JSON instead, their strings kept once
  in a shared string table. An array met twice (CRFClassifier's
  ``feature_names_`` is its vectorizer's) is stored once and comes back as
  one array, as with pickle;
- a function (TokenFeaturizer's ``custom``) is stored as the reference
  ``"module:qualname"`` and is never imported unless the caller allows it.

The archive (the payload of a model file) holds ``model.json`` (the
description), ``strings.json`` (the string table) and ``a<k>.npy`` members.
"""

import importlib
import io
import json
import math
import re
import struct
import sys
import types
import zipfile

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from ._registry import declaration_of, estimator_classes, model_class

__all__ = ["estimator_classes", "function_reference", "model_from_payload", "model_to_payload"]

_TYPE = "$type"

# Lists at least this long whose items are all str, all int or all float are
# stored as one array, not as JSON items; shorter ones stay readable in the JSON.
_BULK = 32

_SPARSE_CLASSES = {cls.__name__: cls for cls in (
    sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array)}

_BUILTIN_TYPES = {cls.__name__: cls for cls in (bool, int, float, complex, str)}

# what an array of Python objects may hold (and numpy scalars)
_OBJECT_ITEM_TYPES = frozenset({str, int, float, bool, complex, type(None)})

_SCALAR_KINDS = "biufcU"  # numpy scalars stored by value: bool, ints, floats, complex, str

_MEMBER = re.compile(r"a\d+\.npy\Z")

_JSON_MEMBERS = ("model.json", "strings.json")

# scikit-learn's own bookkeeping on an estimator (set_output's and metadata
# routing's settings, the version pickle records): not the model, not saved
_SKLEARN_SETTINGS = ("_sklearn_", "_metadata_request")


def model_to_payload(model):
    """The zip archive that describes ``model``, as bytes.

    Raises
    ------
    TypeError
        If something in ``model`` cannot be stored safely; the message gives
        its place, such as ``Pipeline.steps[0][1].custom``.
    """
    encoder = _Encoder()
    tree = {"model": encoder.encode(model, type(model).__name__),
            "arrays": encoder.array_specs}
    buffer = io.BytesIO()
    # stored, not deflated: loading reads members at their size, and a
    # reader can refuse any compressed member (no zip bombs)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_member("model.json"), _dumps(tree))
        archive.writestr(_member("strings.json"), _dumps(list(encoder.strings)))
        for ref, array in encoder.npy.items():
            with archive.open(_member(f"{ref}.npy"), "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return buffer.getvalue()


def _member(name):
    # a fixed date, so that saving one model twice gives the same bytes
    return zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))


def model_from_payload(payload, *, functions=None, import_functions=False):
    """The estimator described by the archive ``payload``; runs no code from it.

    Parameters
    ----------
    payload : bytes
        What :func:`model_to_payload` returned.
    functions : dict of str to callable, default=None
        The functions that references ``"module:qualname"`` may resolve to.
    import_functions : bool, default=False
        Whether a reference missing from ``functions`` may be imported.

    Raises
    ------
    ValueError
        If the archive or its description is invalid, names a class outside
        :func:`estimator_classes`, or refers to a function it may not resolve.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
        for info in archive.infolist():
            if info.filename not in _JSON_MEMBERS and not _MEMBER.match(info.filename):
                raise ValueError(f"unexpected member {info.filename!r}")
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"member {info.filename!r} is compressed")
        tree = _loads(archive.read("model.json"))
        strings = _loads(archive.read("strings.json"))
    except (ValueError, MemoryError, *_ARCHIVE_ERRORS) as error:
        raise ValueError(f"the model archive is invalid ({type(error).__name__}: "
                         f"{error})") from None
    if not (isinstance(strings, list) and set(map(type, strings)) <= {str}):
        raise ValueError("the model archive's string table is not a list of str")
    if not (isinstance(tree, dict) and isinstance(tree.get("arrays"), dict)):
        raise ValueError("the model description has no 'arrays' table")
    decoder = _Decoder(tree["arrays"], _Members(archive), strings, functions or {},
                       import_functions)
    with archive:
        return decoder.decode(tree.get("model"), "model")


# What reading a damaged archive raises besides ValueError: zipfile checks each
# member's CRC and sizes as it reads it.
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, OSError,
                   RecursionError, UnicodeDecodeError, NotImplementedError, OverflowError,
                   struct.error)


class _Members:
    """The ``.npy`` members of an archive, each read on request, its header checked first."""

    def __init__(self, archive):
        self.archive = archive
        self.infos = {info.filename: info for info in archive.infolist()}

    def __contains__(self, ref):
        return f"{ref}.npy" in self.infos

    def array(self, ref):
        """The array of member ``ref.npy``; ValueError if its header lies about its size.

        A header may declare any shape: the bytes the member holds must be
        what that shape and dtype take, so a damaged or hostile header cannot
        make the reader allocate more than the file holds.
        """
        data = self.archive.read(self.infos[f"{ref}.npy"])  # checks the CRC
        handle = io.BytesIO(data)
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f".npy format version {version} is not one skcrf writes")
        if dtype.hasobject:
            raise ValueError("it holds Python objects")
        count = math.prod(shape)
        held = len(data) - handle.tell()
        if count * dtype.itemsize != held or (count and not dtype.itemsize):
            raise ValueError(
                f"its header declares an array of shape {shape} and dtype {dtype} "
                f"({count * dtype.itemsize} bytes), but it holds {held} bytes")
        handle.seek(0)
        return np.lib.format.read_array(handle, allow_pickle=False)


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def _loads(data):
    def refuse(constant):
        raise ValueError(f"JSON constant {constant} is not allowed")

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def function_reference(function):
    """``"module:qualname"`` of a function importable under that name, else None."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}:{qualname}" if found is function else None


class _Encoder:
    """Walks an estimator, collecting arrays and strings; ``encode`` gives its JSON."""

    def __init__(self):
        self.npy = {}          # ref -> array written as the member ref.npy
        self.array_specs = {}  # ref -> how to rebuild the array
        self.strings = {}      # str -> its index in the string table
        self._refs = {}        # id(array) -> (ref, array): one entry per array object
        self._active = set()   # ids of the containers being encoded, to refuse cycles
        self._classes = {cls: name for name, cls in estimator_classes().items()}

    def encode(self, obj, path):
        kind = type(obj)
        if obj is None or kind in (bool, int, str):
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {_TYPE: "float", "value": repr(obj)}
        if kind is complex:
            return {_TYPE: "complex", "value": [self.encode(obj.real, path),
                                                 self.encode(obj.imag, path)]}
        if isinstance(obj, np.ndarray):
            return {_TYPE: "ndarray", "ref": self._array(obj, path)}
        if isinstance(obj, np.generic):
            return self._scalar(obj, path)
        if sp.issparse(obj):
            return self._sparse(obj, path)
        if kind in (list, tuple, dict, set, frozenset) or isinstance(obj, BaseEstimator):
            if id(obj) in self._active:
                raise TypeError(f"{path} contains itself; a model must be a tree.")
            self._active.add(id(obj))
            try:
                return self._container(obj, path)
            finally:
                self._active.discard(id(obj))
        if isinstance(obj, np.dtype) and not obj.hasobject and obj.fields is None:
            return {_TYPE: "dtype", "dtype": obj.str}
        if isinstance(obj, type):
            return self._type(obj, path)
        if callable(obj):
            return self._function(obj, path)
        raise TypeError(
            f"{path} is a {kind.__module__}.{kind.__qualname__}, which the model format "
            f"cannot store safely.")

    def _container(self, obj, path):
        kind = type(obj)
        if kind is list:
            return self._items(obj, path)
        if kind is tuple:
            return {_TYPE: "tuple", "items": self._items(obj, path)}
        if kind is dict:
            return {_TYPE: "dict", "keys": self._items(list(obj), f"{path}.keys()"),
                    "values": self._items(list(obj.values()), path, list(obj))}
        if kind in (set, frozenset):
            return {_TYPE: kind.__name__, "items": self._items(list(obj), path)}
        return self._estimator(obj, path)

    def _items(self, items, path, keys=None):
        """A list node: JSON items, or one array for a long homogeneous list.

        ``keys`` name the items in messages (a dict's keys), else their index.
        """
        if len(items) >= _BULK:
            kinds = set(map(type, items))
            if kinds == {str}:
                return {_TYPE: "str_list", "ids": self._string_ids(items)}
            if kinds == {float}:
                return {_TYPE: "float_list", "ref": self._new_array(
                    np.array(items, dtype=np.float64))}
            if kinds == {int}:
                try:
                    values = np.array(items, dtype=np.int64)
                except OverflowError:
                    pass  # beyond int64: JSON holds any int
                else:
                    return {_TYPE: "int_list", "ref": self._new_array(values)}
        keys = range(len(items)) if keys is None else keys
        return [self.encode(item, f"{path}[{key!r}]") for key, item in zip(keys, items)]

    def _string_ids(self, items):
        table = self.strings
        # dict.fromkeys and map run in C: a vocabulary's names are met up to
        # four times (names list, vocabulary keys, name arrays)
        new = [item for item in dict.fromkeys(items) if item not in table]
        table.update(zip(new, range(len(table), len(table) + len(new))))
        dtype = np.int32 if len(table) < 2**31 else np.int64
        return self._new_array(np.fromiter(map(table.__getitem__, items), dtype=dtype,
                                           count=len(items)))

    def _new_array(self, array):
        ref = f"a{len(self.array_specs)}"
        self.array_specs[ref] = {"kind": "npy"}
        self.npy[ref] = array
        return ref

    def _array(self, array, path):
        known = self._refs.get(id(array))
        if known is not None:
            return known[0]
        if array.dtype.hasobject:
            if array.dtype != object:
                raise TypeError(f"{path} is an array of records holding objects; the "
                                f"model format cannot store it.")
            items = array.ravel().tolist()
            if not set(map(type, items)) <= _OBJECT_ITEM_TYPES:
                for i, item in enumerate(items):
                    if not (type(item) in _OBJECT_ITEM_TYPES or isinstance(item, np.generic)):
                        raise TypeError(
                            f"{path}[{i}] is a {type(item).__name__}; the model format "
                            f"stores arrays of str, numbers, bool and None only.")
            ref = f"a{len(self.array_specs)}"
            self.array_specs[ref] = {"kind": "object", "shape": list(array.shape),
                                     "items": self._items(items, path)}
        else:
            ref = self._new_array(array)
        if not array.flags.writeable:
            self.array_specs[ref]["readonly"] = True
        # keep the array alive so that its id is not reused by another object
        self._refs[id(array)] = (ref, array)
        return ref

    def _scalar(self, obj, path):
        if obj.dtype.kind not in _SCALAR_KINDS:
            raise TypeError(f"{path} is a numpy {obj.dtype} scalar, which the model format "
                            f"cannot store.")
        return {_TYPE: "scalar", "dtype": obj.dtype.str, "value": self.encode(obj.item(), path)}

    def _sparse(self, obj, path):
        name = type(obj).__name__
        if _SPARSE_CLASSES.get(name) is not type(obj):
            raise TypeError(f"{path} is a scipy.sparse {name}; the model format stores CSR "
                            f"and CSC matrices and arrays: convert it with .tocsr().")
        return {_TYPE: "sparse", "class": name, "shape": list(obj.shape),
                **{part: self._array(getattr(obj, part), f"{path}.{part}")
                   for part in ("data", "indices", "indptr")}}

    def _type(self, obj, path):
        if _BUILTIN_TYPES.get(obj.__name__) is obj:
            return {_TYPE: "builtin_type", "name": obj.__name__}
        if issubclass(obj, np.generic):
            try:
                if np.dtype(obj).type is obj and not np.dtype(obj).hasobject:
                    return {_TYPE: "numpy_type", "dtype": np.dtype(obj).str}
            except TypeError:
                pass
        raise TypeError(f"{path} is the class {obj.__module__}.{obj.__qualname__}; the model "
                        f"format stores numpy scalar types and bool, int, float, complex "
                        f"and str only.")

    def _function(self, obj, path):
        reference = (function_reference(obj)
                     if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))
                     else None)
        if reference is None:
            raise TypeError(
                f"{path} is {obj!r}, which cannot be saved: the model format stores a "
                f"function as a reference to a module-level function ('module:name'), "
                f"not a lambda, a local function or another callable object. Define it "
                f"at module level.")
        return {_TYPE: "function", "ref": reference}

    def _estimator(self, obj, path):
        name = self._classes.get(type(obj))
        if name is None:
            kind = type(obj)
            raise TypeError(
                f"{path} is a {kind.__module__}.{kind.__qualname__}; the model format "
                f"stores skcrf estimators and Pipelines of them only.")
        declaration = declaration_of(type(obj))
        params = obj.get_params(deep=False)
        # where fit writes (compat.CRF's model_filename) is no part of the model
        params.update(dict.fromkeys(declaration.unsaved_params, None))
        attributes = {key: value for key, value in vars(obj).items()
                      if key not in params and not key.startswith(_SKLEARN_SETTINGS)}
        undeclared = sorted(set(attributes) - declaration.attribute_names)
        if undeclared:
            # loading would refuse it: only declared attributes load
            raise TypeError(
                f"{path}.{undeclared[0]} is not part of a fitted {type(obj).__name__}, so "
                f"the model format does not store it; delete it (del "
                f"model.{undeclared[0]}), or keep it in save_model's metadata.")
        return {_TYPE: "estimator", "class": name,
                "params": {key: self.encode(value, f"{path}.{key}")
                           for key, value in params.items()},
                "attributes": {key: self.encode(value, f"{path}.{key}")
                               for key, value in attributes.items()}}


# the node types a description may hold, each decoded by the _Decoder method
# of the same name with a leading underscore
_NODE_TYPES = frozenset({
    "float", "complex", "tuple", "set", "frozenset", "dict", "str_list", "int_list", "float_list",
    "ndarray", "scalar", "dtype", "numpy_type", "builtin_type", "sparse", "function",
    "estimator"})


class _Invalid(ValueError):
    """The description is wrong at a place; the message names it."""


class _Decoder:
    """Rebuilds what :class:`_Encoder` described, from JSON, arrays and strings only."""

    def __init__(self, array_specs, arrays, strings, functions, import_functions):
        self.array_specs = array_specs
        self.arrays = arrays
        self.strings = strings
        self.string_table = None  # object array of ``strings``, built on first use
        self.functions = functions
        self.import_functions = import_functions
        self.built = {}  # ref -> array, so an array stored once is one object again
        self.read = {}  # ref -> the array of member ref.npy, read once
        self.claims = {}  # ref -> "list" or "array": what uses the member

    def decode(self, node, path):
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self.decode(item, f"{path}[{i}]") for i, item in enumerate(node)]
        if type(node) is not dict:
            raise _Invalid(f"at {path}: unexpected {type(node).__name__}")
        kind = node.get(_TYPE)
        if kind not in _NODE_TYPES:
            raise _Invalid(f"at {path}: unknown node type {kind!r}")
        handler = getattr(self, f"_{kind}")
        try:
            return handler(node, path)
        except _Invalid:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError,
                OverflowError, RecursionError) as error:
            raise _Invalid(f"at {path}: {type(error).__name__}: {error}") from None

    def _list(self, node, path):
        items = self.decode(node, path)
        if type(items) is not list:
            raise _Invalid(f"at {path}: expected a list")
        return items

    def _float(self, node, path):
        value = node["value"]
        if value not in ("nan", "inf", "-inf"):
            raise _Invalid(f"at {path}: {value!r} is not a non-finite float")
        return float(value)

    def _complex(self, node, path):
        real, imag = self._list(node["value"], path)
        if not (type(real) is float and type(imag) is float):
            raise _Invalid(f"at {path}: a complex number needs two floats")
        return complex(real, imag)

    def _tuple(self, node, path):
        return tuple(self._list(node["items"], path))

    def _set(self, node, path):
        return set(self._list(node["items"], path))

    def _frozenset(self, node, path):
        return frozenset(self._list(node["items"], path))

    def _dict(self, node, path):
        keys = self._list(node["keys"], f"{path}.keys()")
        values = self._list(node["values"], path)
        if len(keys) != len(values):
            raise _Invalid(f"at {path}: {len(keys)} keys but {len(values)} values")
        return dict(zip(keys, values))

    def _str_list(self, node, path):
        return self._strings_at(node["ids"], path).tolist()

    def _int_list(self, node, path):
        return self._npy(node["ref"], path, kinds="iu").tolist()

    def _float_list(self, node, path):
        return self._npy(node["ref"], path, kinds="f").tolist()

    def _strings_at(self, ref, path):
        ids = self._npy(ref, path, kinds="iu")
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.strings)):
            raise _Invalid(f"at {path}: string ids outside the table")
        if self.string_table is None:
            self.string_table = np.empty(len(self.strings), dtype=object)
            self.string_table[:] = self.strings
        return self.string_table[ids]

    def _npy(self, ref, path, kinds=None, claim="list"):
        """The array of member ``ref.npy``, read once.

        A list node (``claim="list"``) becomes a Python list of its own, so a
        member may serve one list node only: a file that pointed a hundred
        nodes at one large member would otherwise make a hundred lists of it.
        Array nodes of one member share the array (``claim="array"``).
        """
        if not (isinstance(ref, str) and _MEMBER.match(f"{ref}.npy")):
            raise _Invalid(f"at {path}: bad array reference {ref!r}")
        if ref not in self.arrays:
            raise _Invalid(f"at {path}: the archive has no array {ref!r}")
        claimed = self.claims.get(ref)
        if claimed is not None and (claimed == "list" or claim == "list"):
            raise _Invalid(f"at {path}: array {ref} is used twice, once as a list")
        self.claims[ref] = claim
        array = self.read.get(ref)
        if array is None:
            try:
                array = self.read[ref] = self.arrays.array(ref)
            except (ValueError, MemoryError, *_ARCHIVE_ERRORS) as error:
                raise _Invalid(f"at {path}: member {ref}.npy is unreadable "
                               f"({type(error).__name__}: {error})") from None
        if kinds is not None and (array.ndim != 1 or array.dtype.kind not in kinds):
            raise _Invalid(f"at {path}: array {ref} has dtype {array.dtype} and "
                           f"{array.ndim} dimensions")
        return array

    def _ndarray(self, node, path):
        ref = node["ref"]
        if ref in self.built:
            return self.built[ref]
        spec = self.array_specs.get(ref) if isinstance(ref, str) else None
        if not isinstance(spec, dict):
            raise _Invalid(f"at {path}: no array {ref!r} in the arrays table")
        if spec.get("kind") == "npy":
            array = self._npy(ref, path, claim="array")
        elif spec.get("kind") == "object":
            array = self._object_array(spec, path)
        else:
            raise _Invalid(f"at {path}: array {ref!r} has unknown kind {spec.get('kind')!r}")
        if spec.get("readonly"):
            array.flags.writeable = False
        self.built[ref] = array
        return array

    def _object_array(self, spec, path):
        shape = tuple(spec["shape"])
        items = spec["items"]
        if type(items) is dict and items.get(_TYPE) == "str_list":
            flat = self._strings_at(items["ids"], path)
        else:
            values = self._list(items, path)
            flat = np.empty(len(values), dtype=object)
            for i, value in enumerate(values):
                if isinstance(value, (list, tuple, dict, set, frozenset, np.ndarray)):
                    raise _Invalid(f"at {path}[{i}]: an object array item must be a scalar")
                flat[i] = value
        return flat.reshape(shape)

    def _dtype_of(self, node, path, kinds):
        if not isinstance(node["dtype"], str):
            raise _Invalid(f"at {path}: a dtype must be given as a str")
        dtype = np.dtype(node["dtype"])
        if dtype.hasobject or dtype.kind not in kinds:
            raise _Invalid(f"at {path}: dtype {dtype} is not allowed here")
        return dtype

    def _scalar(self, node, path):
        dtype = self._dtype_of(node, path, _SCALAR_KINDS)
        value = self.decode(node["value"], path)
        if type(value) not in (bool, int, float, complex, str):
            raise _Invalid(f"at {path}: a {dtype} scalar cannot hold {value!r}")
        return dtype.type(value)

    def _dtype(self, node, path):
        return self._dtype_of(node, path, "biufcmMSU")

    def _numpy_type(self, node, path):
        return self._dtype_of(node, path, "biufcmMSU").type

    def _builtin_type(self, node, path):
        try:
            return _BUILTIN_TYPES[node["name"]]
        except KeyError:
            raise _Invalid(f"at {path}: {node.get('name')!r} is not an allowed type") from None

    def _sparse(self, node, path):
        cls = _SPARSE_CLASSES.get(node["class"])
        if cls is None:
            raise _Invalid(f"at {path}: {node['class']!r} is not an allowed sparse class")
        data, indices, indptr = (self._ndarray({"ref": node[part]}, f"{path}.{part}")
                                 for part in ("data", "indices", "indptr"))
        shape = tuple(int(n) for n in node["shape"])
        matrix = cls((data, indices, indptr), shape=shape)
        # scipy may pick another index dtype; the saved one is what fit produced
        matrix.indices, matrix.indptr = indices, indptr
        matrix.check_format(full_check=True)  # indices in range, indptr consistent
        return matrix

    def _function(self, node, path):
        reference = node["ref"]
        if reference in self.functions:
            return self.functions[reference]
        module, _, qualname = reference.partition(":")
        if not self.import_functions:
            raise _Invalid(
                f"{path} is the function {reference!r}; skcrf does not import code named "
                f"by a model file. Pass the function: load_model(file, functions=["
                f"{qualname.rsplit('.', 1)[-1]}]), or allow_pickle=True to import it if "
                f"you trust the file.")
        try:
            found = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as error:
            raise _Invalid(f"{path} is the function {reference!r}, which cannot be "
                           f"imported here ({error}).") from None
        if not callable(found):
            raise _Invalid(f"{path}: {reference!r} is not callable")
        return found

    def _estimator(self, node, path):
        name = node["class"]
        found = model_class(name) if isinstance(name, str) else None
        if found is None:
            raise _Invalid(f"at {path}: {name!r} is not an skcrf estimator class this skcrf "
                           f"knows")
        cls, declaration = found
        params, attributes = node["params"], node["attributes"]
        if not (isinstance(params, dict) and isinstance(attributes, dict)):
            raise _Invalid(f"at {path}: params and attributes must be JSON objects")
        params = {key: self.decode(value, f"{path}.{key}") for key, value in params.items()
                  if key not in declaration.unsaved_params}
        try:
            estimator = cls(**params)
        except TypeError as error:
            raise _Invalid(f"at {path}: {cls.__name__} does not take these parameters "
                           f"({error})") from None
        state = vars(estimator)
        for key, value in attributes.items():
            value = self.decode(value, f"{path}.{key}")
            # only what the class declares: a file cannot shadow a method
            if key not in declaration.attribute_names:
                raise _Invalid(f"at {path}: {key!r} is not an attribute of a fitted "
                               f"{cls.__name__}")
            state[key] = value
        try:
            declaration.check(estimator)
        except ValueError as error:
            raise _Invalid(f"at {path}: {error}") from None
        return estimator
