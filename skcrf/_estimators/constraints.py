"""Allowed label transitions: from the estimators' ``allowed_transitions`` to boolean masks.

A CRF with constraints gives a forbidden transition (and a forbidden first or
last label) the score ``-inf``, in training and in prediction, so that no
labelling it returns breaks them. This module turns the parameter into masks
over the sorted classes, checks the training labels against them, and, for
the constraints of a tagging scheme, repairs the few malformed training
sequences corpora have (CoNLL-2002's Spanish training set has one) the way
conlleval reads them.

The forms of ``allowed_transitions``:

- a tagging scheme, from the tag names (:mod:`skcrf.tags`): ``"bio"``
  (IOB2: ``I-X`` only after ``B-X`` or ``I-X``, never first), ``"bioes"``
  (BIOES, or BILOU for tags with ``L-``/``U-``: also ``B-X``/``I-X`` only
  before ``I-X``/``E-X``, ``E-X`` only after ``B-X``/``I-X``, a sequence
  starts on ``O``, ``B-`` or ``S-`` and ends on ``O``, ``E-`` or ``S-``),
  ``"auto"`` (the scheme :func:`~skcrf.tags.detect_scheme` reads in the
  training tags; no constraint for plain labels), or a scheme's own name
  (``"IOB1"``, ``"IOE2"``, ...);
- a set (or list) of allowed ``(from, to)`` label pairs;
- a dict from a label to the labels allowed after it (a label the dict
  lacks may be followed by any);
- a boolean numpy array of shape (n_classes, n_classes), ``[from, to]``,
  over the sorted classes.

The last three constrain transitions only; a scheme also constrains the
first and last label.
"""

from dataclasses import dataclass

import numpy as np

from ..tags import SCHEMES, detect_scheme, segments_to_tags, tags_to_segments

#: The string forms: shorthands and the schemes of :mod:`skcrf.tags` that have prefixes.
SCHEME_NAMES = ("bio", "bioes", "auto", *(s for s in SCHEMES if s != "plain"))

_OUTSIDE = "O"
_ALIASES = {"L": "E", "U": "S"}  # BILOU reads as BIOES
_PREFIXES = {"IOB2": "BI", "IOB1": "BI", "IOE2": "IE", "IOE1": "IE", "BIOES": "BIES",
             "BILOU": "BILU"}

#: Per scheme (BILOU's prefixes read as BIOES's): the prefixes a sequence may
#: not start or end on, and the pair rules: a tag of prefix ``must_follow`` needs just
#: before it a tag of the same type with a prefix in ``opens``, and a tag of
#: prefix ``must_precede`` needs just after it one of the same type with a
#: prefix in ``continues``.
_RULES = {
    "IOB2": dict(no_start="I", no_end="", must_follow="I", opens="BI",
                 must_precede="", continues=""),
    "IOB1": dict(no_start="B", no_end="", must_follow="B", opens="BI",
                 must_precede="", continues=""),
    "IOE2": dict(no_start="", no_end="I", must_follow="", opens="",
                 must_precede="I", continues="IE"),
    "IOE1": dict(no_start="", no_end="E", must_follow="", opens="",
                 must_precede="E", continues="IE"),
    "BIOES": dict(no_start="IE", no_end="BI", must_follow="IE", opens="BI",
                  must_precede="BI", continues="IE"),
}
_RULES["BILOU"] = _RULES["BIOES"]


@dataclass
class TransitionConstraints:
    """Which labels may follow which, and which may start or end a sequence.

    Attributes
    ----------
    allowed : ndarray of bool of shape (n_classes, n_classes)
        ``[from, to]``, over the sorted classes.
    start, end : ndarray of bool of shape (n_classes,)
    scheme : str or None
        The tagging scheme whose rules these are (None for explicit pairs):
        malformed training tags of a scheme can be repaired.
    """

    allowed: np.ndarray
    start: np.ndarray
    end: np.ndarray
    scheme: str = None

    @classmethod
    def none(cls, n_classes):
        """No constraint at all."""
        return cls(np.ones((n_classes, n_classes), dtype=bool), np.ones(n_classes, dtype=bool),
                   np.ones(n_classes, dtype=bool))

    def masks(self):
        """(transitions, start, end) additive masks: 0 where allowed, -inf where not."""
        def mask(allowed):
            return np.where(allowed, 0.0, -np.inf)

        return mask(self.allowed), mask(self.start), mask(self.end)

    @property
    def any(self):
        """Whether anything is forbidden."""
        return not (self.allowed.all() and self.start.all() and self.end.all())

    def first_violation(self, label_ids, offsets):
        """(sequence, token, what) of the first label that breaks the constraints, or None.

        ``what`` is ``"start"``, ``"end"`` or ``"pair"`` (the token and the one
        before it).
        """
        bad = self.violations(label_ids, offsets)
        if not bad.any():
            return None
        t = int(np.argmax(bad))
        q = int(np.searchsorted(offsets, t, side="right") - 1)
        lo, hi = offsets[q], offsets[q + 1]
        if t > lo and not self.allowed[label_ids[t - 1], label_ids[t]]:
            return q, int(t - lo), "pair"
        if t == lo and not self.start[label_ids[t]]:
            return q, 0, "start"
        return q, int(hi - 1 - lo), "end"

    def violations(self, label_ids, offsets):
        """(n_tokens,) bool: the tokens whose label (or label pair with the one before) is forbidden."""
        n_tokens = label_ids.shape[0]
        bad = np.zeros(n_tokens, dtype=bool)
        if n_tokens == 0:
            return bad
        nonempty = np.diff(offsets) > 0
        firsts, lasts = offsets[:-1][nonempty], offsets[1:][nonempty] - 1
        follows = np.ones(n_tokens, dtype=bool)
        follows[firsts] = False
        to = np.flatnonzero(follows)
        bad[to] = ~self.allowed[label_ids[to - 1], label_ids[to]]
        bad[firsts] |= ~self.start[label_ids[firsts]]
        bad[lasts] |= ~self.end[label_ids[lasts]]
        return bad

    def bad_sequences(self, label_ids, offsets):
        """Indices of the sequences with a forbidden label or pair."""
        bad = self.violations(label_ids, offsets)
        owner = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
        return np.unique(owner[bad])


