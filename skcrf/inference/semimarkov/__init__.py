"""Semi-Markov (segment) inference.

- :mod:`.passes`: segment forward-backward and Viterbi over segmentations,
  with the scaled probability-domain pass in :mod:`._scaled` and the per-token
  roles of its marginals in :mod:`._roles`;
- :mod:`.queries`: n-best segmentations and inference with some boundaries fixed.

The passes' public names are importable from here.
"""

from .passes import longest_segments, no_spans, segment_posteriors, segment_viterbi

__all__ = ["longest_segments", "no_spans", "segment_posteriors", "segment_viterbi"]
