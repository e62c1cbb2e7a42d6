"""What a fitted estimator's state must look like: declared once per class, checked at load.

The numba kernels index without bounds checks, so a model file whose
arrays disagree with each other (a ``coef_`` cut to one row, a vocabulary
index of ``10**9``, a sparse matrix whose ``indptr`` runs past its data)
would make them read or write outside an array, even with a valid
checksum: the checksum only detects accidents. So every class that
:func:`skcrf.load_model` may build declares its fitted state in one
:class:`FittedState`, a class attribute ``_fitted_state``:

- each fitted attribute with its kind, its shape in named dimensions
  (``Array(("n_classes", "n_features"))``), its dtype and its values
  (finite, ``-inf`` allowed, an index range...); a dimension takes its size
  from the first attribute that has it, in declaration order, so the
  attributes that define sizes (``classes_``, ``n_features_in_``) come first;
- the relations that shapes cannot say (``rules``): ``-inf`` transitions
  exactly where ``allowed_transitions_`` says False, a vectorizer whose
  width is ``n_features_in_``, the tags a segment model writes...;
- how to check its parameters (``check_params``), and the parameters that
  are not part of the model (``unsaved_params``: where ``fit`` writes).

:meth:`FittedState.check` runs on every estimator a file holds, innermost
first, before the model is returned, and raises a ValueError naming the
class and the attribute. A file may set only declared attributes: one that
would shadow a method (``predict``) is refused. A new fitted attribute is
one more entry in its class's declaration; a new estimator declares its own
(:meth:`FittedState.extended` adds to its base class's) and registers with
:func:`saved_as`.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline

from .._persistence._registry import model_class, register_model_class

__all__ = ["Array", "FittedState", "Fitted", "IfPresent", "Integer", "Labels", "Names", "OneOf",
           "Real", "RealList", "Sparse", "StrList", "TypeOf", "all_of", "at_least", "finite",
           "finite_or_neginf", "saved_as", "weights", "weights_or_neginf"]


# --- value checks: each returns None, or what is wrong with the values ------------------

def finite(values):
    """Every value is a finite number."""
    bad = ~np.isfinite(values)
    return _first_bad(values, bad, "finite numbers")


def finite_or_neginf(values):
    """Every value is finite or ``-inf`` (forbidden), never NaN or ``+inf``."""
    bad = ~(np.isfinite(values) | np.isneginf(values))
    return _first_bad(values, bad, "finite numbers or -inf")


def at_least(low):
    """Every value is at least ``low``."""
    def check(values):
        return _first_bad(values, values < low, f"numbers >= {low}")
    return check


#: The largest weight, in magnitude, a loaded model may hold. Inference works in
#: log space, where a score of size ``s`` keeps about ``16 - log10(s)`` digits: at
#: 1e8 a probability keeps 8, and far beyond (a weight of 1e300) the sums lose
#: every digit and the kernels return garbage. Training never comes near it.
MAX_WEIGHT = 1e8


def weights(values):
    """Finite weights of magnitude at most :data:`MAX_WEIGHT`."""
    return finite(values) or _first_bad(values, np.abs(values) > MAX_WEIGHT,
                                        f"weights of magnitude at most {MAX_WEIGHT:g}")


def weights_or_neginf(values):
    """:func:`weights`, or ``-inf`` where a transition (or a length...) is forbidden."""
    problem = finite_or_neginf(values)
    if problem:
        return problem
    return _first_bad(values, np.isfinite(values) & (np.abs(values) > MAX_WEIGHT),
                      f"weights of magnitude at most {MAX_WEIGHT:g}, or -inf")


def all_of(*checks):
    """Every one of the value checks ``checks``."""
    def check(values):
        return next(filter(None, (one(values) for one in checks)), None)
    return check


def _first_bad(values, bad, wanted):
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
    index = where[0] if len(where) == 1 else where
    return f"holds {values[where].item()!r} at {index}; expected {wanted}"


# --- dimensions ---------------------------------------------------------------------------

class _Dimensions:
    """Sizes of named dimensions, each taken from the first attribute that has it."""

    def __init__(self, derived):
        self.derived = derived  # name -> function of this object
        self.sizes = {}
        self.origin = {}  # name -> the attribute it came from

    def __getitem__(self, name):
        return self.sizes[name]

    def expected(self, dim):
        """The size ``dim`` must have, or None if it is not known yet."""
        if isinstance(dim, int):
            return dim
        if dim in self.derived:
            return int(self.derived[dim](self))
        return self.sizes.get(dim)

    def describe(self, dims):
        known = [d for d in dims if isinstance(d, str) and d in self.origin]
        return "; ".join(f"{d} = {self.sizes[d]} from {self.origin[d]}" for d in known)

    def match(self, dims, shape, label):
        """Check ``shape`` against the named ``dims``; the new names take its sizes."""
        if len(shape) != len(dims):
            raise ValueError(f"{label} has {len(shape)} dimension(s), shape {shape}; "
                             f"expected {len(dims)}: ({', '.join(map(str, dims))})")
        expected = tuple(self.expected(d) for d in dims)
        wrong = [k for k, (size, want) in enumerate(zip(shape, expected))
                 if want is not None and size != want]
        if wrong:
            wanted = ", ".join("?" if e is None else str(e) for e in expected)
            why = self.describe(dims)
            raise ValueError(
                f"{label} has shape {tuple(shape)}; expected ({wanted}{',' * (len(dims) == 1)}), "
                f"that is ({', '.join(map(str, dims))})" + (f" with {why}" if why else ""))
        for dim, size in zip(dims, shape):
            if isinstance(dim, str) and dim not in self.sizes and dim not in self.derived:
                self.sizes[dim] = int(size)
                self.origin[dim] = label.rpartition(".")[2]


# --- what an attribute may be ----------------------------------------------------------------

class _Spec:
    """One attribute's declaration; ``optional`` ones may be absent."""

    optional = False

    def check(self, value, label, dims):
        raise NotImplementedError


