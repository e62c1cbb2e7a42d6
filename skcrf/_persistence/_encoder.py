"""Writing the model format: an estimator as a zip of its JSON description and arrays.

See :mod:`._archive` for the format.
"""

import io
import math
import types
import zipfile

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from ._archive import (_BUILTIN_TYPES, _BULK, _OBJECT_ITEM_TYPES, _SCALAR_KINDS,
                       _SPARSE_CLASSES, _TYPE, _dumps, function_reference)
from ._registry import declaration_of, estimator_classes

__all__ = ["model_to_payload"]

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
