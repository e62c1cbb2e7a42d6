"""Shared fixtures: one numba warm-up per session, the data home, small corpora."""

import os
from pathlib import Path

import numpy as np
import pytest

from skcrf.datasets._fetch import CorpusNotFoundError
from skcrf.datasets import get_data_home


def data_home():
    """$SKCRF_DATA, else ../shared/data beside the repository if present, else ~/skcrf_data."""
    if "SKCRF_DATA" in os.environ:
        return get_data_home()
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    return shared if shared.is_dir() else get_data_home()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test (or fixture) that needs a corpus the data home lacks is skipped, not an error.

    The loaders raise CorpusNotFoundError, whose one-line message says how to get
    the corpus; that message becomes the skip reason.
    """
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(CorpusNotFoundError):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: corpus not available: {call.excinfo.value}")


@pytest.fixture(scope="session", autouse=True)
def warm_kernels():
    """Compile (or load from numba's cache) every kernel once for the session."""
    import scipy.sparse as sp

    from skcrf.features._parents import checked_parents
    from skcrf.features.arrays import FeatureArrays, csr_times_dense
    from skcrf.inference.chain.order1 import forward_backward, viterbi
    from skcrf.inference.tree.passes import tree_forward_backward, tree_viterbi
    from skcrf.learning.objective import NegativeLogLikelihood
    from skcrf.structures._parameters import StatePairs
    from skcrf.structures.tree.structure import TreeStructure
    from tests._chain_loss import chain_loss

    unary = np.zeros((3, 2))
    transitions = np.zeros((2, 2))
    bias = np.zeros(2)
    offsets = np.array([0, 1, 3], dtype=np.int64)
    forward_backward(unary, transitions, bias, bias, offsets, True)
    viterbi(unary, transitions, bias, bias, offsets)
    parents = np.array([-1, -1, 0], dtype=np.int64)  # the second sequence: a root, a child
    # the estimators pass checked, read-only parents: numba compiles those apart
    checked = checked_parents(parents, offsets)
    for tree_parents in (parents, checked):
        for with_counts in (True, False):
            tree_forward_backward(unary, transitions, bias, tree_parents, offsets, with_counts)
        tree_viterbi(unary, transitions, bias, tree_parents, offsets)
    for X in (sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])),
              sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))):
        csr_times_dense(X, np.ones((2, 2)))
        labels = np.array([0, 1, 0])
        loss = chain_loss(X, offsets, labels, StatePairs.observed(X, labels, 2), 1.0)
        loss(np.zeros(loss.n_parameters))
        features = FeatureArrays.from_sparse(X)
        features.parents = checked
        loss = NegativeLogLikelihood(TreeStructure(2, StatePairs.observed(X, labels, 2)),
                                     features, offsets, labels, 1.0)
        loss(np.zeros(loss.n_parameters))
    # binary pairs held by 8 tokens: the fused kernels merge them (the merging kernels)
    X = sp.csr_matrix(np.ones((8, 2)))
    labels = np.array([0, 1] * 4)
    offsets = np.array([0, 3, 8], dtype=np.int64)
    loss = chain_loss(X, offsets, labels, StatePairs.observed(X, labels, 2), 1.0)
    assert loss.terms.fused.merged_parts.shape[0] == 1
    loss(np.zeros(loss.n_parameters))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "corpus_or_sample: reads CoNLL-2002 Spanish when the data home has it, else "
        "the embedded sample (tests/_corpora.py); .ci/run runs these once more with no corpora")


def pytest_collection_modifyitems(config, items):
    """Mark every test that reads a corpus or, offline, the sample (see corpus_or_sample)."""
    for item in items:
        if "corpus_or_sample" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus_or_sample)


@pytest.fixture(scope="session")
def corpus_or_sample():
    """What a fixture that calls ``tests._corpora.tagged_sentences`` requests, to be marked.

    Such a test runs on CoNLL-2002 Spanish where the data home has it and on
    the embedded sample elsewhere: ``.ci/run`` runs the tests marked
    ``corpus_or_sample`` once more with an empty data home, so that the offline
    path (a fresh clone's ``make test``) is tested too.
    """
    return data_home()


@pytest.fixture(scope="session")
def tagged_small(corpus_or_sample):
    """300 training and 100 test sentences of (word, POS) tokens with IOB2 span tags.

    CoNLL-2002 Spanish when the data home has it, else the embedded sample of UD
    English EWT with its names tagged (``tests/_corpora.py``): tests that need
    *a* corpus run offline too.
    """
    from tests._corpora import tagged_sentences

    return tagged_sentences(300, 100)[:4]