class IfPresent(_Spec):
    """``spec``, or no such attribute at all (a block some parameters add)."""

    optional = True

    def __init__(self, spec):
        self.spec = spec

    def check(self, value, label, dims):
        self.spec.check(value, label, dims)


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype} and shape {value.shape}"
    return f"a {type(value).__name__}"


class Array(_Spec):
    """An ndarray of exactly ``dtype`` (native byte order) and ``shape`` (dimension names).

    ``values`` is a value check (:func:`finite`...) or None for any value.
    """

    def __init__(self, shape, dtype=np.float64, values=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.values = values

    def check(self, value, label, dims):
        if not isinstance(value, np.ndarray) or value.dtype != self.dtype:
            raise ValueError(f"{label} is {_describe(value)}; expected an array of "
                             f"{self.dtype}")
        dims.match(self.shape, value.shape, label)
        problem = self.values(value) if self.values is not None and value.size else None
        if problem:
            raise ValueError(f"{label} {problem}")


class Sparse(_Spec):
    """A CSR matrix of ``shape`` with float64 values: canonical, indices in range."""

    def __init__(self, shape, values=weights):
        self.shape = tuple(shape)
        self.values = values

    def check(self, value, label, dims):
        if not (sp.issparse(value) and value.format == "csr"):
            raise ValueError(f"{label} is {_describe(value)}; expected a CSR matrix")
        dims.match(self.shape, value.shape, label)
        if value.data.dtype != np.float64:
            raise ValueError(f"{label} holds {value.data.dtype} values; expected float64")
        for part in ("indices", "indptr"):
            dtype = getattr(value, part).dtype
            if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
                raise ValueError(f"{label}.{part} is of {dtype}; expected int32 or int64")
        try:
            value.check_format(full_check=True)
        except ValueError as error:
            raise ValueError(f"{label} is not a valid CSR matrix ({error})") from None
        if not value.has_canonical_format:
            raise ValueError(f"{label} has unsorted or repeated column indices in a row")
        problem = self.values(value.data) if value.nnz else None
        if problem:
            raise ValueError(f"{label} {problem}")


def _object_items(array):
    """The items of an object array, if they are all str or all int, else None."""
    items = array.tolist()
    kinds = set(map(type, items))
    return items if kinds <= {str} or kinds <= {int} else None


class Labels(_Spec):
    """A 1-D array of distinct labels (str, bytes or numbers), sorted unless ``sorted=False``.

    ``dim`` names its length; there must be at least ``min_size``.
    """

    def __init__(self, dim, *, min_size=1, sorted=True):
        self.dim = dim
        self.min_size = min_size
        self.sorted = sorted

    def check(self, value, label, dims):
        if not isinstance(value, np.ndarray) or value.ndim != 1:
            raise ValueError(f"{label} is {_describe(value)}; expected a 1-D array of labels")
        if value.dtype.kind == "O":
            items = _object_items(value)
            if items is None:
                raise ValueError(f"{label} holds items of types "
                                 f"{sorted({type(v).__name__ for v in value.tolist()})}; "
                                 f"labels are all str or all int")
        elif value.dtype.kind in "biufUS":
            items = value.tolist()
        else:
            raise ValueError(f"{label} is an array of {value.dtype}; labels are str, bytes "
                             f"or numbers")
        dims.match((self.dim,), value.shape, label)
        if len(items) < self.min_size:
            raise ValueError(f"{label} holds {len(items)} label(s); expected at least "
                             f"{self.min_size}")
        if self.sorted:
            unordered = [k for k in range(1, len(items)) if not items[k - 1] < items[k]]
            if unordered:
                k = unordered[0]
                raise ValueError(f"{label} is not sorted and distinct: {items[k - 1]!r} "
                                 f"comes before {items[k]!r}")
        elif len(set(items)) != len(items):
            raise ValueError(f"{label} holds a label twice")


class Names(_Spec):
    """A 1-D object array of ``dim`` names (str or numbers)."""

    def __init__(self, dim):
        self.dim = dim

    def check(self, value, label, dims):
        if not (isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 1):
            raise ValueError(f"{label} is {_describe(value)}; expected a 1-D array of names")
        dims.match((self.dim,), value.shape, label)
        if not set(map(type, value.tolist())) <= {str, int, float}:
            raise ValueError(f"{label} holds names that are not str or numbers")


class StrList(_Spec):
    """A list of ``dim`` distinct str (a vocabulary's names)."""

    def __init__(self, dim):
        self.dim = dim

    def check(self, value, label, dims):
        if type(value) is not list or not set(map(type, value)) <= {str}:
            raise ValueError(f"{label} is {_describe(value)}; expected a list of str")
        dims.match((self.dim,), (len(value),), label)
        if len(set(value)) != len(value):
            raise ValueError(f"{label} holds a name twice")


class Integer(_Spec):
    """A Python int (not a bool) of at least ``low``; ``dim`` takes it as that size."""

    def __init__(self, low=0, *, dim=None):
        self.low = low
        self.dim = dim

    def check(self, value, label, dims):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{label} is {_describe(value)}; expected an int")
        if value < self.low:
            raise ValueError(f"{label} is {value}; expected an int >= {self.low}")
        if self.dim is not None:
            dims.match((self.dim,), (int(value),), label)


class Real(_Spec):
    """A real number (not a bool), finite unless ``nan_ok`` (then NaN too)."""

    def __init__(self, *, nan_ok=False, low=None):
        self.nan_ok = nan_ok
        self.low = low

    def check(self, value, label, dims):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{label} is {_describe(value)}; expected a number")
        if value != value and self.nan_ok:
            return
        if not np.isfinite(value) or (self.low is not None and value < self.low):
            wanted = "finite" if self.low is None else f">= {self.low}"
            raise ValueError(f"{label} is {value!r}; expected a {wanted} number")


class RealList(_Spec):
    """A list of real numbers (a record such as ``loss_curve_``)."""

    def check(self, value, label, dims):
        if type(value) is not list or not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
            raise ValueError(f"{label} is {_describe(value)}; expected a list of numbers")


class OneOf(_Spec):
    """One of the given values."""

    def __init__(self, *choices):
        self.choices = choices

    def check(self, value, label, dims):
        if not any(type(value) is type(c) and value == c for c in self.choices):
            raise ValueError(f"{label} is {value!r:.80}; expected one of "
                             f"{', '.join(map(repr, self.choices))}")


class TypeOf(_Spec):
    """An instance of exactly one of ``types`` (``type(None)`` for None)."""

    def __init__(self, *types):
        self.types = types

    def check(self, value, label, dims):
        if type(value) not in self.types:
            names = " or ".join("None" if t is type(None) else t.__name__ for t in self.types)
            raise ValueError(f"{label} is {_describe(value)}; expected {names}")


class Fitted(_Spec):
    """A fitted estimator of class ``cls`` (exactly), or None if ``none_ok``.

    ``cls`` may be the name a class is saved as (``"skcrf.SequenceVectorizer"``),
    for a class whose state holds another of its own kind: the class does not
    exist yet where it declares its state.

    Its own state was checked when it was loaded (the innermost first);
    here only that it is fitted.
    """

    def __init__(self, cls, *, none_ok=False):
        self._cls = cls
        self.none_ok = none_ok

    @property
    def cls(self):
        if isinstance(self._cls, str):
            return model_class(self._cls)[0]
        return self._cls

    def check(self, value, label, dims):
        if value is None and self.none_ok:
            return
        cls = self.cls
        if type(value) is not cls:
            raise ValueError(f"{label} is {_describe(value)}; expected a fitted "
                             f"{cls.__name__}" + (" or None" if self.none_ok else ""))
        if not type(value)._fitted_state.is_fitted(value):
            raise ValueError(f"{label} is a {cls.__name__} that is not fitted")


# --- a class's declaration ---------------------------------------------------------------------

def _validate_params(estimator):
    estimator._validate_params()


class FittedState:
    """The fitted attributes a class may have, their shapes and values, and their relations.

    Parameters
    ----------
    attributes : dict of str to spec
        Every fitted attribute, with its declaration (:class:`Array`,
        :class:`Labels`, ...; :class:`IfPresent` for one that some parameters
        add). Dimensions take their sizes in this order.
    derived : dict of str to callable, default=None
        Dimensions computed from others: ``{"n_class_pairs": lambda d:
        d["n_classes"] ** 2}``.
    rules : list of callable, default=()
        ``rule(estimator)`` raises a ValueError naming the attributes when
        they disagree in a way shapes do not say; run after the attributes.
    check_params : callable, default=None
        ``check_params(estimator)`` raises if a parameter is invalid; the
        default is scikit-learn's ``_validate_params``.
    unsaved_params : tuple of str, default=()
        Parameters that are not part of the model: saved as None and never
        read from a file.
    """

    def __init__(self, attributes, *, derived=None, rules=(), check_params=_validate_params,
                 unsaved_params=()):
        self.attributes = dict(attributes)
        self.derived = dict(derived or {})
        self.rules = tuple(rules)
        self.check_params = check_params
        self.unsaved_params = tuple(unsaved_params)

    @property
    def attribute_names(self):
        return frozenset(self.attributes)

    def extended(self, attributes=None, *, derived=None, rules=(), check_params=None,
                 unsaved_params=()):
        """This declaration with more attributes, dimensions and rules (a subclass's)."""
        return FittedState(
            {**self.attributes, **(attributes or {})},
            derived={**self.derived, **(derived or {})}, rules=self.rules + tuple(rules),
            check_params=check_params or self.check_params,
            unsaved_params=self.unsaved_params + tuple(unsaved_params))

    def is_fitted(self, estimator):
        """Whether ``estimator`` has every attribute that is not optional."""
        state = vars(estimator)
        return all(name in state for name, spec in self.attributes.items()
                   if not spec.optional)

    def check(self, estimator):
        """Raise a ValueError naming the attribute unless ``estimator``'s state is whole.

        An estimator with none of the attributes is unfitted, and fine as such
        (fitting or using it raises scikit-learn's NotFittedError).
        """
        name = type(estimator).__name__
        try:
            self.check_params(estimator)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name} has an invalid parameter: {error}") from None
        state = vars(estimator)
        unknown = sorted(set(state) - self.attribute_names
                         - set(estimator.get_params(deep=False)))
        if unknown:
            raise ValueError(f"{name} has no attribute {unknown[0]!r} to set")
        present = [attribute for attribute in self.attributes if attribute in state]
        if not present and self.attributes:
            return  # unfitted (a state of rules alone, a Pipeline's, is checked always)
        missing = [attribute for attribute, spec in self.attributes.items()
                   if not spec.optional and attribute not in state]
        if missing:
            raise ValueError(f"{name} has {present[0]} but no {missing[0]}: a fitted "
                             f"{name} has both")
        dims = _Dimensions(self.derived)
        for attribute, spec in self.attributes.items():
            if attribute in state:
                label = f"{name}.{attribute}"
                try:
                    spec.check(state[attribute], label, dims)
                except ValueError:
                    raise
                except (TypeError, AttributeError, OverflowError, IndexError) as error:
                    raise ValueError(f"{label} is invalid ({type(error).__name__}: "
                                     f"{error})") from None
        for rule in self.rules:
            try:
                rule(estimator)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
            except (TypeError, AttributeError, OverflowError, IndexError) as error:
                raise ValueError(f"{name}: its fitted attributes disagree "
                                 f"({type(error).__name__}: {error})") from None


