"""Structures: one folder per model family (plain Python and numpy).

A structure owns its parameter layout (named blocks of the flat weight vector),
turns (features, weights) into potentials for :mod:`skcrf.inference`, turns
marginals back into a gradient, and computes the gold statistics.

- :mod:`.chain`: order-1 chains, with observation-conditioned transitions
  (:mod:`.chain.order1`) and their fused training kernels;
- :mod:`.patterns`: chains of any order: label patterns, their automaton, the
  pattern chain and the pruned lattice;
- :mod:`.semimarkov`: segments, their scores and label n-grams of consecutive
  segments;
- :mod:`.tree`: node labels of given trees, optionally with link features.

Shared by the families: :mod:`._parameters` (named blocks of ``w``),
:mod:`._fused_features` (the fused kernels' per-token feature helpers) and
:mod:`._merged_slots`.
"""

from .chain import ChainStructure
from .patterns import PatternChainStructure
from .semimarkov import SemiMarkovStructure
from .tree import TreeStructure

__all__ = ["ChainStructure", "PatternChainStructure", "SemiMarkovStructure", "TreeStructure"]
