"""Trees with the features: SequenceMatrix.parents and the "__parent__" key of token dicts.

Parents are checked once, naming the sequence and token of a bad link, and
then travel read-only through indexing, splitting, pickling and vectorizing.
"""

import copy
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix, SequenceVectorizer

#: Five tokens: a tree of three (token 0 the root) and one of two.
OFFSETS = [0, 3, 5]
PARENTS = [-1, 0, 0, 1, -1]


def _matrix(parents=PARENTS, offsets=OFFSETS, n_tokens=5):
    return SequenceMatrix(sp.eye(n_tokens, format="csr"), offsets,
                          [f"f{i}" for i in range(n_tokens)], parents=parents)


# --- checking ----------------------------------------------------------------


@pytest.mark.parametrize("parents, match", [
    ([-1, 0, 3, -1, 0], r"Sequence 0, token 2: parent 3 is neither -1 \(a root\) nor a "
                        r"token of the sequence \(0 to 2\)"),
    ([-1, 0, 1, -1, 2], r"Sequence 1, token 1: parent 2 is neither -1"),
    ([-1, 0, -2, -1, 0], r"Sequence 0, token 2: parent -2 is neither -1"),
    ([-1, 0, 1, -1, 2 ** 62], r"Sequence 1, token 1: parent 4611686018427387904 is neither"),
    ([-1, 1, 0, -1, 0], r"Sequence 0, token 1 is its own parent"),
    ([-1, 0, 0, -1, 1], r"Sequence 1, token 1 is its own parent"),
    ([-1, 0, 1.5, -1, 0], r"parents must be integers; sequence 0, token 2 has 1.5"),
    ([-1, 0, 1, -1, np.nan], r"parents must be integers; sequence 1, token 1 has nan"),
    ([-1, 0, 1, np.inf, 0], r"parents must be integers; sequence 1, token 0 has inf"),
    ([-1, 0, 1, -1], r"one parent index per token \(5\); got an array of shape \(4,\)"),
    ([[-1, 0, 1, -1, 0]], r"one parent index per token \(5\); got an array of shape \(1, 5\)"),
])
def test_bad_parents_are_named(parents, match):
    with pytest.raises(ValueError, match=match):
        _matrix(parents)


@pytest.mark.parametrize("parents", [
    np.array([True, False, False, True, False]), ["-1", "0", "0", "1", "-1"],
    [None, 0, 0, 1, -1],
])
def test_parents_of_other_types_are_refused(parents):
    with pytest.raises(TypeError, match="parents must be integers"):
        _matrix(parents)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32, np.float64])
def test_integral_values_of_any_numeric_type_are_accepted(dtype):
    X = _matrix(np.array(PARENTS, dtype=dtype))
    assert X.parents.dtype == np.int64 and X.parents.tolist() == PARENTS


def test_forests_empty_sequences_and_no_tokens_are_fine():
    X = SequenceMatrix(sp.eye(6, format="csr"), [0, 0, 4, 4, 6],
                       parents=[2, -1, -1, 2, 1, -1])  # parents after their child too
    assert X.parents.tolist() == [2, -1, -1, 2, 1, -1]
    empty = SequenceMatrix(sp.csr_matrix((0, 2)), [0, 0], parents=[])
    assert empty.parents.shape == (0,)
    assert SequenceMatrix(sp.eye(2, format="csr"), [0, 2]).parents is None


# Cycles are run in a child process: a cycle made the check read uninitialized
# memory and write outside its array, which crashed the interpreter (or named
# a garbage token), and a crash must fail this test, not end the session.
_CYCLE_SCRIPT = """
import json, sys
import scipy.sparse as sp
from skcrf import SequenceMatrix, SequenceVectorizer
results = []
for parents, offsets in json.loads(sys.argv[1]):
    try:
        if offsets is None:  # token dicts: parents per sequence
            SequenceVectorizer().fit_transform(
                [[{"w": "x", "__parent__": p} for p in sequence] for sequence in parents])
        else:
            SequenceMatrix(sp.eye(offsets[-1], format="csr"), offsets, parents=parents)
        results.append(None)
    except Exception as error:
        results.append([type(error).__name__, str(error)])
    print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # what came before a crash
print(json.dumps(results))
"""

