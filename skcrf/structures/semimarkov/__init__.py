"""Semi-Markov (segment) CRFs.

- :mod:`.structure`: parameters, potentials, gradient and gold statistics;
- :mod:`.segment_scores`: segmentations, segment potentials and their queries;
- :mod:`.patterns`: order ``d``: label n-grams of consecutive segments;
- :mod:`._fused`: the fused training kernel.

The structure's public names are importable from here.
"""

from .structure import SemiMarkovStructure

__all__ = ["SemiMarkovStructure"]
