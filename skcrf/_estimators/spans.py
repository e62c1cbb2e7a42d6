"""Span queries: the predicted spans (entities, chunks) and their exact probabilities.

A span ``(start, stop, label)`` of a sequence is read from its tags exactly
as :func:`skcrf.tags.get_spans` (conlleval) reads them; its probability is
the model's marginal probability that the labelling it draws contains that
span: the sum of ``p(y | x)`` over every labelling ``y`` whose tags decode to
a span with those bounds and that label.

That event is a condition on the tags of the span and of the tokens right
before and after it (whether a span starts at ``start`` depends on the tag
before, whether it stops at ``stop`` on the tag after). It splits into at
most four disjoint events, each a set of allowed labels per token; the
probability of one is ``Z(allowed) / Z``, the partition function with every
other label's unary score ``-inf`` over the partition function. All the
events of all the asked spans run as one batch through the structure's own
``_log_z``: the sequence of each is a copy of its sequence's potentials
(rows gathered, not recomputed from the features), so the result is exact
for every structure and order that has a ``_log_z``, and no sampling is
involved.

For a :class:`~skcrf.SemiMarkovCRF` a span is a segment: its event is "one
segment covers exactly ``start:stop`` with that label", fixed by the
semi-Markov boundary flags (a segment starts at ``start`` and at ``stop``,
none starts or ends inside).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .._utils.parallel import kernel_threads
from .._utils.type_aliases import FeatureSequences
from ..inference.semimarkov.queries import CUT
from ..tags import SCHEMES, _B, _E, _I, _O, _S, _decode_spans, _encode_tags, detect_scheme

__all__ = ["SpanQueries"]


def _check_span_list(spans, offsets):
    """Flat arrays (sequence, start, stop) and the labels of the asked spans."""
    n_sequences = offsets.shape[0] - 1
    if isinstance(spans, (str, bytes, dict)) or not hasattr(spans, "__len__"):
        raise TypeError("spans must be a list with one list of (start, stop, label) per "
                        f"sequence; got a {type(spans).__name__}.")
    if len(spans) != n_sequences:
        raise ValueError(f"spans has {len(spans)} entries but X has {n_sequences} sequences: "
                         f"give one list of (start, stop, label) per sequence.")
    sequence, start, stop, labels = [], [], [], []
    for q, listed in enumerate(spans):
        n_tokens = int(offsets[q + 1] - offsets[q])
        for k, span in enumerate(listed):
            try:
                a, b, label = span[:3] if len(span) >= 3 else span
            except (TypeError, ValueError):
                raise ValueError(f"spans[{q}][{k}] must be (start, stop, label); "
                                 f"got {span!r}.") from None
            if isinstance(a, bool) or isinstance(b, bool) or not (
                    np.issubdtype(type(a), np.integer) and np.issubdtype(type(b), np.integer)):
                raise TypeError(f"spans[{q}][{k}] = {span!r}: start and stop must be integers.")
            if not 0 <= a < b <= n_tokens:
                raise ValueError(
                    f"spans[{q}][{k}] = {span!r} is not a span of sequence {q}, which has "
                    f"{n_tokens} tokens: need 0 <= start < stop <= {n_tokens} (stop "
                    f"exclusive).")
            sequence.append(q)
            start.append(int(a))
            stop.append(int(b))
            labels.append(label)
    return (np.asarray(sequence, dtype=np.int64), np.asarray(start, dtype=np.int64),
            np.asarray(stop, dtype=np.int64), labels)


class _TagCodes:
    """Prefix code and span type of each class of a chain, as conlleval reads its tags."""

    def __init__(self, classes, scheme):
        tags = classes.tolist()
        self.prefix, self.type_id, self.type_names = _encode_tags(
            tags, np.array([len(tags)]), scheme)
        self.prefix = self.prefix.astype(np.int64)
        self.type_index = {name: t for t, name in enumerate(self.type_names.tolist())}

    def events(self, label, start, stop, n_tokens):
        """The disjoint events of span (start, stop, label) as lists of (token, allowed mask)."""
        p, typed = self.prefix, self.type_id == self.type_index[label]
        in_span = typed & (p != _O)
        opens = np.isin(p, (_B, _S))      # a span starts here whatever comes before
        goes_on = np.isin(p, (_B, _I))    # the span goes on if the next tag continues it
        continues = np.isin(p, (_I, _E))  # continues an open span of its type
        closes = np.isin(p, (_E, _S))     # a span stops after it whatever comes next
        base = {t: in_span.copy() for t in range(start, stop)}
        for t in range(start, stop - 1):
            base[t] &= goes_on
        for t in range(start + 1, stop):
            base[t] &= continues
        starts = [({start: opens}, {})]
        starts.append(({start: continues},
                       {start - 1: ~(typed & goes_on)} if start > 0 else {}))
        stops = [({}, {})] if stop == n_tokens else [
            ({stop - 1: closes}, {}), ({stop - 1: goes_on}, {stop: ~(typed & continues)})]
        events = []
        for start_inside, before in starts:
            for stop_inside, after in stops:
                masks = {t: m.copy() for t, m in base.items()}
                for extra in (start_inside, stop_inside):
                    for t, m in extra.items():
                        masks[t] &= m
                masks.update(before)
                masks.update(after)
                if all(m.any() for m in masks.values()):
                    events.append(masks)
        return events


def _feasible(masks, allowed):
    """False if neighbouring masks leave no allowed transition (a cheap, exact skip)."""
    if allowed is None:
        return True
    for t, m in masks.items():
        following = masks.get(t + 1)
        if following is not None and not allowed[np.ix_(m, following)].any():
            return False
    return True


class SpanQueries:
    """``predict_spans`` and ``predict_span_proba``, for CRFClassifier and SemiMarkovCRF.

    Mixed into an estimator of :class:`~skcrf._estimators.base.CRFEstimator`;
    the structure-specific parts are :meth:`_span_events` and
    :meth:`_constrained_copies`.
    """

    # --- what the two estimators do differently --------------------------------------

    def _semi_markov_spans(self):
        return hasattr(self, "segment_classes_")

    def _tag_codes(self):
        """:class:`_TagCodes` of a chain's classes, read in its tagging scheme."""
        classes = self.classes_
        if not all(isinstance(c, str) for c in classes.tolist()):
            raise ValueError(
                f"Spans are read from string tags (such as 'B-PER' or plain labels with "
                f"'O' outside); this model's classes_ are of type "
                f"{type(classes[0]).__name__}.")
        chosen = getattr(self, "allowed_transitions", None)
        scheme = (chosen if isinstance(chosen, str) and chosen in SCHEMES
                  else detect_scheme([classes.tolist()]))
        return _TagCodes(classes, scheme)

    def _span_label_ids(self, labels):
        """Per asked span, the id of its label among the span types, checked."""
        if self._semi_markov_spans():
            names = self.segment_classes_.tolist()
            if self._codec().outside is not None:
                names = names[:-1]  # "O" labels no span
        else:
            names = self._tag_codes().type_names.tolist()
        index = {name: k for k, name in enumerate(names)}
        ids = np.empty(len(labels), dtype=np.int64)
        for k, label in enumerate(labels):
            key = label.item() if isinstance(label, np.generic) else label
            if key not in index:
                shown = ", ".join(map(repr, names[:8])) + (", ..." if len(names) > 8 else "")
                raise ValueError(f"Span label {label!r} is not a span label of the model; "
                                 f"its span labels are {shown}.")
            ids[k] = index[key]
        return ids, names

    # --- the public queries -------------------------------------------------------------

    def predict_spans(self, X: FeatureSequences, return_proba: bool = False,
                      ) -> list[list[tuple[Any, ...]]]:
        """Labelled spans (entities, chunks) of the best labelling of each sequence.

        The spans of :meth:`predict`'s tags, read as :func:`skcrf.tags.get_spans`
        reads them (a :class:`~skcrf.SemiMarkovCRF`: its predicted segments
        not labelled ``"O"``). A :class:`~skcrf.CRFClassifier` reads its
        classes in the scheme its ``allowed_transitions`` names, else in the
        one :func:`skcrf.tags.detect_scheme` reads in ``classes_``.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        return_proba : bool, default=False
            Also return each span's probability: the exact marginal probability
            that the model labels exactly those tokens as one span of that label
            (see :meth:`predict_span_proba`).

        Returns
        -------
        spans : list of list of tuple
            Per sequence, ``(start, stop, label)`` in order of position,
            ``stop`` exclusive; ``(start, stop, label, probability)`` with
            ``return_proba=True``.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        if model._semi_markov_spans():
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                segmentation = model._decode_segments(model._scores(features), offsets)
            found = [[(s.start, s.stop, s.label) for s in segments]
                     for segments in model._codec().segments(segmentation, offsets)]
        else:
            codes = model._tag_codes()
            label_ids = model._decode(features, offsets)
            starts, stops, types = _decode_spans(codes.prefix[label_ids],
                                                 codes.type_id[label_ids], np.diff(offsets))
            sequence = np.searchsorted(offsets, starts, side="right") - 1
            found = [[] for _ in range(offsets.shape[0] - 1)]
            for q, a, b, t in zip(sequence.tolist(), starts.tolist(), stops.tolist(),
                                  types.tolist()):
                found[q].append((a - int(offsets[q]), b - int(offsets[q]),
                                 codes.type_names[t]))
        if not return_proba:
            return found
        proba = model._span_probabilities(features, offsets, found)
        return [[(*span, p) for span, p in zip(spans, probabilities)]
                for spans, probabilities in zip(found, proba)]

    def predict_span_proba(self, X: FeatureSequences, spans) -> list[list[float]]:
        """Exact probability of given labelled spans.

        The probability that the labelling the model draws contains the span:
        a span starts at ``start`` with that label, goes on to ``stop - 1`` and
        ends there, however the rest of the sequence is labelled. Computed
        by constrained inference (the partition function with the span's tags
        and its neighbours' fixed, over the unconstrained one), not sampled.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        spans : list of list of tuple
            Per sequence, ``(start, stop, label)`` tuples (more items are
            ignored, so the 4-tuples of ``predict_spans`` do too), ``stop``
            exclusive; ``label`` a span type (``"PER"`` for the tags ``B-PER
            I-PER``).

        Returns
        -------
        proba : list of list of float
            Per sequence, the probability of each asked span, in their order.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        return model._span_probabilities(features, offsets, spans)

    # --- the computation ------------------------------------------------------------------

    def _span_probabilities(self, features, offsets, spans):
        sequence, start, stop, labels = _check_span_list(spans, offsets)
        label_ids, names = self._span_label_ids(labels)
        n_asked = sequence.shape[0]
        probability = np.zeros(n_asked)
        if n_asked:
            potentials = self._potentials(features, offsets)
            lengths = np.diff(offsets)
            owner, events = [], []
            codes = None if self._semi_markov_spans() else self._tag_codes()
            allowed = getattr(self, "allowed_transitions_", None)
            for k in range(n_asked):
                q = int(sequence[k])
                if codes is None:
                    found = [(int(start[k]), int(stop[k]), int(label_ids[k]))]
                else:
                    found = [masks for masks in codes.events(
                        names[label_ids[k]], int(start[k]), int(stop[k]), int(lengths[q]))
                        if _feasible(masks, allowed)]
                owner.extend([k] * len(found))
                events.extend(found)
            if events:
                owner = np.asarray(owner, dtype=np.int64)
                copies, copy_offsets = self._constrained_copies(
                    potentials, offsets, sequence[owner], events)
                with kernel_threads(self.n_jobs, n_tokens=offsets[-1] + copy_offsets[-1]):
                    log_z = self._log_z(potentials, offsets)
                    event_log_z = self._log_z(copies, copy_offsets)
                with np.errstate(under="ignore"):
                    event_p = np.exp(event_log_z - log_z[sequence[owner]])
                np.add.at(probability, owner, event_p)
        probability = np.minimum(probability, 1.0).tolist()
        result, k = [], 0
        for listed in spans:
            result.append(probability[k:k + len(listed)])
            k += len(listed)
        return result

    def _constrained_copies(self, potentials, offsets, sequences, events):
        """One copy of each event's sequence, its potentials restricted to the event."""
        lengths = np.diff(offsets)
        copy_lengths = lengths[sequences]
        copy_offsets = np.concatenate([[0], np.cumsum(copy_lengths)]).astype(np.int64)
        rows = (np.repeat(offsets[sequences] - copy_offsets[:-1], copy_lengths)
                + np.arange(copy_offsets[-1]))
        if self._semi_markov_spans():
            return self._segment_copies(potentials, rows, copy_offsets, events), copy_offsets
        copies = replace(potentials, unary=potentials.unary[rows])
        if getattr(potentials, "edges", None) is not None:
            copies = replace(copies, edges=potentials.edges[rows])
        if getattr(potentials, "lattice", None) is not None:
            # pruned labels already score -inf: the full pass gives the lattice's results
            copies = replace(copies, lattice=None)
        unary = copies.unary
        for k, masks in enumerate(events):
            lo = copy_offsets[k]
            for t, m in masks.items():
                unary[lo + t, ~m] = -np.inf
        return copies, copy_offsets

    def _segment_copies(self, potentials, rows, copy_offsets, events):
        patterns = hasattr(potentials, "labels")
        labels = potentials.labels if patterns else potentials
        boundaries = np.zeros(rows.shape[0], dtype=np.int8)
        copied = replace(
            labels, state=labels.state[rows], first=labels.first[rows],
            last=labels.last[rows], boundaries=boundaries,
            spans=None if labels.spans is None else labels.spans[rows])
        for k, (a, b, label) in enumerate(events):
            lo, hi = int(copy_offsets[k]), int(copy_offsets[k + 1])
            keep = copied.state[lo + a:lo + b, label].copy()
            copied.state[lo + a:lo + b] = -np.inf
            copied.state[lo + a:lo + b, label] = keep
            copied.first[lo + a + 1:lo + b] = -np.inf   # no segment starts inside
            copied.last[lo + a:lo + b - 1] = -np.inf    # nor ends inside
            if a > 0:
                boundaries[lo + a] |= CUT
            if lo + b < hi:
                boundaries[lo + b] |= CUT
        if not boundaries.any():
            copied.boundaries = None
        return replace(potentials, labels=copied) if patterns else copied
