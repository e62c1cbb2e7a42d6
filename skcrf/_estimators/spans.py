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
other label's unary score ``-inf`` over the partition function. For an
order-1 chain (with or without transition features) all events come from
one compiled pass (:mod:`skcrf.inference.chain.windows`): the posterior is a
Markov chain, walked along each event's window from the marginal of its first
token (a forward and a backward pass of the sequence, no call of
``predict_marginals``'s pass). Any other chain, and an
event whose ratios may have underflowed there, runs as one batch through the
structure's own ``_log_z``: the sequence of each event is a copy of its
sequence's potentials (rows gathered, not recomputed from the features)
with the event's labels only. Both are exact; nothing is sampled.

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
from ..inference.chain.windows import window_probabilities
from ..inference.semimarkov.queries import CUT
from .._utils.span_decoding import _B, _E, _I, _O, _S, _decode_spans, _encode_tags
from ..tags import SCHEMES, detect_scheme

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


class _SpanEvents:
    """The disjoint events of labelled spans of a chain, as per-token allowed labels.

    Event ``k`` (of span ``span[k]``) constrains the tokens ``first[k] :
    first[k] + width[k]`` (indices over all tokens): token ``first[k] + j``
    may take only the labels where ``masks[k, j]`` is True.
    """

    def __init__(self, span, first, width, masks):
        self.span, self.first, self.width, self.masks = span, first, width, masks

    @property
    def n_events(self):
        return self.span.shape[0]

    def feasible(self):
        """Whether each event leaves every token of its window some label (else p = 0)."""
        live = np.arange(self.masks.shape[1])[np.newaxis, :] < self.width[:, np.newaxis]
        return ~np.any(live & ~self.masks.any(axis=2), axis=1)


class _TagCodes:
    """Prefix code and span type of each class of a chain, as conlleval reads its tags."""

    def __init__(self, classes, scheme):
        tags = classes.tolist()
        prefix, type_id, self.type_names = _encode_tags(tags, np.array([len(tags)]), scheme)
        self.prefix, self.type_id = prefix.astype(np.int64), type_id
        p = self.prefix
        # per span type (rows) and class (columns): what the class's tag does to a span
        typed = type_id[np.newaxis, :] == np.arange(len(self.type_names))[:, np.newaxis]
        self.in_span = typed & (p != _O)
        self.opens = np.isin(p, (_B, _S))       # starts a span whatever comes before
        self.goes_on = np.isin(p, (_B, _I))     # the span goes on if the next tag continues
        self.continues = np.isin(p, (_I, _E))   # continues an open span of its type
        self.closes = np.isin(p, (_E, _S))      # the span stops after it whatever comes next
        self.not_open_before = ~(typed & self.goes_on)  # a tag after which a span starts
        self.not_going_on = ~(typed & self.continues)   # a tag before which a span stops

    def events(self, type_ids, starts, stops, seq_starts, seq_lengths):
        """:class:`_SpanEvents` of spans (type, start, stop) of sequences starting at ``seq_starts``.

        A span is read when its first tag opens it (``B``/``S``, or ``I``/``E``
        after a tag that leaves no span of its type open), each next tag
        continues it, and it is closed (its last tag is ``E``/``S``, or the
        next tag does not continue it, or the sequence ends): two choices at
        the start and two at the stop, four disjoint events at most.
        """
        n_spans, n_classes = type_ids.shape[0], self.prefix.shape[0]
        sizes = stops - starts
        has_before, has_after = starts > 0, stops < seq_lengths
        widest = int(sizes.max()) + 2
        # position j of the window holds token start - 1 + j
        j = np.arange(widest)[np.newaxis, :]
        inside = (j >= 1) & (j <= sizes[:, np.newaxis])
        base = np.ones((n_spans, widest, n_classes), dtype=bool)
        base[inside] = self.in_span[np.broadcast_to(type_ids[:, np.newaxis], inside.shape)[inside]]
        base[inside & (j < sizes[:, np.newaxis])] &= self.goes_on
        base[inside & (j > 1)] &= self.continues
        rows = np.arange(n_spans)
        span, masks = [], []
        for open_first in (True, False):
            for close_last in (True, False, None):
                chosen = has_after if close_last is not None else ~has_after
                if not chosen.any():
                    continue
                m = base[chosen].copy()
                r, t, size = rows[chosen], type_ids[chosen], sizes[chosen]
                k = np.arange(r.shape[0])
                m[k, 1] &= self.opens if open_first else self.continues
                if not open_first:
                    m[k, 0] = np.where(has_before[r][:, np.newaxis],
                                       self.not_open_before[t], True)
                if close_last is not None:
                    m[k, size] &= self.closes if close_last else self.goes_on
                    if not close_last:
                        m[k, size + 1] = self.not_going_on[t]
                span.append(r)
                masks.append(m)
        span = np.concatenate(span)
        masks = np.concatenate(masks)
        # the window runs from the token before (if any) to the token after (if any)
        lead = (~has_before[span]).astype(np.int64)
        width = sizes[span] + 2 - lead - (~has_after[span]).astype(np.int64)
        shifted = lead == 1
        masks[shifted] = np.roll(masks[shifted], -1, axis=1)
        first = seq_starts[span] + starts[span] - 1 + lead
        return _SpanEvents(span, first, width, masks)


def _copies(offsets, sequences):
    """The token rows of one copy of each of ``sequences``, and the copies' offsets."""
    lengths = np.diff(offsets)[sequences]
    copy_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = (np.repeat(offsets[sequences] - copy_offsets[:-1], lengths)
            + np.arange(copy_offsets[-1]))
    return rows, copy_offsets


class SpanQueries:
    """``predict_spans`` and ``predict_span_proba``, for CRFClassifier and SemiMarkovCRF.

    Mixed into an estimator of :class:`~skcrf._estimators.base.CRFEstimator`;
    the chain reads its classes as tags (:class:`_TagCodes`), the semi-Markov
    model constrains segments directly (:meth:`_segment_copies`).
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
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                # the probabilities below read the same potentials
                potentials = model._potentials(features, offsets)
                label_ids = model._viterbi(potentials, offsets)
            starts, stops, types = _decode_spans(codes.prefix[label_ids],
                                                 codes.type_id[label_ids], np.diff(offsets))
            sequence = np.searchsorted(offsets, starts, side="right") - 1
            starts, stops = starts - offsets[sequence], stops - offsets[sequence]
            found = [[] for _ in range(offsets.shape[0] - 1)]
            for q, a, b, t in zip(sequence.tolist(), starts.tolist(), stops.tolist(),
                                  codes.type_names[types].tolist()):
                found[q].append((a, b, t))
        if not return_proba:
            return found
        if model._semi_markov_spans():
            proba = model._span_probabilities(features, offsets, found)
        else:
            # the spans are well formed already, their labels ids: no checks
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                flat = np.minimum(model._chain_span_probabilities(
                    potentials, offsets, sequence, starts, stops, types), 1.0).tolist()
            proba, k = [], 0
            for listed in found:
                proba.append(flat[k:k + len(listed)])
                k += len(listed)
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
        label_ids, _ = self._span_label_ids(labels)
        probability = np.zeros(sequence.shape[0])
        if sequence.shape[0]:
            with kernel_threads(self.n_jobs, n_tokens=offsets[-1]):
                potentials = self._potentials(features, offsets)
                if self._semi_markov_spans():
                    probability = self._segment_probabilities(
                        potentials, offsets, sequence, start, stop, label_ids)
                else:
                    probability = self._chain_span_probabilities(
                        potentials, offsets, sequence, start, stop, label_ids)
        probability = np.minimum(probability, 1.0).tolist()
        result, k = [], 0
        for listed in spans:
            result.append(probability[k:k + len(listed)])
            k += len(listed)
        return result

    def _chain_span_probabilities(self, potentials, offsets, sequence, start, stop, type_ids):
        from ..structures.chain.order1 import ChainScores

        lengths = np.diff(offsets)
        events = self._tag_codes().events(type_ids, start, stop, offsets[:-1][sequence],
                                          lengths[sequence])
        probability = np.zeros(sequence.shape[0])
        if not events.n_events:
            return probability
        owner = sequence[events.span]
        event_p = np.zeros(events.n_events)
        exact = np.zeros(events.n_events, dtype=bool)
        if isinstance(potentials, ChainScores) and potentials.trigram is None:
            # by sequence, then by first token: one forward pass per sequence serves all
            order = np.lexsort((events.first, owner))
            moves = potentials.transitions if potentials.edges is None else potentials.edges
            p, ok = window_probabilities(potentials.unary, moves, potentials.start,
                                         potentials.end, offsets, owner[order],
                                         events.first[order], events.width[order],
                                         events.masks[order])
            event_p[order], exact[order] = p, ok
        if not exact.all():
            # an event with a token that may take no label has probability 0: no pass
            rest = np.flatnonzero(~exact & events.feasible())
            event_p[rest] = self._constrained_event_probabilities(
                potentials, offsets, owner[rest], events.first[rest], events.width[rest],
                events.masks[rest])
        np.add.at(probability, events.span, event_p)
        return probability

    def _constrained_event_probabilities(self, potentials, offsets, owner, first, width, masks):
        """Z(event) / Z, by one constrained copy of the event's sequence per event: any order."""
        copies, copy_offsets = _copies(offsets, owner)
        unary = potentials.unary[copies]
        j = np.arange(masks.shape[1])[np.newaxis, :]
        live = j < width[:, np.newaxis]
        rows = (copy_offsets[:-1, np.newaxis] + first[:, np.newaxis]
                - offsets[owner][:, np.newaxis] + j)[live]
        unary[rows] = np.where(masks[live], unary[rows], -np.inf)
        constrained = replace(potentials, unary=unary)
        if getattr(potentials, "edges", None) is not None:
            constrained = replace(constrained, edges=potentials.edges[copies])
        if getattr(potentials, "lattice", None) is not None:
            # pruned labels score -inf already: the full pass gives the lattice's results
            constrained = replace(constrained, lattice=None)
        log_z = self._log_z(potentials, offsets)
        event_log_z = self._log_z(constrained, copy_offsets)
        with np.errstate(under="ignore"):
            return np.exp(event_log_z - log_z[owner])

    def _segment_probabilities(self, potentials, offsets, sequence, start, stop, label_ids):
        copies, copy_offsets = _copies(offsets, sequence)
        constrained = self._segment_copies(potentials, copies, copy_offsets,
                                           zip(start.tolist(), stop.tolist(),
                                               label_ids.tolist()))
        log_z = self._log_z(potentials, offsets)
        event_log_z = self._log_z(constrained, copy_offsets)
        with np.errstate(under="ignore"):
            return np.exp(event_log_z - log_z[sequence])

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
