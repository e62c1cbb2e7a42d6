"""Comparing the predictions of two fits (or two kernels) of one model, robust to near-ties.

Two fits equal to 1e-9 (a distributed and a local fit, a refit, another kernel
on the same weights) may still tip a near-tie of two labellings either way:
comparing their predictions exactly then depends on the rounding, not on the
code. :func:`assert_same_predictions` compares exactly wherever one labelling
is clearly best, and where the predictions differ asks that both models give
the two labellings the same probability, to ``atol``: a tie.
"""

import numpy as np


def _pick(X, rows):
    """Sequences ``rows`` of a list of sequences or of a SequenceMatrix."""
    return X.take(rows) if hasattr(X, "take") else [X[q] for q in rows]


def assert_same_predictions(a, b, X, *, X_b=None, atol=1e-6):
    """``a.predict(X)`` equals ``b.predict(X_b)`` but where the two labellings tie under both.

    Parameters
    ----------
    a, b : fitted estimators with ``predict`` and ``sequence_log_proba``
    X : list of sequences or SequenceMatrix
    X_b : list of sequences or SequenceMatrix, default=None
        The same sequences in the form ``b`` takes (another representation of
        the same values); None for ``X``.
    atol : float
        How close the log probabilities of two differing labellings must be,
        under each model, to count as a tie.

    Returns
    -------
    n_ties : int
        How many sequences differ (each a tie): callers may bound it.
    """
    X_b = X if X_b is None else X_b
    left, right = a.predict(X), b.predict(X_b)
    assert len(left) == len(right)
    differ = [q for q, (p, r) in enumerate(zip(left, right)) if not np.array_equal(p, r)]
    if not differ:
        return 0
    for model, data in ((a, X), (b, X_b)):
        sequences = _pick(data, differ)
        np.testing.assert_allclose(
            model.sequence_log_proba(sequences, [left[q] for q in differ]),
            model.sequence_log_proba(sequences, [right[q] for q in differ]), rtol=0,
            atol=atol, err_msg=f"sequences {differ} are predicted differently, not as ties")
    return len(differ)