def saved_as(name):
    """Class decorator: ``load_model`` may build the class under ``name``, checked by
    the ``_fitted_state`` the class itself declares (not one it inherits)."""
    def register(cls):
        if "_fitted_state" not in vars(cls):
            raise TypeError(f"{cls.__qualname__} declares no _fitted_state of its own; a "
                            f"class that model files may hold declares its fitted state.")
        register_model_class(name, cls, cls._fitted_state)
        return cls
    return register


# --- scikit-learn's Pipeline ------------------------------------------------------------------

def _check_pipeline_steps(pipeline):
    steps = pipeline.steps
    if type(steps) is not list or not steps:
        raise ValueError("steps must be a non-empty list of (name, estimator) pairs")
    names = []
    for k, step in enumerate(steps):
        if not (type(step) is tuple and len(step) == 2 and type(step[0]) is str):
            raise ValueError(f"steps[{k}] is not a (name, estimator) pair")
        names.append(step[0])
        if step[1] in (None, "passthrough"):
            continue
        if k < len(steps) - 1 and not hasattr(step[1], "transform"):
            raise ValueError(f"steps[{k}] ({step[0]!r}) is a {type(step[1]).__name__}, "
                             f"which cannot transform: only the last step may be an "
                             f"estimator without transform")
    if len(set(names)) != len(names) or any("__" in n for n in names):
        raise ValueError(f"step names {names} must be distinct and hold no '__'")
    if pipeline.verbose not in (True, False):
        raise ValueError(f"verbose is {pipeline.verbose!r}; expected a bool")


