"""Tree inference over given parent links.

- :mod:`.passes`: belief propagation (scaled, :mod:`._scaled`, and exact in
  log space) and max-product;
- :mod:`.edges`: the same with a score per link.

The passes' public names are importable from here.
"""

from .passes import tree_forward_backward, tree_layout, tree_viterbi

__all__ = ["tree_forward_backward", "tree_layout", "tree_viterbi"]
