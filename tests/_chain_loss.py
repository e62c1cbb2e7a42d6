"""The chain's training objective from a sparse matrix, for tests of the loss and kernels."""

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain.order1 import ChainStructure


def chain_loss(X, offsets, label_ids, pairs, l2, fused=True, **structure_options):
    """NegativeLogLikelihood of an order-1 chain (unless ``structure_options`` say
    otherwise) whose state weights are ``pairs``."""
    structure = ChainStructure(pairs.n_labels, pairs, **structure_options)
    return NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, label_ids, l2,
                                 fused=fused)


def unpack(w, structure):
    """(state, transitions, start, end) views of ``w``."""
    blocks = structure.layout.views(w)
    return blocks["state"], blocks["transitions"], blocks["start"], blocks["end"]