def _tag_parts(label, scheme, spec):
    """(prefix, type) of a tag, BILOU's read as BIOES's; ("O", None) outside.

    Raises ValueError for a label that is not a tag of the scheme.
    """
    if not isinstance(label, str):
        raise ValueError(
            f"allowed_transitions={spec!r} reads the labels as tags, but {label!r} is of "
            f"type {type(label).__name__}; give explicit pairs for labels that are not tags.")
    if label == _OUTSIDE:
        return _OUTSIDE, None
    prefix, _, type_ = label.partition("-")
    if len(prefix) != 1 or prefix not in _PREFIXES[scheme]:
        raise ValueError(
            f"allowed_transitions={spec!r} reads the labels as {scheme} tags, but "
            f"{label!r} is not one (expected 'O' or a prefix of "
            f"{', '.join(p + '-' for p in _PREFIXES[scheme])}).")
    return _ALIASES.get(prefix, prefix), type_


def scheme_constraints(classes, scheme, spec=None):
    """The constraints of a tagging scheme over ``classes`` (str tags).

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
        Sorted tags.
    scheme : str
        A scheme of :data:`skcrf.tags.SCHEMES`; ``"plain"`` forbids nothing.
    spec : object, default=None
        The parameter as given, for messages.

    Returns
    -------
    TransitionConstraints
    """
    n_classes = len(classes)
    if scheme == "plain":
        constraints = TransitionConstraints.none(n_classes)
        constraints.scheme = "plain"
        return constraints
    rules = _RULES[scheme]
    parts = [_tag_parts(label, scheme, spec if spec is not None else scheme)
             for label in classes.tolist()]
    start = np.array([p not in rules["no_start"] for p, _ in parts], dtype=bool)
    end = np.array([p not in rules["no_end"] for p, _ in parts], dtype=bool)
    allowed = np.ones((n_classes, n_classes), dtype=bool)
    for i, (p, t) in enumerate(parts):
        for j, (q, u) in enumerate(parts):
            if q in rules["must_follow"] and not (p in rules["opens"] and t == u):
                allowed[i, j] = False
            if p in rules["must_precede"] and not (q in rules["continues"] and t == u):
                allowed[i, j] = False
    return TransitionConstraints(allowed, start, end, scheme)


def _scheme_of(spec, classes, tag_sequences):
    """The scheme a string form names, reading the training tags for "auto" and "bioes"."""
    if spec == "bio":
        return "IOB2"
    if spec == "bioes":
        prefixes = {str(label).partition("-")[0] for label in classes.tolist()}
        return "BILOU" if prefixes & {"L", "U"} else "BIOES"
    if spec == "auto":
        # labels that are not str are no tags: "plain", which forbids nothing
        if not all(isinstance(label, str) for label in classes.tolist()):
            return "plain"
        return detect_scheme(tag_sequences())
    return spec


