"""Order-1 chains: parameters, potentials, gradient and gold statistics.

- :mod:`.order1`: the structure (plain and observation-conditioned transitions);
- :mod:`.scores`: potentials of a batch (:class:`ChainScores`) and the inference
  over them (marginals, Viterbi, n-best, the score of a given labelling);
- :mod:`._fused`, :mod:`._edges_fused`: their fused training kernels.

The structure's public names are importable from here.
"""

from .order1 import (ChainPosteriors, ChainScores, ChainStructure, PlainChainLayout,
                     chain_decode, chain_labelling_scores, chain_nbest, chain_posteriors,
                     edge_label_ids, pin_labels)

__all__ = ["ChainPosteriors", "ChainScores", "ChainStructure", "PlainChainLayout",
           "chain_decode", "chain_labelling_scores", "chain_nbest", "chain_posteriors",
           "edge_label_ids", "pin_labels"]
