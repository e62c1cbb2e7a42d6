"""Tree CRFs: labels of the nodes of given trees, pairwise factors along the links.

- :mod:`.structure`: parameters, potentials, gradient and gold statistics,
  with link features;
- :mod:`._fused`, :mod:`._edges_fused`: their fused training kernels.

The structure's public names are importable from here.
"""

from .structure import (TreePosteriors, TreeScores, TreeStructure, link_label_ids, link_scores,
                        tree_decode, tree_labelling_scores, tree_posteriors)

__all__ = ["TreePosteriors", "TreeScores", "TreeStructure", "link_label_ids", "link_scores",
           "tree_decode", "tree_labelling_scores", "tree_posteriors"]