#: (parents, offsets or None for dicts, sequence named, tokens on the cycle)
CYCLES = [
    ([2, 0, 1, -1, 0], [0, 3, 5], 0, {0, 1, 2}),               # no root at all
    ([1, 0, -1, -1, 3], [0, 3, 5], 0, {0, 1}),                 # a root beside the cycle
    ([-1, 2, 3, 4, 2], [0, 5], 0, {2, 3, 4}),                  # token 1 hangs below it
    ([-1, -1, -1, 1, 0], [0, 3, 5], 1, {0, 1}),                # in the second sequence
    ([-1, 0, 1, 2, 3, 4, 1, 0], [0, 6, 8], 1, {0, 1}),         # after a longer tree
    ([-1, 0, 1, 2, 3, 4, 1, 0], [0, 0, 6, 8, 8], 2, {0, 1}),   # and empty sequences
    ([[-1, 0], [1, 2, 0]], None, 1, {0, 1, 2}),                # "__parent__" keys
]


def test_cycles_are_named_by_sequence_and_tokens():
    cases = [[parents, offsets] for parents, offsets, _, _ in CYCLES]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    run = subprocess.run([sys.executable, "-c", _CYCLE_SCRIPT, json.dumps(cases)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (
        f"checking cycles crashed the interpreter (exit code {run.returncode}) after "
        f"these results:\n{run.stderr[-3000:]}")
    for (parents, offsets, q, tokens), result in zip(CYCLES, json.loads(run.stdout)):
        assert result is not None, parents
        kind, message = result
        assert kind == "ValueError", (parents, message)
        found = re.fullmatch(
            rf"Sequence {q}: the parent links form a cycle \(((?:\d+ -> )+\d+)\), so these "
            rf"tokens have no root\.", message)
        assert found, (parents, message)
        path = [int(t) for t in found.group(1).split(" -> ")]
        assert path[0] == path[-1] and set(path) == tokens, (parents, message)


# --- read-only, copied, carried ----------------------------------------------


def test_parents_are_a_read_only_checked_copy():
    given = np.array(PARENTS)
    X = _matrix(given)
    given[1] = 1  # the caller's array may change: the matrix kept its own copy
    assert X.parents.tolist() == PARENTS
    parents = X.parents
    with pytest.raises(ValueError, match="read-only"):
        parents[0] = 1
    with pytest.raises(ValueError):
        parents.setflags(write=True)
    assert X.parents.tolist() == PARENTS


def test_assigning_parents_is_checked():
    X = _matrix()
    with pytest.raises(ValueError, match=r"Sequence 0, token 2: parent 7"):
        X.parents = [-1, 0, 7, -1, 0]
    assert X.parents.tolist() == PARENTS  # unchanged by the failed assignment
    X.parents = [1, -1, 1, 1, -1]
    assert X.parents.tolist() == [1, -1, 1, 1, -1]
    X.parents = None
    assert X.parents is None and "parents" not in repr(X)
    assert "parents=..." in repr(_matrix())


def test_reassigned_offsets_are_checked_against_the_parents():
    X = _matrix()
    # tokens 2..4 as one sequence: token 2 (parent 0) becomes its own parent
    with pytest.raises(ValueError, match="Sequence 1, token 0 is its own parent"):
        X.offsets = [0, 2, 5]
    assert X.offsets.tolist() == OFFSETS
    X.offsets = [0, 5]  # one sequence, the same links: a forest of two trees
    assert X.offsets.tolist() == [0, 5] and X.parents.tolist() == PARENTS
    one = _matrix([-1, 0, 1, -1, 3], offsets=[0, 5])
    with pytest.raises(ValueError, match=r"Sequence 1, token 1: parent 3 is neither"):
        one.offsets = [0, 3, 5]
    assert one.offsets.tolist() == [0, 5]


def _vectorized():
    """The same trees in a SequenceMatrix made by the vectorizer (canonical arrays)."""
    dicts = [[{"w": f"t{i}", "__parent__": PARENTS[i]} for i in range(lo, hi)]
             for lo, hi in zip(OFFSETS[:-1], OFFSETS[1:])]
    return SequenceVectorizer().fit_transform(dicts)


@pytest.mark.parametrize("make", [_matrix, _vectorized], ids=["users", "vectorized"])
def test_indexing_and_pickling_carry_the_parents(make):
    X = make()
    assert X.parents.tolist() == PARENTS
    cases = {
        "reordered": (X[[1, 0]], [1, -1, -1, 0, 0]),
        "taken": (X.take([1, 1]), [1, -1, 1, -1]),
        "slice": (X[1:], [1, -1]),
        "mask": (X[np.array([True, False])], [-1, 0, 0]),
        "pickled": (pickle.loads(pickle.dumps(X)), PARENTS),
        "deep copy": (copy.deepcopy(X), PARENTS),
    }
    for name, (part, expected) in cases.items():
        assert part.parents.tolist() == expected, name
        assert not part.parents.flags.writeable, name
        with pytest.raises(ValueError):
            part.parents.setflags(write=True)


def test_single_sequence_block_is_a_plain_matrix():
    assert sp.issparse(_matrix()[1])  # one sequence: its rows, without a tree


# --- the "__parent__" key of token dicts --------------------------------------


def _dicts(parents=((None, 0, 0), (1, -1))):
    return [[{"w": f"w{q}{i}", "__parent__": p} for i, p in enumerate(sequence)]
            for q, sequence in enumerate(parents)]


def test_parent_key_becomes_the_parents_not_a_feature():
    X = _dicts()
    vectorizer = SequenceVectorizer()
    matrix = vectorizer.fit_transform(X)
    assert matrix.parents.tolist() == [-1, 0, 0, 1, -1]  # None is a root
    names = vectorizer.get_feature_names_out().tolist()
    assert not any("__parent__" in name for name in names)
    assert names == sorted(f"w=w{q}{i}" for q, n in enumerate((3, 2)) for i in range(n))
    assert all("__parent__" in token for sequence in X for token in sequence)  # untouched
    # transform too: the same features as without the key, and the trees
    new = [[{"w": "w00", "__parent__": 1}, {"w": "zzz", "__parent__": None}]]
    transformed = vectorizer.transform(new)
    assert transformed.parents.tolist() == [1, -1]
    plain = vectorizer.transform([[{"w": "w00"}, {"w": "zzz"}]])
    assert plain.parents is None
    assert (transformed.matrix != plain.matrix).nnz == 0
    # fit gives the same vocabulary with and without the key
    stripped = [[{"w": token["w"]} for token in sequence] for sequence in X]
    assert SequenceVectorizer().fit(stripped).get_feature_names_out().tolist() == names


def test_numpy_integers_are_parents():
    X = [[{"w": "a", "__parent__": np.int64(-1)}, {"w": "b", "__parent__": np.int32(0)}]]
    assert SequenceVectorizer().fit_transform(X).parents.tolist() == [-1, 0]


@pytest.mark.parametrize("method", ["fit_transform", "transform"])
@pytest.mark.parametrize("change, error, match", [
    (lambda X: X[1][1].pop("__parent__"), ValueError,
     r"Sequence 1, token 1 has no '__parent__' key, but other tokens give their parent"),
    (lambda X: X[0][0].pop("__parent__"), ValueError, r"Sequence 0, token 0 has no"),
    (lambda X: X[1][0].update(__parent__=True), TypeError,
     r"Sequence 1, token 0: '__parent__' must be an int .* got True"),
    (lambda X: X[0][2].update(__parent__=0.0), TypeError, r"Sequence 0, token 2: .* got 0\.0"),
    (lambda X: X[0][1].update(__parent__="0"), TypeError, r"Sequence 0, token 1: .* got '0'"),
    (lambda X: X[1][0].update(__parent__=5), ValueError,
     r"Sequence 1, token 0: parent 5 is neither -1 \(a root\) nor a token"),
    (lambda X: X[0][1].update(__parent__=1), ValueError, r"Sequence 0, token 1 is its own"),
])
def test_bad_parent_keys_are_named(method, change, error, match):
    vectorizer = SequenceVectorizer().fit(_dicts())
    X = _dicts()
    change(X)
    with pytest.raises(error, match=match):
        getattr(vectorizer if method == "transform" else SequenceVectorizer(), method)(X)


def test_a_sequence_matrix_passes_its_parents_through_the_vectorizer():
    X = _matrix()
    vectorizer = SequenceVectorizer()
    assert vectorizer.fit_transform(X).parents.tolist() == PARENTS
    assert vectorizer.transform(X[[1]]).parents.tolist() == [1, -1]
    assert vectorizer.transform(_matrix(None)).parents is None


def test_parent_key_on_later_tokens_only_is_refused_by_fit():
    # only the first tokens are looked at for trees: a parent given by later
    # tokens alone must not become a feature
    X = [[{"w": "a"}, {"w": "b", "__parent__": 0}], [{"w": "c"}]]
    with pytest.raises(ValueError, match="the first token of their sequence does not"):
        SequenceVectorizer().fit(X)
