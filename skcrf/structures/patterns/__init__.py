"""Chains of order 2 or more: label patterns and the structures over them.

- :mod:`.label_patterns`: the label n-grams that carry a weight;
- :mod:`.automaton`: the automaton of a set of patterns (exact inference's states);
- :mod:`.chain`: the pattern chain (state weights, label pairs, patterns) and
  its fused kernel (:mod:`._fused`);
- :mod:`.pruned`: training on a pruned lattice of candidate labels, with its
  fused kernel (:mod:`._lattice_fused`).

The pattern chain's public names are importable from here.
"""

from .chain import PatternChainStructure, PatternScores, fitted_patterns

__all__ = ["PatternChainStructure", "PatternScores", "fitted_patterns"]
