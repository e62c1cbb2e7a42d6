"""Partially labelled sequences for semi-Markov structures: token constraints on segments.

A token whose label is unknown or one of a set restricts the segments that
may cover it: a segment of label ``y`` over tokens ``a:b`` is consistent
when every token in ``a:b`` allows ``y``. Every segment covering a token
scores that token's state score for its label, so adding ``-inf`` to the
state scores of the disallowed (token, label) cells removes exactly the
inconsistent segments, and the objective is the chain's::

    -log sum_{consistent segmentations s} p(s | x) = log Z(x) - log Z_allowed(x)

:class:`~skcrf.learning.partial.ConstrainedTerms` computes it for a
:class:`~skcrf.structures.semimarkov.structure.SemiMarkovStructure` given
the (n_tokens, n_labels) mask of :func:`segment_label_mask` (its free term
by the structure's fused kernel, its constrained one by the unfused segment
forward-backward on the masked scores).

How tags map to segment labels: under a prefixed scheme (IOB2, BIOES, ...)
the segment labels are the span types and ``"O"`` (single-token segments);
a tag set allows the segment labels of its tags, whatever their prefixes
(``{"B-PER", "I-PER"}`` and ``{"B-PER"}`` both allow ``PER``; ``"O"``
allows ``O``); an unknown token allows every label. The prefixes' boundary
information (``B-`` starts a segment, ``I-`` continues one) is not used:
the consistent segmentations are those of the allowed labels, a superset of
those the prefixes would allow.
"""

import numpy as np

_OUTSIDE = "O"


def tag_segment_label(tag, scheme):
    """The segment label of one tag: its type under a prefixed scheme, else the tag itself."""
    if scheme is None or tag == _OUTSIDE:
        return tag
    _, _, kind = str(tag).partition("-")
    return kind if kind else tag


def segment_label_mask(allowed_tags, tag_classes, segment_classes, scheme):
    """Which segment label each token allows, from which tags it allows.

    Parameters
    ----------
    allowed_tags : ndarray of bool of shape (n_tokens, n_tags)
        Token ``t`` may take tag ``tag_classes[k]`` where ``allowed_tags[t, k]``.
    tag_classes : sequence of str of length n_tags
    segment_classes : sequence of str of length n_labels
    scheme : str or None
        The tagging scheme (``"IOB2"``...), or None for plain labels (each
        tag its own segment label).

    Returns
    -------
    ndarray of float64 of shape (n_tokens, n_labels)
        0 where the token allows the segment label, ``-inf`` where not.

    Raises
    ------
    ValueError
        Naming the tag whose segment label is not among ``segment_classes``.
    """
    position = {label: j for j, label in enumerate(segment_classes)}
    to_segment = np.zeros((len(tag_classes), len(segment_classes)), dtype=bool)
    for k, tag in enumerate(tag_classes):
        label = tag_segment_label(tag, scheme)
        if label not in position:
            raise ValueError(f"The tag {tag!r} reads as the segment label {label!r}, which "
                             f"is not among the segment labels {list(segment_classes)!r}.")
        to_segment[k, position[label]] = True
    allowed = (np.asarray(allowed_tags, dtype=np.float64) @ to_segment) > 0
    return np.where(allowed, 0.0, -np.inf)