def _pipeline_widths_agree(pipeline):
    """Each step that counts its input features gets as many as the step before makes."""
    from ..features.hasher import SequenceHasher

    steps = [step for _, step in pipeline.steps if step not in (None, "passthrough")]
    for before, after in zip(steps[:-1], steps[1:]):
        made = getattr(before, "feature_names_", None)
        if made is not None:
            # a vectorizer's vectors in dicts are dense columns after the named ones
            made = len(made) + sum(getattr(before, "vector_widths_", {}).values())
        if isinstance(before, SequenceHasher):  # its width is a parameter
            made = before.n_features
        taken = getattr(after, "n_features_in_", None)
        if (made is not None and taken is not None and made != taken
                and not _dense_block_joins(before, after, made, taken)):
            raise ValueError(
                f"its {type(before).__name__} makes {made} features, but the "
                f"{type(after).__name__} after it was fitted on {taken}")


def _dense_block_joins(before, after, made, taken):
    """Whether ``after`` reads a dense block given beside ``before``'s output.

    ``skcrf train --numeric-columns`` gives a file's numbers to the model's
    last step as a dense block after the vectorizer's columns: the block is
    not made by any step of the pipeline (a Pipeline's own predict without it
    is refused at predict, naming the missing block).
    """
    vectors = sum(getattr(before, "vector_widths_", {}).values())
    n_dense = getattr(after, "n_dense_features_in_", 0)
    return vectors == 0 and type(n_dense) is int and n_dense > 0 and made + n_dense == taken


PIPELINE_STATE = FittedState({}, rules=[_pipeline_widths_agree],
                             check_params=_check_pipeline_steps,
                             # a cache folder is where a refit writes, not the model
                             unsaved_params=("memory",))
register_model_class("sklearn.pipeline.Pipeline", Pipeline, PIPELINE_STATE)
