"""The second process of :mod:`.compile_ahead`: compiles one kind's prediction kernels.

Run as ``python -m skcrf._estimators.compile_worker KIND``. It builds a toy model of
the kind, whose weights are set, not fitted, and predicts with it, so that numba
compiles (and caches) the kernels the first process's ``predict`` and
``predict_marginals`` will load. Kept apart from :mod:`.compile_ahead`, which the
estimators import: this module imports the estimators.
"""

import os
import sys
import warnings

import numpy as np

from .._chain import CRFClassifier
from .._semimarkov import SemiMarkovCRF
from .._tree import TreeCRF
from ..features import SequenceVectorizer
from ..inference.chain.order1 import forward_backward, viterbi
from ..learning.lbfgs import lbfgs
from .segment_tags import _SegmentTags

#: A toy task, as dicts: what the toy models predict.
_X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
      [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
#: The toy task's trees: each token's head ("__parent__"), -1 for the root.
_HEADS = [[1, 2, -1], [1, -1]] * 8


def compile_kernels(kind):
    """Compile (or load) what ``kind``'s first ``predict`` and ``predict_marginals`` run.

    The chain's lanes of forward-backward first (the fit's training kernel
    calls the same core), then the L-BFGS steps, then a toy model's
    ``predict_marginals`` and ``predict`` for the rest (its Viterbi, the
    unary scores, the vectorizer's transform). The toy model's weights are
    set, not fitted: fitting would compile what the first process is
    compiling.
    """
    rng = np.random.default_rng(0)
    if kind == "chain":
        _chain_lanes(rng)
    # a quadratic: the solver's steps, with the L1 part OWL-QN adds
    lbfgs(lambda w: (float(w @ w), 2 * w), np.ones(3), l1=0.1, max_iter=3)
    model, X = _TOY_MODELS[kind](rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.predict_marginals(X)
        model.predict(X)


def _chain_lanes(rng):
    """Forward-backward's lanes and Viterbi, on arrays of the types prediction passes."""
    n_classes = 4
    offsets = np.arange(0, 25, 3, dtype=np.int64)  # eight sequences of three tokens: lanes
    # read-only, as a SequenceMatrix's: numba compiles another kernel for writable arrays
    offsets.flags.writeable = False
    unary = rng.normal(size=(offsets[-1], n_classes))
    transitions = rng.normal(size=(n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    forward_backward(unary, transitions, start, end, offsets, False)
    viterbi(unary, transitions, start, end, offsets)


def _fitted(model, X, rng, n_classes, **attributes):
    """``model`` with the weights of a fit on ``X`` set at random: a model to predict with."""
    vectorizer = SequenceVectorizer().fit(X)
    n_features = len(vectorizer.feature_names_)
    model.__dict__.update(
        coef_=rng.normal(size=(n_classes, n_features)), vectorizer_=vectorizer,
        feature_names_=list(vectorizer.feature_names_), n_features_in_=n_features,
        n_iter_=1, loss_curve_=[1.0], **attributes)
    return model


def _toy_chain(rng):
    n = 4
    return _fitted(CRFClassifier(), _X, rng, n,
                   classes_=np.array(["B-LOC", "B-PER", "I-PER", "O"], dtype=object),
                   transition_coef_=rng.normal(size=(n, n)), start_coef_=rng.normal(size=n),
                   end_coef_=rng.normal(size=n),
                   allowed_transitions_=np.ones((n, n), bool)), _X


def _toy_semi_markov(rng):
    codec = _SegmentTags.of_labels("IOB2", ["LOC", "PER"])
    n, n_lengths = len(codec.segment_classes), 2
    model = _fitted(SemiMarkovCRF(), _X, rng, n,
                    classes_=codec.classes, segment_classes_=codec.segment_classes,
                    scheme_="IOB2", max_segment_length_=n_lengths,
                    allowed_transitions_=np.ones((n, n), bool),
                    length_coef_=rng.normal(size=(n, n_lengths)),
                    transition_coef_=rng.normal(size=(n, n)), start_coef_=rng.normal(size=n),
                    end_coef_=rng.normal(size=n))
    model.first_coef_ = rng.normal(size=model.coef_.shape)
    model.last_coef_ = rng.normal(size=model.coef_.shape)
    return model, _X


def _toy_tree(rng):
    X = [[{**token, "__parent__": head} for token, head in zip(tokens, heads)]
         for tokens, heads in zip(_X, _HEADS)]
    n = 4
    return _fitted(TreeCRF(), X, rng, n,
                   classes_=np.array(["B-LOC", "B-PER", "I-PER", "O"], dtype=object),
                   transition_coef_=rng.normal(size=(n, n)),
                   root_coef_=rng.normal(size=n)), X


_TOY_MODELS = {"chain": _toy_chain, "semi-markov": _toy_semi_markov, "tree": _toy_tree}


def main(kind):
    """Compile ``kind``'s kernels at a lower priority: behind the fit that started it."""
    if kind not in _TOY_MODELS:
        raise SystemExit(f"skcrf compile worker: unknown kind {kind!r}; "
                         f"expected one of {sorted(_TOY_MODELS)}")
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    compile_kernels(kind)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "chain")
