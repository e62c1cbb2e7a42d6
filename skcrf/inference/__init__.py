"""Inference kernels (numba only): potentials and offsets in; log Z, marginals and paths out.

One folder per model family, and the runtime they share:

- :mod:`.chain`: order-1 chains (:mod:`.chain.order1`), with a transition
  score per token (:mod:`.chain.edges`), order 2 (:mod:`.chain.order2`) and
  exact n-best paths (:mod:`.chain.nbest`);
- :mod:`.patterns`: chains of any order over a pattern automaton
  (:mod:`.patterns.automaton`) or a pruned lattice of candidate labels
  (:mod:`.patterns.lattice`);
- :mod:`.semimarkov`: segment forward-backward and Viterbi
  (:mod:`.semimarkov.passes`), n-best and constrained queries
  (:mod:`.semimarkov.queries`);
- :mod:`.tree`: belief propagation and max-product over given parent links
  (:mod:`.tree.passes`), with a score per link (:mod:`.tree.edges`);
- :mod:`._runtime`: the JIT policy and the chunked, deterministic parallel
  driver (:mod:`._runtime.batch`), the kernels' threads, numba's cache and its
  keys, the compile notice.

Beside them, the numerics every family uses: :mod:`._logspace` (precision
thresholds and exact log-space reductions), :mod:`._products`,
:mod:`._potentials` (exponentiated potentials of the scaled passes) and
:mod:`._topn` (merging n-best lists). Nothing here sees a feature, a string or
a Python object.
"""
