"""Reading the model format: the estimator an archive describes, running no code from it.

See :mod:`._archive` for the format. Every array's size is checked against
the bytes it holds before it is read, each member is read once, and every
estimator is checked against its class's declared fitted state
(:mod:`skcrf._estimators.fitted_state`) before anything uses it.
"""

import importlib
import io
import math
import struct
import zipfile

import numpy as np

from ._archive import (_BUILTIN_TYPES, _JSON_MEMBERS, _MEMBER, _NODE_TYPES, _SCALAR_KINDS,
                       _SPARSE_CLASSES, _TYPE, _loads)
from ._registry import model_class

__all__ = ["model_from_payload"]


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
