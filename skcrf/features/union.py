"""SequenceUnion: FeatureUnion for transformers whose outputs are SequenceMatrix objects."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import TransformerMixin
from sklearn.utils import Bunch
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import check_is_fitted

from ._names_out import NamesOutMixin
from ._output import SequenceOutputMixin
from .sequence_matrix import SequenceMatrix

__all__ = ["SequenceUnion", "make_sequence_union"]


class SequenceUnion(NamesOutMixin, SequenceOutputMixin, TransformerMixin, _BaseComposition,
                    auto_wrap_output_keys=None):
    """Join the features several transformers make of the same sequences.

    The sequence counterpart of :class:`sklearn.pipeline.FeatureUnion`: every
    transformer sees the same ``X`` and returns a :class:`~skcrf.SequenceMatrix`
    (or a list of 2-D arrays, one per sequence); the union puts their sparse
    columns side by side in one CSR matrix and their dense columns side by
    side in one dense block, with the same sequence offsets. So the sparse
    features of :class:`~skcrf.TokenFeaturizer` (numbered by a
    :class:`~skcrf.SequenceVectorizer`) and the vectors of a
    :class:`WordVectorizer` reach a CRF as one input, the dense part
    multiplied by its weights with BLAS and never copied into the sparse one.

    As in FeatureUnion, the parts' parameters are reachable through
    ``get_params`` and ``set_params`` as ``<name>__<parameter>`` (so
    ``GridSearchCV`` tunes them), a part set to ``"drop"`` is left out, and
    :func:`sklearn.base.clone` clones every part.

    Parameters
    ----------
    transformer_list : list of (str, transformer) tuples
        The parts, each with a unique name; a transformer may be ``"drop"``.
    transformer_weights : dict of str to float, default=None
        A factor for the features of a part, by name (1 when missing).
    verbose_feature_names_out : bool, default=True
        Whether to prefix every column name with its part's name
        (``"words__word=casa"``). When False, names met in two parts are an
        error.

    Attributes
    ----------
    named_transformers : Bunch
        The parts by name (the fitted ones after ``fit``).
    feature_names_out_ : ndarray of str objects
        The names of the sparse columns, then those of the dense columns, as
        the output of ``fit_transform`` held them.

    See Also
    --------
    make_sequence_union : The same, naming the parts after their classes.
    sklearn.pipeline.FeatureUnion : The same for single samples.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from skcrf import SequenceVectorizer, TokenFeaturizer
    >>> from skcrf.features import SequenceUnion, WordVectorizer
    >>> union = SequenceUnion([
    ...     ("words", make_pipeline(TokenFeaturizer(window=0), SequenceVectorizer())),
    ...     ("vectors", WordVectorizer({"a": [1.0, 2.0]})),
    ... ])
    >>> Xt = union.fit_transform([["a", "b"], ["b"]])
    >>> Xt.n_features, Xt.feature_names[2]
    (9, 'words__bias')
    >>> Xt.dense_names.tolist(), Xt.dense.tolist()
    (['vectors__vec[0]', 'vectors__vec[1]'], [[1.0, 2.0], [0.0, 0.0], [0.0, 0.0]])
    """

    #: the sparse columns' names, then the dense columns'
    _names_out_attribute = "feature_names_out_"

    def __init__(self, transformer_list, *, transformer_weights=None,
                 verbose_feature_names_out=True):
        self.transformer_list = transformer_list
        self.transformer_weights = transformer_weights
        self.verbose_feature_names_out = verbose_feature_names_out

    def get_params(self, deep=True):
        """The union's parameters, and with ``deep`` those of its parts.

        Parameters
        ----------
        deep : bool, default=True
            Whether to include the parts and their parameters
            (``<name>__<parameter>``).

        Returns
        -------
        params : dict
        """
        return self._get_params("transformer_list", deep=deep)

    def set_params(self, **params):
        """Set the union's parameters, and its parts' as ``<name>__<parameter>``.

        Parameters
        ----------
        **params : keyword arguments
            A part's name replaces that part (with a transformer or ``"drop"``).

        Returns
        -------
        self : SequenceUnion
        """
        self._set_params("transformer_list", **params)
        return self

    @property
    def named_transformers(self):
        """The parts by name."""
        return Bunch(**dict(self.transformer_list))

    def fit(self, X, y=None):
        """Fit every part on ``X`` (and ``y``).

        Parameters
        ----------
        X : list of sequences or SequenceMatrix
            Whatever the parts take.
        y : list of label sequences, default=None
            Passed to every part's fit.

        Returns
        -------
        self : SequenceUnion
        """
        self.fit_transform(X, y)
        return self

    def fit_transform(self, X, y=None):
        """Fit every part and join their outputs.

        Parameters
        ----------
        X : list of sequences or SequenceMatrix
            Whatever the parts take.
        y : list of label sequences, default=None
            Passed to every part's fit.

        Returns
        -------
        Xt : SequenceMatrix
            The parts' sparse columns in one CSR matrix, their dense columns
            in one dense block.
        """
        parts = self._checked_parts()
        # the parts are fitted in place, as FeatureUnion's (clone() the union
        # for a fresh copy)
        outputs = [_fit_transform_one(transformer, X, y) for _, transformer in parts]
        joined = self._join(outputs, [name for name, _ in parts])
        self.feature_names_out_ = np.concatenate([
            _names_or_empty(joined.feature_names), _names_or_empty(joined.dense_names)])
        return joined

    def transform(self, X):
        """Transform ``X`` by every fitted part and join the outputs.

        Parameters
        ----------
        X : list of sequences or SequenceMatrix
            Whatever the parts take.

        Returns
        -------
        Xt : SequenceMatrix
        """
        check_is_fitted(self, "feature_names_out_")
        parts = [(name, transformer) for name, transformer in self.transformer_list
                 if not _dropped(transformer)]
        outputs = [transformer.transform(X) for _, transformer in parts]
        return self._join(outputs, [name for name, _ in parts])

    def _checked_parts(self):
        if not isinstance(self.transformer_list, (list, tuple)) or not all(
                isinstance(part, tuple) and len(part) == 2 for part in self.transformer_list):
            raise TypeError("transformer_list must be a list of (name, transformer) tuples.")
        names = [name for name, _ in self.transformer_list]
        self._validate_names(names)
        for name, transformer in self.transformer_list:
            if _dropped(transformer):
                continue
            if not hasattr(transformer, "fit") or not hasattr(transformer, "transform"):
                raise TypeError(f"The part {name!r} of SequenceUnion ({transformer!r}) is not "
                                f"a transformer (no fit and transform), nor 'drop'.")
        parts = [(name, t) for name, t in self.transformer_list if not _dropped(t)]
        if not parts:
            raise ValueError("SequenceUnion has no part to join: every one is 'drop'.")
        weights = self.transformer_weights or {}
        unknown = set(weights) - set(names)
        if unknown:
            raise ValueError(f"transformer_weights names {sorted(unknown)}, which are not "
                             f"parts of the union ({names}).")
        return parts

    def _join(self, outputs, names):
        weights = self.transformer_weights or {}
        blocks = [_as_sequence_matrix(output, name) for output, name in zip(outputs, names)]
        offsets = blocks[0].offsets
        sparse, sparse_names, dense, dense_names = [], [], [], []
        parents = segments = None
        for block, name in zip(blocks, names):
            if not np.array_equal(block.offsets, offsets):
                raise ValueError(
                    f"The parts of SequenceUnion disagree on the sequences: {names[0]!r} "
                    f"made {len(offsets) - 1} sequences of {offsets[-1]} tokens, {name!r} "
                    f"{len(block)} of {block.n_tokens} (or other lengths).")
            weight = weights.get(name)
            prefix = f"{name}__" if self.verbose_feature_names_out else ""
            if block.n_features:
                matrix = block.matrix if weight is None else block.matrix * weight
                sparse.append(matrix)
                sparse_names.extend(prefix + str(feature) for feature in _names(
                    block.feature_names, block.n_features, "x"))
            if block.dense is not None:
                dense.append(block.dense if weight is None else block.dense * weight)
                dense_names.extend(prefix + str(feature) for feature in _names(
                    block.dense_names, block.n_dense, "x"))
            parents = _one_of(parents, block.parents, "parents", name)
            segments = _one_of(segments, block.segments, "segments", name)
        for kind, all_names in (("sparse", sparse_names), ("dense", dense_names)):
            if len(set(all_names)) != len(all_names):
                seen = set()
                twice = next(n for n in all_names if n in seen or seen.add(n))
                raise ValueError(f"Two parts of SequenceUnion make the {kind} column "
                                 f"{twice!r}; set verbose_feature_names_out=True to prefix "
                                 f"the names with the parts' names.")
        matrix = sp.hstack(sparse, format="csr") if len(sparse) > 1 else (
            sparse[0] if sparse else None)
        if matrix is None and not dense:
            matrix = sp.csr_matrix((offsets[-1], 0))
        block = (np.hstack(dense) if len(dense) > 1 else dense[0]) if dense else None
        return SequenceMatrix(matrix, offsets,
                              feature_names=sparse_names if matrix is not None else None,
                              parents=parents, segments=segments,
                              dense=block, dense_names=dense_names if dense else None)


def make_sequence_union(*transformers, **kwargs):
    """A :class:`SequenceUnion` of the given transformers, named after their classes.

    Parameters
    ----------
    *transformers : transformers
        The parts, named by :func:`sklearn.pipeline.make_union`'s rule
        (lowercased class names, numbered when repeated).
    **kwargs
        ``transformer_weights`` and ``verbose_feature_names_out``.

    Returns
    -------
    union : SequenceUnion
    """
    from sklearn.pipeline import _name_estimators
    return SequenceUnion(_name_estimators(transformers), **kwargs)


def _fit_transform_one(transformer, X, y):
    if hasattr(transformer, "fit_transform"):
        return transformer.fit_transform(X, y) if y is not None else transformer.fit_transform(X)
    return (transformer.fit(X, y) if y is not None else transformer.fit(X)).transform(X)


def _dropped(transformer):
    return transformer is None or (isinstance(transformer, str) and transformer == "drop")


def _as_sequence_matrix(output, name):
    if isinstance(output, SequenceMatrix):
        return output
    try:
        return SequenceMatrix.from_sequences(output)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"The part {name!r} of SequenceUnion returned a "
                        f"{type(output).__name__}, not a SequenceMatrix nor a list of 2-D "
                        f"arrays, one per sequence ({exc})") from None


def _names(names, n, stem):
    return [f"{stem}{i}" for i in range(n)] if names is None else list(names)


def _names_or_empty(names):
    return np.array([], dtype=object) if names is None else np.asarray(names, dtype=object)


def _one_of(kept, new, what, name):
    """Trees (``parents``) and candidate segments may come from one part only, or agree."""
    if new is None:
        return kept
    if kept is None:
        return new
    same = (np.array_equal(kept, new) if what == "parents" else kept is new)
    if not same:
        raise ValueError(f"Two parts of SequenceUnion give different {what} (the second is "
                         f"{name!r}); let one part make them.")
    return kept
