"""Tags <-> segmentations: how SemiMarkovCRF reads tag sequences and writes its segments back.

A :class:`_SegmentTags` codec knows a tagging scheme and the segment labels:
it turns training tags into segment codes, segmentations into tags and
role marginals into tag marginals, reads given tags back as a segmentation
(to score them), and turns fixed tags into constraints on segmentations.
"""

import numpy as np

from ..inference.semimarkov.passes import COVERED, FIRST, LAST, N_ROLES, REPEAT, SINGLE
from ..inference.semimarkov.queries import CUT, NO_REPEAT
from ..structures.semimarkov.segment_scores import Segmentation, segment_codes
from ..tags import Segment, _scheme_counts, _scheme_of_counts, _spans

_OUTSIDE = "O"
#: A role row derived from REPEAT: a segment of the same label starts at the next token.
_REPEAT_NEXT = N_ROLES

#: For each scheme, each prefix's tag probability as a signed sum of role marginals.
_PREFIX_ROLES = {
    "IOB2": {"B": ((1, FIRST),), "I": ((1, COVERED), (-1, FIRST))},
    "IOB1": {"B": ((1, REPEAT),), "I": ((1, COVERED), (-1, REPEAT))},
    "IOE2": {"E": ((1, LAST),), "I": ((1, COVERED), (-1, LAST))},
    "IOE1": {"E": ((1, _REPEAT_NEXT),), "I": ((1, COVERED), (-1, _REPEAT_NEXT))},
    "BIOES": {"S": ((1, SINGLE),), "B": ((1, FIRST), (-1, SINGLE)),
              "E": ((1, LAST), (-1, SINGLE)),
              "I": ((1, COVERED), (-1, FIRST), (-1, LAST), (1, SINGLE))},
}
_PREFIX_ROLES["BILOU"] = {{"S": "U", "E": "L"}.get(p, p): terms
                          for p, terms in _PREFIX_ROLES["BIOES"].items()}

#: For each scheme, what fixing a tag of each prefix says about the segments:
#: a segment starts (``first``) or ends (``last``) at the token or not, the
#: segment before (``repeat``) or after (``repeat_next``) has its label or not.
#: The same reading of the tags as :data:`_PREFIX_ROLES`.
_FIXED_PREFIXES = {
    "IOB2": {"B": ("first",), "I": ("not_first",)},
    "IOB1": {"B": ("repeat",), "I": ("not_repeat",)},
    "IOE2": {"E": ("last",), "I": ("not_last",)},
    "IOE1": {"E": ("repeat_next",), "I": ("not_repeat_next",)},
    "BIOES": {"S": ("first", "last"), "B": ("first", "not_last"),
              "E": ("last", "not_first"), "I": ("not_first", "not_last")},
}
_FIXED_PREFIXES["BILOU"] = {{"S": "U", "E": "L"}.get(p, p): conditions
                            for p, conditions in _FIXED_PREFIXES["BIOES"].items()}


def _keep_only(state, rows, labels):
    """Give every label but ``labels[k]`` a ``-inf`` state score at ``rows[k]``, in place."""
    kept = state[rows, labels]
    state[rows] = -np.inf
    state[rows, labels] = kept


