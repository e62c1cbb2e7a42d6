"""Synthetic numeric sequences: hidden states with sticky transitions, Gaussian emissions."""

from __future__ import annotations

import numbers
from typing import Optional, Union

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import check_random_state

__all__ = ["make_sequence_classification"]


def make_sequence_classification(
        n_sequences: int = 100, *, n_features: int = 2, n_classes: int = 3,
        length_range: tuple[int, int] = (20, 50), stickiness: float = 0.9,
        class_sep: float = 1.0, noise: float = 1.0, return_lengths: bool = False,
        random_state: Optional[Union[int, np.random.RandomState]] = None,
) -> Union[tuple[list[NDArray[np.float64]], list[NDArray[np.int64]]],
           tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]]:
    """Generate labelled numeric sequences from a sticky hidden Markov model.

    Each sequence is a walk over ``n_classes`` hidden states: the first state
    is drawn uniformly, and at each step the walk stays where it is with
    probability ``stickiness``, else it jumps to one of the other states
    uniformly. Each token emits a vector of ``n_features`` numbers drawn
    from a Gaussian around its state's mean (the means are drawn once, with
    spread ``class_sep``; the noise has standard deviation ``noise`` in every
    feature). The labels are the states.

    With overlapping emissions a per-token classifier confuses the states
    that a sequence model tells apart from the neighbours: the labels
    follow each other in runs. The sequences are what every skcrf estimator
    takes as ``X``: a list of 2-D arrays, one per sequence.

    The states' means come from ``random_state`` too, so two calls with
    different seeds make two different tasks: for training and test sets,
    make the sequences in one call and split them.

    Parameters
    ----------
    n_sequences : int, default=100
        The number of sequences.
    n_features : int, default=2
        The numbers each token carries.
    n_classes : int, default=3
        The number of hidden states, hence of labels (``0`` to ``n_classes - 1``).
    length_range : tuple of (int, int), default=(20, 50)
        The lengths of the sequences are drawn uniformly from ``low`` to
        ``high``, both included; ``low`` may be 0.
    stickiness : float in [0, 1], default=0.9
        The probability that a token keeps the state of the token before it.
        ``1 / n_classes`` makes the states independent of each other.
    class_sep : float, default=1.0
        The standard deviation of the states' means around 0: larger values
        make the states easier to tell apart from one token alone.
    noise : float, default=1.0
        The standard deviation of the emissions around their state's mean.
    return_lengths : bool, default=False
        If True, return the tokens of all sequences stacked in one array
        plus their lengths (hmmlearn's convention) instead of a list of
        arrays; :func:`skcrf.features.from_lengths` reads that back.
    random_state : int, RandomState instance or None, default=None
        Determines the means, the lengths, the walks and the emissions. Pass an
        int for the same data at every call.

    Returns
    -------
    X : list of ndarray of shape (n_tokens_q, n_features)
        The emissions of each sequence (float64). With ``return_lengths``, one
        array of shape (n_tokens, n_features) instead.
    y : list of ndarray of int of shape (n_tokens_q,)
        The hidden states of each sequence. With ``return_lengths``, one array
        of shape (n_tokens,) instead.
    lengths : ndarray of int of shape (n_sequences,)
        Only with ``return_lengths``: the length of each sequence.

    See Also
    --------
    sklearn.datasets.make_classification : Independent samples, no sequences.

    Examples
    --------
    >>> from skcrf.datasets import make_sequence_classification
    >>> X, y = make_sequence_classification(3, n_features=4, length_range=(5, 8),
    ...                                     random_state=0)
    >>> len(X), X[0].shape[1], [len(s) for s in X] == [len(s) for s in y]
    (3, 4, True)
    >>> X, y, lengths = make_sequence_classification(
    ...     3, length_range=(5, 8), return_lengths=True, random_state=0)
    >>> bool(X.shape[0] == y.shape[0] == lengths.sum())
    True
    """
    _check_count("n_sequences", n_sequences, 0)
    _check_count("n_features", n_features, 1)
    _check_count("n_classes", n_classes, 1)
    try:
        low, high = (int(length) for length in length_range)
    except (TypeError, ValueError):
        raise ValueError(f"length_range must be a pair of integers (low, high); got "
                         f"{length_range!r}.") from None
    if not 0 <= low <= high:
        raise ValueError(f"length_range must satisfy 0 <= low <= high; got {length_range!r}.")
    if not 0.0 <= stickiness <= 1.0:
        raise ValueError(f"stickiness must be a probability in [0, 1]; got {stickiness!r}.")
    for name, value in (("class_sep", class_sep), ("noise", noise)):
        if not (isinstance(value, numbers.Real) and np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0; got {value!r}.")
    rng = check_random_state(random_state)

    means = rng.normal(scale=class_sep, size=(n_classes, n_features))
    lengths = rng.randint(low, high + 1, size=n_sequences).astype(np.int64)
    n_tokens = int(lengths.sum())
    # A walk over all tokens at once: a token jumps with probability
    # 1 - stickiness by a step of 1 to n_classes - 1 (so it lands on another
    # state), and every sequence's first token draws its state afresh; the
    # state is the sum of the moves since the sequence began, modulo n_classes.
    first = np.cumsum(lengths) - lengths
    jumps = rng.random_sample(n_tokens) >= stickiness
    moves = np.where(jumps, rng.randint(1, max(n_classes, 2), size=n_tokens), 0)
    nonempty = lengths > 0
    moves[first[nonempty]] = rng.randint(n_classes, size=int(nonempty.sum()))
    walked = np.cumsum(moves)
    before = np.repeat((walked - moves)[first[nonempty]], lengths[nonempty])
    states = (walked - before) % n_classes
    emissions = means[states] + rng.normal(scale=noise, size=(n_tokens, n_features))

    if return_lengths:
        return emissions, states, lengths
    bounds = np.cumsum(lengths)[:-1]
    return np.split(emissions, bounds), np.split(states, bounds)


def _check_count(name, value, low):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
