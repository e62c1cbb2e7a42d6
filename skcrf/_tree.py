"""TreeCRF: the tree-structured CRF estimator, over trees given with the input."""

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from ._estimators import defaults as _defaults
from ._estimators.base import CRFEstimator
from ._estimators.doc_sections import SECTIONS
from ._estimators.compile_ahead import compile_ahead
from ._estimators.partial_labels import link_pairs_with_sets, pairs_with_sets
from ._estimators.fitted_state import Array, IfPresent, Sparse, saved_as, weights
from ._estimators.transition_columns import transition_columns
from ._estimators.training import TrainingProblem
from ._utils.docstrings import fill_sections
from ._utils.validation import check_finite_scores, reject_positional_weights
from .features.arrays import FeatureArrays
from .structures.chain.dense import DenseChainStructure
from .structures.tree.structure import (TreeScores, TreeStructure, tree_decode, tree_labelling_scores,
                              tree_posteriors)

#: Link scores (n_tokens * n_classes ** 2 values) prediction builds at a time
#: with link features: sequences are taken in batches of about this size.
_PREDICT_LINK_BUDGET = 1 << 22

_NO_TREES = (
    "{name} needs each sequence's tree, but X carries none: give dict tokens the "
    "'__parent__' key (the parent's index within the sequence, -1 or None for a "
    "root), a SequenceMatrix its parents=, or tokens with a head column to "
    "TokenFeaturizer(head_column=...) (what skcrf.datasets.load_conllu returns).")


def _link_weights_follow_the_parameters(model):
    """``transition_feature_coef_`` is there exactly when ``transition_features`` asks for it."""
    expected = model.transition_features is not None
    if ("transition_feature_coef_" in vars(model)) != expected:
        raise ValueError(f"transition_features={model.transition_features!r} "
                         + ("needs" if expected else "has no") + " transition_feature_coef_")


