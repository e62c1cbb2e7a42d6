"""How unsure a fitted model is of each sequence: scores for active learning.

:func:`uncertainty_scores` gives, per sequence, the measures Settles and Craven
(2008) compare for choosing which sentences to annotate next, all exact:

- ``least_confidence``: ``1 - p(y* | x)``, with ``y*`` the best labelling;
- ``margin``: ``p(y* | x) - p(y2 | x)``, the second best ``y2`` (small is unsure);
- ``token_entropy_sum`` and ``token_entropy_mean``: the entropy of each
  token's marginal distribution, summed and averaged over the tokens;
- ``expected_errors``: the expected number of tokens the best labelling gets
  wrong, ``sum_t (1 - p(y*_t | x))``;
- ``sequence_entropy``: the entropy of ``p(y | x)`` over whole labellings,
  ``log Z - E[score]``, from the marginals and the label-pair marginals of an
  order-1 chain (with or without transition features); NaN for the other
  structures, where it would need more than those.

Higher means less sure for every score but ``margin``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline

from ._utils.parallel import kernel_threads
from ._utils.type_aliases import FeatureSequences

__all__ = ["UNCERTAINTY_SCORES", "uncertainty_scores"]

#: The names of the scores :func:`uncertainty_scores` returns, in order.
UNCERTAINTY_SCORES = ("least_confidence", "margin", "token_entropy_sum", "token_entropy_mean",
                      "expected_errors", "sequence_entropy")


def _model_and_input(model, X):
    if isinstance(model, Pipeline):
        return model.steps[-1][1], model[:-1].transform(X)
    return model, X


def _entropy_terms(probabilities, scores):
    """Sum of p * log-score over entries of positive probability (``-inf`` ones have none)."""
    with np.errstate(invalid="ignore"):
        return np.where(probabilities > 0, probabilities * scores, 0.0)


#: Tokens whose label-pair marginals one step of the entropy holds at once.
_PAIR_TOKENS = 1 << 15


def _order1_sequence_entropy(potentials, offsets):
    """Exact ``log Z - E[score]`` per sequence of an order-1 chain, or None for another model.

    The expected score needs each token's label-pair marginals: they come
    from the per-token-transition pass, a bounded number of tokens at a time.
    """
    from .structures.chain.order1 import ChainScores, chain_posteriors

    if not isinstance(potentials, ChainScores) or potentials.trigram is not None:
        return None
    lengths = np.diff(offsets)
    entropy = np.zeros(lengths.shape[0])
    q = 0
    while q < lengths.shape[0]:
        # whole sequences, at least one, up to the token budget
        stop = max(q + 1, int(np.searchsorted(offsets, offsets[q] + _PAIR_TOKENS,
                                              side="right")) - 1)
        stop = min(stop, lengths.shape[0])
        lo, hi = int(offsets[q]), int(offsets[stop])
        part = offsets[q:stop + 1] - lo
        unary = potentials.unary[lo:hi]
        edges = (np.broadcast_to(potentials.transitions, (hi - lo,
                                                          *potentials.transitions.shape)).copy()
                 if potentials.edges is None else potentials.edges[lo:hi])
        posteriors = chain_posteriors(ChainScores(unary, potentials.transitions,
                                                  potentials.start, potentials.end,
                                                  edges=edges), part, with_counts=True)
        owner = np.repeat(np.arange(stop - q), lengths[q:stop])
        per_token = _entropy_terms(posteriors.marginals, unary).sum(axis=1)
        per_token += _entropy_terms(posteriors.pair_marginals, edges).sum(axis=(1, 2))
        expected = np.bincount(owner, weights=per_token, minlength=stop - q)
        nonempty = lengths[q:stop] > 0
        first, last = part[:-1][nonempty], part[1:][nonempty] - 1
        expected[nonempty] += _entropy_terms(posteriors.marginals[first],
                                             potentials.start).sum(1)
        expected[nonempty] += _entropy_terms(posteriors.marginals[last],
                                             potentials.end).sum(1)
        # the pass's own log Z: the expected score is relative to its scores
        entropy[q:stop] = np.maximum(posteriors.log_z - expected, 0.0)
        q = stop
    return entropy


def uncertainty_scores(model: Any, X: FeatureSequences, *,
                       scores: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Per-sequence uncertainty of a fitted model, for choosing what to annotate.

    Parameters
    ----------
    model : estimator
        A fitted :class:`~skcrf.CRFClassifier`, :class:`~skcrf.SemiMarkovCRF`
        or :class:`~skcrf.TreeCRF`, or a fitted Pipeline that ends in one.
    X : list of sequences, or SequenceMatrix
    scores : list of str, default=None
        The scores to compute, among :data:`UNCERTAINTY_SCORES`; None for
        all. ``margin`` needs an n-best pass, ``sequence_entropy`` a pass
        with label-pair marginals: leave them out of a loop that does not
        read them.

    Returns
    -------
    scores : dict of str to ndarray of shape (n_sequences,)
        The scores asked for (see the module's description), in the order
        of :data:`UNCERTAINTY_SCORES`; an empty sequence scores 0
        (``margin`` 1).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrf import CRFClassifier
    >>> from skcrf.uncertainty import uncertainty_scores
    >>> X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "c"}]] * 5
    >>> y = [["A", "B"], ["B", "B"]] * 5
    >>> crf = CRFClassifier(max_iter=20).fit(X, y)
    >>> scores = uncertainty_scores(crf, [[{"w": "a"}], [{"w": "z"}, {"w": "z"}]])
    >>> order = np.argsort(-scores["least_confidence"])  # the least sure first
    >>> order.tolist()
    [1, 0]
    """
    wanted = UNCERTAINTY_SCORES if scores is None else tuple(scores)
    unknown = [name for name in wanted if name not in UNCERTAINTY_SCORES]
    if isinstance(scores, str) or unknown:
        raise ValueError(f"scores must be a list of names among {list(UNCERTAINTY_SCORES)}; "
                         f"got {scores!r}.")
    final, X = _model_and_input(model, X)
    if not hasattr(final, "_fitted_model"):
        raise TypeError(f"uncertainty_scores needs a fitted CRF estimator of skcrf (or a "
                        f"Pipeline that ends in one); got a {type(final).__name__}.")
    fitted = final._fitted_model()
    features, offsets = fitted._features(X)
    lengths = np.diff(offsets)
    n_sequences = lengths.shape[0]
    owner = np.repeat(np.arange(n_sequences), lengths)
    result = {}
    with kernel_threads(fitted.n_jobs, n_tokens=offsets[-1]):
        potentials = fitted._potentials(features, offsets)
        log_z, marginals = fitted._posteriors(potentials, offsets)
        if {"least_confidence", "margin", "expected_errors"} & set(wanted):
            best = fitted._viterbi(potentials, offsets)
            best_scores = fitted._labelling_scores(potentials, offsets, best)
            with np.errstate(invalid="ignore"):
                p_best = np.exp(np.minimum(best_scores - log_z, 0.0))
            p_best[lengths == 0] = 1.0
            result["least_confidence"] = 1.0 - p_best
        if "margin" in wanted:
            nbest = final.predict_nbest(X, n=2)
            second = np.array([pairs[1][1] if len(pairs) > 1 else 0.0 for pairs in nbest])
            result["margin"] = p_best - second
        with np.errstate(divide="ignore", invalid="ignore"):
            token_entropy = -np.where(marginals > 0, marginals * np.log(marginals), 0.0).sum(1)
        entropy_sum = np.bincount(owner, weights=token_entropy, minlength=n_sequences)
        result["token_entropy_sum"] = entropy_sum
        result["token_entropy_mean"] = np.divide(entropy_sum, lengths,
                                                 out=np.zeros(n_sequences), where=lengths > 0)
        if "expected_errors" in wanted:
            right = marginals[np.arange(best.shape[0]), best]
            result["expected_errors"] = np.bincount(owner, weights=1.0 - right,
                                                    minlength=n_sequences)
        if "sequence_entropy" in wanted:
            entropy = None
            if not hasattr(fitted, "segment_classes_") and not hasattr(fitted, "root_coef_"):
                entropy = _order1_sequence_entropy(potentials, offsets)
            result["sequence_entropy"] = (np.full(n_sequences, np.nan) if entropy is None
                                          else entropy)
    return {name: result[name] for name in UNCERTAINTY_SCORES if name in wanted}