def explicit_constraints(spec, classes, name="allowed_transitions"):
    """Constraints from allowed pairs, a dict of successors, or a boolean matrix over ``classes``.

    Raises ValueError naming a label that is not a class, or a matrix of the
    wrong shape or type.
    """
    n_classes = len(classes)
    index = {label: k for k, label in enumerate(classes.tolist())}

    def id_of(label):
        key = label.item() if isinstance(label, np.generic) else label
        if key not in index:
            listed = ", ".join(map(repr, classes.tolist()[:10]))
            raise ValueError(f"{name} names the label {label!r}, which is not a class of the "
                             f"training labels ({listed}{', ...' if n_classes > 10 else ''}).")
        return index[key]

    constraints = TransitionConstraints.none(n_classes)
    if isinstance(spec, dict):
        for label, followers in spec.items():
            row = id_of(label)
            if isinstance(followers, str) or not hasattr(followers, "__iter__"):
                raise ValueError(f"{name}[{label!r}] must be a collection of labels; got "
                                 f"{followers!r}.")
            constraints.allowed[row] = False
            for follower in followers:
                constraints.allowed[row, id_of(follower)] = True
        return constraints
    if isinstance(spec, np.ndarray):
        matrix = spec
        if matrix.dtype != bool or matrix.shape != (n_classes, n_classes):
            raise ValueError(
                f"{name} as a matrix must be a boolean array of shape (n_classes, n_classes) "
                f"= ({n_classes}, {n_classes}) over the sorted classes; got "
                f"{matrix.dtype} of shape {matrix.shape}.")
        constraints.allowed = matrix.copy()
        return constraints
    constraints.allowed[:] = False
    for k, pair in enumerate(spec):
        if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name} as pairs must hold (from, to) label pairs; item {k} is "
                             f"{pair!r}.")
        constraints.allowed[id_of(pair[0]), id_of(pair[1])] = True
    return constraints


def resolve_constraints(spec, classes, tag_sequences):
    """:class:`TransitionConstraints` of an ``allowed_transitions`` value over ``classes``.

    Parameters
    ----------
    spec : None, str, set, list, dict or ndarray
        The parameter (see the module docstring).
    classes : ndarray of shape (n_classes,)
        The sorted training labels.
    tag_sequences : callable
        Returns the training label sequences, for ``"auto"``.

    Returns
    -------
    TransitionConstraints
        Forbidding nothing for None.
    """
    if spec is None:
        return TransitionConstraints.none(len(classes))
    if isinstance(spec, str):
        if spec not in SCHEME_NAMES:
            raise ValueError(f"allowed_transitions must be one of "
                             f"{', '.join(map(repr, SCHEME_NAMES))}, pairs, a dict or a "
                             f"boolean matrix; got {spec!r}.")
        return scheme_constraints(classes, _scheme_of(spec, classes, tag_sequences), spec)
    return explicit_constraints(spec, classes)


def repair_tags(classes, label_ids, offsets, sequences, scheme):
    """Flat tags with the given sequences rewritten well-formed, as conlleval reads them.

    Each sequence's tags are decoded into spans and encoded back
    (:func:`~skcrf.tags.tags_to_segments`, :func:`~skcrf.tags.segments_to_tags`):
    the spans stay, the tags become the scheme's well-formed ones (an
    ``I-X`` that opens a span in IOB2 becomes ``B-X``).

    Returns
    -------
    tags : list of str
        Every token's tag, the other sequences unchanged.
    """
    tags = classes[label_ids].tolist()
    for q in sequences.tolist():
        lo, hi = int(offsets[q]), int(offsets[q + 1])
        tags[lo:hi] = segments_to_tags(tags_to_segments(tags[lo:hi], scheme), hi - lo, scheme)
    return tags


def describe_violation(violation, classes, label_ids, offsets, spec):
    """A sentence naming where training labels break the constraints."""
    q, t, what = violation
    lo = int(offsets[q])
    label = classes[label_ids[lo + t]].item()
    if what == "pair":
        return (f"sequence {q}, tokens {t - 1}-{t}: {classes[label_ids[lo + t - 1]].item()!r} "
                f"followed by {label!r}, which allowed_transitions={spec!r} forbids")
    return (f"sequence {q}, token {t}: {label!r} {'starts' if what == 'start' else 'ends'} "
            f"the sequence, which allowed_transitions={spec!r} forbids")


def check_training_labels(constraints, classes, label_ids, offsets, spec, estimator):
    """Training labels that keep to the constraints: None if they do, else repaired tags.

    For the constraints of a tagging scheme, returns ``(tags, message)``:
    every token's tag with the malformed sequences repaired
    (:func:`repair_tags`), and a warning text saying how many and where the
    first was. Explicit constraints raise a ValueError naming the first
    forbidden label instead: a labelling the model forbids has probability
    0, so training on it cannot work.
    """
    violation = constraints.first_violation(label_ids, offsets)
    if violation is None:
        return None
    where = describe_violation(violation, classes, label_ids, offsets, spec)
    if constraints.scheme is None:
        raise ValueError(f"The training labels break the constraints: {where}. Allow that "
                         f"transition, or correct the labels.")
    sequences = constraints.bad_sequences(label_ids, offsets)
    message = (f"{estimator}: {len(sequences)} training sequence(s) have tags that are not "
               f"well-formed {constraints.scheme} (first: {where}); they were trained as "
               f"conlleval reads them, with the same spans in well-formed tags.")
    return repair_tags(classes, label_ids, offsets, sequences, constraints.scheme), message
