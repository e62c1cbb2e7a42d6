"""Inference for chains of any order, over label patterns.

- :mod:`.automaton`: forward-backward, Viterbi and n-best over the pattern
  automaton (states are prefixes of kept patterns), with its scaled pass on
  lanes (:mod:`._scaled`), its exact log-space pass (:mod:`._exact`) and its
  paths (:mod:`._paths`);
- :mod:`.lattice`: exact inference over a pruned lattice of candidate labels.

The automaton's public names are importable from here.
"""

from .automaton import forward_backward_patterns, nbest_patterns, viterbi_patterns

__all__ = ["forward_backward_patterns", "nbest_patterns", "viterbi_patterns"]