@saved_as("skcrf.TreeCRF")
@fill_sections(SECTIONS)
class TreeCRF(CRFEstimator):
    """Tree-structured conditional random field over given trees, trained by L-BFGS.

    Each sequence comes with a tree over its tokens (a dependency tree, a
    parse tree, a document's outline; several trees per sequence are
    allowed): every token has a parent within the sequence or is a root. The
    model scores a labelling ``y`` as ``p(y | x) = exp(w . Phi(x, y)) / Z(x)``
    with state weights (label, feature), a weight for every pair (parent's
    label, child's label) of a link, and a weight for the label of each root.
    Inference is exact belief propagation (upward and downward passes, in
    ``O(n_tokens * n_classes ** 2)``), decoding max-product with
    back-pointers; both hold for trees of any depth. With
    ``transition_features``, a link's weights also depend on the child's
    features (and, through head features such as those of
    ``TokenFeaturizer(head_column=...)``, on the head's), as
    :class:`CRFClassifier`'s transition features do. A tree whose parents are
    ``-1, 0, 1, ...`` is a chain: the model is then :class:`CRFClassifier`
    with ``start_coef_ = root_coef_`` and no end weights.

    Training minimises, summed over the training sequences ``q``::

        L(w) = sum_q -log p(y_q | x_q)
               + alpha * l1_ratio * ||w||_1
               + 0.5 * alpha * (1 - l1_ratio) * ||w||_2^2

    The trees travel with ``X`` through pipelines, cross-validation and
    searches: as the key ``"__parent__"`` of each token dict (the parent's
    index within the sequence, -1 or None for a root), as
    :attr:`SequenceMatrix.parents`, or from a head column of raw tokens
    through :class:`TokenFeaturizer` (``head_column``), which can also give
    each token features of its head.

    Parameters
    ----------
    <<solver_parameters>>
    transition_features : None, "all" or list of str, default=None
        Features of a token that also weight its link to its parent (link
        features): the link of a child ``v`` with label ``b`` to a parent
        with label ``a`` scores ``transition_coef_[a, b] + sum_f x[v, f] *
        V[f, a, b]``. ``"all"`` takes every feature; a list takes the
        features whose names start with one of its strings (e.g.
        ``["col1=", "head:col1=", "head:dir="]``: the child's POS, its
        head's, the link's side). As for state weights, ``V`` has weights
        only for the (feature, label pair) combinations seen on training
        links unless ``all_possible_states``.
    all_possible_states : bool, default=False
        Whether every (feature, label) pair gets a state weight, or only the
        pairs seen in training (as :class:`CRFClassifier`).
    warm_start : bool, default=False
        When set, ``fit`` starts the solver from the weights of the previous
        fit instead of zero, provided that fit had the same parameter layout:
        the same classes, the same features (names, in the same order: the
        same vocabulary) and the same shapes of weights. Otherwise it starts from zero, as without
        ``warm_start``. Useful along a path of ``alpha`` values on the same
        data; the optimum reached is the same (to the solver's ``tol``), in
        fewer iterations.
    n_jobs : int, default=None
        Threads for the inference and sparse-product kernels; ``None`` and
        ``-1`` use all cores. Results do not depend on it.
    verbose : int, default=0
        Print the objective, gradient norm and elapsed time every iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted; columns of ``predict_marginals`` follow this order.
    coef_ : ndarray of shape (n_classes, n_features)
        State weights.
    transition_coef_ : ndarray of shape (n_classes, n_classes)
        Link weights, indexed [parent's label, child's label].
    transition_feature_coef_ : scipy.sparse.csr_matrix of shape (n_features, n_classes ** 2)
        Weights of the link features: row ``f``, column ``a * n_classes + b``
        is ``V[f, a, b]``. Only with ``transition_features``.
    root_coef_ : ndarray of shape (n_classes,)
        Weights of the label of a root.
    <<feature_attributes>>
    <<solver_attributes>>

    See Also
    --------
    CRFClassifier : The linear chain, where each token's neighbour is the previous token.
    skcrf.datasets.load_conllu : Reads dependency trees in CoNLL-U.

    Examples
    --------
    A tiny tree: "dogs" heads "big", and "bark" is the root heading "dogs".

    >>> from skcrf import TreeCRF
    >>> X = [[{"w": "big", "__parent__": 1}, {"w": "dogs", "__parent__": 2},
    ...       {"w": "bark", "__parent__": -1}]]
    >>> y = [["amod", "nsubj", "root"]]
    >>> crf = TreeCRF(alpha=0.1).fit(X, y)
    >>> crf.predict(X)[0].tolist()
    ['amod', 'nsubj', 'root']
    """

    _fitted_state = CRFEstimator._fitted_state.extended(
        {"coef_": Array(("n_classes", "n_features"), values=weights),
         "transition_coef_": Array(("n_classes", "n_classes"), values=weights),
         "root_coef_": Array(("n_classes",), values=weights),
         "transition_feature_coef_": IfPresent(Sparse(("n_features", "n_class_pairs")))},
        derived={"n_class_pairs": lambda dims: dims["n_classes"] ** 2},
        rules=[_link_weights_follow_the_parameters])

    _parameter_constraints = {
        **CRFEstimator._parameter_constraints,
        "transition_features": [None, StrOptions({"all"}), list, tuple],
    }

    def __init__(self, *, alpha=_defaults.ALPHA, l1_ratio=_defaults.L1_RATIO,
                 max_iter=_defaults.MAX_ITER, tol=_defaults.TOL, solver="lbfgs",
                 learning_rate="optimal", eta0="auto", average="auto", C=1.0, shuffle=True,
                 random_state=None, n_iter_no_change=5, early_stopping=False,
                 validation_fraction=0.1, transition_features=None,
                 all_possible_states=False, warm_start=False,
                 n_jobs=None, verbose=0):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.average = average
        self.C = C
        self.shuffle = shuffle
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.transition_features = transition_features
        self.all_possible_states = all_possible_states
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __setstate__(self, state):
        # models pickled before warm_start and transition_features existed had none
        state.setdefault("warm_start", False)
        state.setdefault("transition_features", None)
        super().__setstate__(state)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X, y, *positional, sample_weight=None):
        """Learn the weights from labelled trees.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix with parents
            Per-token feature dicts, each with the key ``"__parent__"``, or
            the output of a vectorizer (see the class docstring).
        y : list of sequences of labels
            One label (str or int) per token; with ``solver="lbfgs"`` and no
            ``transition_features``, a node's label may also be None
            (unknown) or a set of labels (one of them). See
            :ref:`incomplete-annotation`.
        sample_weight : array-like of shape (n_sequences,), default=None
            Each sequence's weight, as for :meth:`CRFClassifier.fit`.

        Returns
        -------
        self : TreeCRF
            The fitted estimator.
        """
        if self.transition_features is None:
            compile_ahead("tree")  # on a fresh install: prediction's kernels, on another core
        reject_positional_weights(self, positional)
        return self._fit(X, y, sample_weight)

    def _reads_dense_block(self, training):
        # every solver, with full or partial labels, and prediction read a dense
        # block as a block: L-BFGS by BLAS (structures/chain/dense.py,
        # learning/partial.py), the online solvers per visit
        # (learning/_online_dense.py), prediction in TreeScores.of_coefficients;
        # link features, which may name dense columns, read it as CSR columns
        return self.transition_features is None

    def _training_problem(self, data):
        if data.features.parents is None:
            raise ValueError(_NO_TREES.format(name=type(self).__name__))
        columns = transition_columns(self.transition_features, data.feature_names,
                                     data.features.n_features)
        structure = TreeStructure.for_training(
            data.features, data.label_ids, data.classes.shape[0],
            all_possible_states=self.all_possible_states, transition_columns=columns,
            offsets=data.offsets)
        if data.partial is not None:
            # a class a node's set offers gets its features' weights too, and a
            # label pair a link's sets offer its link features' weights
            edge_pairs = structure.edge_pairs
            if edge_pairs is not None and not self.all_possible_states:
                edge_pairs = link_pairs_with_sets(edge_pairs, data.features, data.offsets,
                                                  data.partial, columns)
            structure = TreeStructure(structure.n_classes,
                                      pairs_with_sets(structure.state_pairs, data.features,
                                                      data.partial), edge_pairs)
        if data.features.dense is not None:
            structure = DenseChainStructure(structure, data.features.n_dense)
        return TrainingProblem(
            structure, data.label_ids, {"classes_": data.classes},
            {"coef": "coef_", "transitions": "transition_coef_", "root": "root_coef_",
             "edge_coef": "transition_feature_coef_"})

    def _partial_labels_refusal(self):
        return None

    def _potentials(self, features, offsets, fixed=None):
        if features.parents is None:
            raise ValueError(_NO_TREES.format(name=type(self).__name__))
        scores = TreeScores.of_coefficients(
            features, self.coef_, self.transition_coef_, self.root_coef_,
            getattr(self, "transition_feature_coef_", None))
        # scores past float64 would silently decode to nothing
        check_finite_scores(scores.unary, offsets)
        if scores.edges is not None:
            check_finite_scores(scores.edges, offsets,
                                allowed=np.isneginf(self.transition_coef_))
        if fixed is not None:
            scores.fix_labels(fixed)
        return scores, features.parents

    def _decode(self, features, offsets):
        if getattr(self, "transition_feature_coef_", None) is None:
            return super()._decode(features, offsets)
        # link scores are n_classes ** 2 per token: a batch of sequences at a time
        return np.concatenate([super(TreeCRF, self)._decode(part, part_offsets)
                               for part, part_offsets in self._batches(features, offsets)]
                              + [np.zeros(0, dtype=np.int64)])

    def _token_marginals(self, features, offsets):
        if getattr(self, "transition_feature_coef_", None) is None:
            return super()._token_marginals(features, offsets)
        return np.concatenate([super(TreeCRF, self)._token_marginals(part, part_offsets)
                               for part, part_offsets in self._batches(features, offsets)]
                              + [np.zeros((0, self.classes_.shape[0]))])

    def _batches(self, features, offsets):
        """(features, offsets) of consecutive batches of sequences of about
        _PREDICT_LINK_BUDGET link scores each."""
        per_token = self.classes_.shape[0] ** 2
        bounds = [0]
        budget = max(_PREDICT_LINK_BUDGET // per_token, 1)
        for q in range(1, offsets.shape[0]):
            if offsets[q] - offsets[bounds[-1]] > budget and q - 1 > bounds[-1]:
                bounds.append(q - 1)
        bounds.append(offsets.shape[0] - 1)
        for first, last in zip(bounds[:-1], bounds[1:]):
            lo, hi = offsets[first], offsets[last]
            start, stop = features.indptr[lo], features.indptr[hi]
            yield (FeatureArrays(None if features.data is None else features.data[start:stop],
                                 features.indices[start:stop],
                                 features.indptr[lo:hi + 1] - start, features.n_features,
                                 features.parents[lo:hi]),
                   offsets[first:last + 1] - lo)

    def _viterbi(self, potentials, offsets):
        scores, parents = potentials
        return tree_decode(scores, parents, offsets)

    def _posteriors(self, potentials, offsets):
        scores, parents = potentials
        posteriors = tree_posteriors(scores, parents, offsets)
        return posteriors.log_z, posteriors.marginals

    def _labelling_scores(self, potentials, offsets, label_ids):
        scores, parents = potentials
        return tree_labelling_scores(scores, parents, offsets, label_ids)
