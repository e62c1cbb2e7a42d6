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
  class declares (:mod:`skcrf._estimators.fitted_state`) may be set, and the loaded
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
This module holds what both directions share: the node types and members'
names; ``_encoder.py`` writes an archive (:func:`model_to_payload`),
``_decoder.py`` reads one (:func:`model_from_payload`).
"""

import json
import re
import sys

import scipy.sparse as sp

__all__ = ["function_reference"]

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



# the node types a description may hold, each decoded by the _Decoder method
# of the same name with a leading underscore
_NODE_TYPES = frozenset({
    "float", "complex", "tuple", "set", "frozenset", "dict", "str_list", "int_list", "float_list",
    "ndarray", "scalar", "dtype", "numpy_type", "builtin_type", "sparse", "function",
    "estimator"})


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
