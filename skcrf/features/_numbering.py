"""Integer codes of hashable objects, in order of first sight: the features' numbering."""

from itertools import count

import numpy as np

# :func:`factorize` numbers fewer objects than this in Python, more with numpy.
_SMALL_FACTORIZE = 128


def factorize(objects):
    """Integer codes of hashable objects and the distinct ones in first-seen order.

    One C-level pass: ``dict.setdefault`` with a running counter returns, for
    each object, the position where it was first seen. A few objects (the
    featurizer's columns of one sentence) are numbered directly, in Python:
    the numpy calls that turn positions into codes would cost more.
    """
    if len(objects) < _SMALL_FACTORIZE:
        index = {}
        codes = [index.setdefault(obj, len(index)) for obj in objects]
        return np.array(codes, dtype=np.int64), list(index)
    first_seen = {}
    positions = np.fromiter(map(first_seen.setdefault, objects, count()),
                            dtype=np.int64, count=len(objects))
    distinct_positions = np.fromiter(first_seen.values(), dtype=np.int64,
                                     count=len(first_seen))
    code_of_position = np.empty(len(objects), dtype=np.int64)
    code_of_position[distinct_positions] = np.arange(len(first_seen))
    return code_of_position[positions], list(first_seen)
