"""What every kernel runs on: the JIT policy, the chunked driver, threads, cache and notice.

- :mod:`.batch`: ``compiled`` (the one JIT policy) and the chunked,
  deterministic parallel driver;
- :mod:`.threads`: skcrf's pool of Python threads driving ``nogil`` kernels;
- :mod:`.cache`: numba's on-disk cache made robust (keys, locks, digests);
- :mod:`.compile_notice`: the one line said when kernels compile.
"""
