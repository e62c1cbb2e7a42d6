"""Chain inference: order 1, per-token transitions, order 2 and n-best paths.

- :mod:`.order1`: forward-backward and Viterbi of the order-1 chain, on its
  scaled pass (:mod:`._order1_passes`) run on lanes of sequences of one length
  (:mod:`._order1_lanes`);
- :mod:`.edges`: the order-1 chain with a transition score per token;
- :mod:`.order2`: label-trigram potentials, a scaled pass
  (:mod:`._order2_scaled`) and an exact log-space one (:mod:`._order2_logspace`);
- :mod:`.nbest`: exact n-best label paths of orders 1 and 2.

The order-1 passes' public names are importable from here.
"""

from .order1 import (chain_workspace, forward_backward, log_space_sequence, scaled_from_emission,
                     scaled_sequence, viterbi)

__all__ = ["chain_workspace", "forward_backward", "log_space_sequence", "scaled_from_emission",
           "scaled_sequence", "viterbi"]