class _SegmentTags:
    """Tags <-> segmentations for one scheme and set of segment labels.

    With a scheme of prefixes the segment labels are the span types, sorted,
    then ``"O"``, whose segments are single tokens; the tags are every tag the
    scheme writes for those types. With ``"plain"`` every maximal run of one
    label is a segment, so consecutive segments never share a label, and the
    tags are the labels.
    """

    def __init__(self, scheme, segment_classes):
        self.scheme = scheme
        self.segment_classes = segment_classes
        self.plain = scheme == "plain"
        terms = []  # (tag, role, segment label id, sign)
        if self.plain:
            terms = [(label, COVERED, y, 1) for y, label in enumerate(segment_classes)]
        else:
            for y, type_ in enumerate(segment_classes[:-1]):
                for prefix, signed in _PREFIX_ROLES[scheme].items():
                    tag = f"{prefix}-{type_}" if type_ else prefix
                    terms += [(tag, role, y, sign) for sign, role in signed]
            terms.append((_OUTSIDE, COVERED, len(segment_classes) - 1, 1))
        self.classes = np.asarray(sorted({tag for tag, *_ in terms}))
        column = {tag: k for k, tag in enumerate(self.classes.tolist())}
        self.terms = [(column[tag], role, y, sign) for tag, role, y, sign in terms]
        # each tag's segment label and what its prefix says, for fix()
        self._tag_labels = np.zeros(len(self.classes), dtype=np.int64)
        for tag, _, y, _ in terms:
            self._tag_labels[column[tag]] = y
        conditions = sorted({c for rules in _FIXED_PREFIXES.values() for p in rules.values()
                             for c in p})
        self._tag_conditions = {c: np.zeros(len(self.classes), dtype=bool) for c in conditions}
        if not self.plain:
            for tag, k in column.items():
                if tag != _OUTSIDE:
                    for condition in _FIXED_PREFIXES[scheme][tag.partition("-")[0]]:
                        self._tag_conditions[condition][k] = True

    @classmethod
    def fit(cls, flat, offsets, scheme):
        """The codec of training tags and their :func:`segment_codes`."""
        lengths = np.diff(offsets)
        if scheme == "auto":
            scheme = cls.detected_scheme(set(flat), _scheme_counts(flat, lengths))
        if scheme == "plain":
            codec = cls.of_labels(scheme, set(flat))
        else:
            codec = cls.of_labels(scheme, set(_spans(list(flat), lengths, scheme)[3].tolist()))
        return codec, codec.codes(flat, offsets)

    @staticmethod
    def detected_scheme(distinct, counts):
        """The scheme ``"auto"`` reads: that of :func:`~skcrf.tags.detect_scheme`, for str tags.

        ``distinct`` are the training tags and ``counts`` their
        :func:`~skcrf.tags._scheme_counts`; labels that are not all str are
        ``"plain"``.
        """
        if all(isinstance(tag, str) for tag in distinct):
            return _scheme_of_counts(distinct, counts)
        return "plain"

    @classmethod
    def of_labels(cls, scheme, labels):
        """The codec of a scheme and its segment labels' set (the span types, or plain labels).

        The types are sorted and ``"O"`` added; plain labels are sorted as
        ``np.unique`` sorts them.
        """
        if scheme == "plain":
            return cls(scheme, np.unique(np.asarray(list(labels))))
        return cls(scheme, np.asarray(sorted(labels) + [_OUTSIDE], dtype=object))

    def codes(self, flat, offsets):
        """The :func:`segment_codes` of tags (a list over all tokens)."""
        segmentation = self.segmentation_of(flat, offsets)
        return segment_codes(segmentation.label_ids, segmentation.starts,
                             len(self.segment_classes))

    def segmentation_of(self, flat, offsets):
        """The :class:`Segmentation` tags encode, read as conlleval reads them.

        ``flat`` holds every token's tag (a list); the tags' types must be
        segment labels of this codec.
        """
        lengths = np.diff(offsets)
        n_tokens = len(flat)
        starts = np.ones(n_tokens, dtype=bool)
        if self.plain:
            index = {label: y for y, label in enumerate(self.segment_classes.tolist())}
            label_ids = np.fromiter(map(index.__getitem__, flat), dtype=np.int64,
                                    count=n_tokens)
            starts[1:] = label_ids[1:] != label_ids[:-1]
        else:
            _, span_starts, span_stops, types = _spans(list(flat), lengths, self.scheme)
            label_ids = np.full(n_tokens, self.outside, dtype=np.int64)
            type_ids = np.searchsorted(self.segment_classes[:-1].astype(str), types.astype(str))
            inside = np.zeros(n_tokens + 1, dtype=np.int64)
            np.add.at(inside, span_starts, 1)
            np.add.at(inside, span_stops, -1)
            covered = np.cumsum(inside[:-1]) > 0
            span_of = np.cumsum(np.isin(np.arange(n_tokens), span_starts)) - 1
            label_ids[covered] = type_ids[span_of[covered]]
            starts[covered] = False
            starts[span_starts] = True
        starts[offsets[:-1][lengths > 0]] = True
        return Segmentation(label_ids, starts)

    def read(self, tag_ids, offsets):
        """The segmentation given tags encode, and which sequences' tags this codec writes.

        ``tag_ids`` index ``classes``. A sequence of tags that is not the
        well-formed writing of its segments (an ``I-X`` opening a span in
        IOB2) is never a prediction: it is flagged False.

        Returns
        -------
        segmentation : Segmentation
        written : ndarray of bool of shape (n_sequences,)
        """
        segmentation = self.segmentation_of(self.classes[tag_ids].tolist(), offsets)
        differs = self.tag_ids(segmentation, offsets) != tag_ids
        owner = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
        written = np.ones(offsets.shape[0] - 1, dtype=bool)
        written[owner[differs]] = False
        return segmentation, written

    def fix(self, scores, fixed_ids, offsets):
        """Make ``scores`` allow only segmentations written with the fixed tags, in place.

        A fixed tag fixes its token's segment label (``-inf`` state scores
        for the others) and what its prefix says about segments (see
        :data:`_FIXED_PREFIXES`): a ``-inf`` row of ``first`` or ``last`` for
        "no segment starts / ends here", boundary flags
        (:mod:`skcrf.inference.semimarkov.queries`) for "one starts here" and
        for the label of the segment before. ``fixed_ids`` holds a class id
        per token, -1 for a free token.
        """
        rows = np.flatnonzero(fixed_ids >= 0)
        n_tokens = fixed_ids.shape[0]
        labels = self._tag_labels[fixed_ids[rows]]
        _keep_only(scores.state, rows, labels)
        nonempty = np.diff(offsets) > 0
        heads = np.zeros(n_tokens, dtype=bool)
        heads[offsets[:-1][nonempty]] = True
        tails = np.zeros(n_tokens, dtype=bool)
        tails[offsets[1:][nonempty] - 1] = True
        boundaries = np.zeros(n_tokens, dtype=np.int8)
        for condition, holds in self._tag_conditions.items():
            chosen = holds[fixed_ids[rows]]
            at, label = rows[chosen], labels[chosen]
            if condition == "first":
                boundaries[at] |= CUT
            elif condition == "not_first":
                scores.first[at] = -np.inf
            elif condition == "last":
                boundaries[at[~tails[at]] + 1] |= CUT
            elif condition == "not_last":
                scores.last[at] = -np.inf
            elif condition == "repeat":  # the segment before has the same label
                scores.state[at[heads[at]]] = -np.inf
                inner = ~heads[at]
                boundaries[at[inner]] |= CUT
                _keep_only(scores.state, at[inner] - 1, label[inner])
            elif condition == "not_repeat":
                boundaries[at] |= NO_REPEAT
            elif condition == "repeat_next":  # the segment after has the same label
                scores.state[at[tails[at]]] = -np.inf
                inner = ~tails[at]
                boundaries[at[inner] + 1] |= CUT
                _keep_only(scores.state, at[inner] + 1, label[inner])
            elif condition == "not_repeat_next":
                boundaries[at[~tails[at]] + 1] |= NO_REPEAT
        # a sequence's first token always starts a segment
        boundaries[heads] = 0
        scores.boundaries = boundaries if boundaries.any() else None

    @property
    def outside(self):
        """Id of the outside label, whose segments are single tokens, or None."""
        return None if self.plain else len(self.segment_classes) - 1

    def tag_marginals(self, roles, offsets):
        """(n_tokens, n_classes) tag probabilities from (n_tokens, N_ROLES, C) role marginals."""
        n_tokens = roles.shape[0]
        repeat_next = np.zeros((n_tokens, roles.shape[2]))
        repeat_next[:-1] = roles[1:, REPEAT]  # 0 on the first token of a sequence
        marginals = np.zeros((n_tokens, self.classes.shape[0]))
        for column, role, y, sign in self.terms:
            values = repeat_next[:, y] if role == _REPEAT_NEXT else roles[:, role, y]
            marginals[:, column] += sign * values
        # differences of probabilities may round a hair below 0
        return np.maximum(marginals, 0.0, out=marginals)

    def tag_ids(self, segmentation, offsets):
        """Index in ``classes`` of each token's tag in a segmentation."""
        roles = segmentation.role_indicators(offsets, len(self.segment_classes))
        return np.argmax(self.tag_marginals(roles, offsets), axis=1)

    def segments(self, segmentation, offsets):
        """Per sequence, the list of :class:`~skcrf.tags.Segment` but those outside."""
        first, stops, labels, sequence = segmentation.bounds(offsets)
        keep = labels != self.outside
        if self.plain:
            keep &= np.asarray([label != _OUTSIDE for label in self.segment_classes])[labels]
        names = self.segment_classes[labels].tolist()
        result = [[] for _ in range(offsets.shape[0] - 1)]
        for k in np.flatnonzero(keep).tolist():
            q = sequence[k]
            result[q].append(Segment(int(first[k] - offsets[q]), int(stops[k] - offsets[q]),
                                     names[k]))
        return result


