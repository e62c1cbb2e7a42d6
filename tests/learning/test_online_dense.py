"""The online solvers on a dense block: the same weights as the same values in CSR columns.

The order-1 chain's epoch kernels (fully labelled and constrained visits)
read the block themselves; chains of order 2 and trees step through
:class:`~skcrf.learning._online_dense.DenseOnline`'s token form. Each fit is
compared with the fit of the same values handed over as CSR columns (the
route every online solver took before), to 1e-9 in float64.
"""

import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import skcrf.features.arrays as arrays_module
from skcrf import CRFClassifier, SequenceMatrix, TreeCRF
from skcrf.datasets import make_sequence_classification
from skcrf.learning import _online_partial
from skcrf.learning._online_kernels import begin_step

SOLVERS = ["sgd", "perceptron", "passive_aggressive", "arow"]
COEFS = ("coef_", "transition_coef_", "start_coef_", "end_coef_")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(n_sequences=40, n_features=5, n_classes=3, seed=0, dtype=np.float64):
    X, y = make_sequence_classification(n_sequences, n_features=n_features,
                                        n_classes=n_classes, length_range=(1, 9),
                                        class_sep=0.6, random_state=seed)
    return [x.astype(dtype) for x in X], y


def _as_csr(X, sparse=None):
    """The same values as CSR columns (after ``sparse``'s columns, if given)."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    dense = sp.csr_matrix(np.vstack(X).astype(np.float64))
    matrix = dense if sparse is None else sp.hstack([sparse, dense], format="csr")
    return SequenceMatrix(matrix, offsets)


def _with_block(X, sparse):
    """A SequenceMatrix of a sparse part and the arrays as its dense block."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    return SequenceMatrix(sparse, offsets, dense=np.vstack(X))


def _sparse_part(X, seed=1):
    """Binary sparse columns, one per token from 4 (a word-like feature)."""
    n_tokens = sum(len(x) for x in X)
    columns = np.random.default_rng(seed).integers(0, 4, n_tokens)
    return sp.csr_matrix((np.ones(n_tokens), (np.arange(n_tokens), columns)),
                         shape=(n_tokens, 4))


def _assert_same_weights(a, b, tol=1e-9):
    for name in COEFS:
        if name not in vars(b):
            continue
        first, second = getattr(a, name), getattr(b, name)
        finite = np.isfinite(second)
        np.testing.assert_array_equal(np.isfinite(first), finite)
        scale = max(1.0, float(np.abs(second[finite]).max(initial=0.0)))
        np.testing.assert_allclose(first[finite], second[finite], rtol=0, atol=tol * scale,
                                   err_msg=name)


def _fit_without_csr_copy(model, X, y, monkeypatch, **fit_params):
    """``model.fit`` where turning the dense block into CSR columns raises."""
    def refuse(X):
        raise AssertionError("the dense block was copied into CSR columns")

    with monkeypatch.context() as patch:
        patch.setattr(arrays_module, "with_dense_columns", refuse)
        return model.fit(X, y, **fit_params)


SETTINGS = [
    ("sgd", {}),
    ("sgd", {"l1_ratio": 0.5, "alpha": 0.5}),
    ("sgd", {"average": True}),
    ("sgd", {"learning_rate": "constant", "eta0": 0.05, "alpha": 0.0}),
    ("perceptron", {}),
    ("perceptron", {"average": False}),
    ("passive_aggressive", {}),
    ("passive_aggressive", {"C": 0.1}),
    ("arow", {}),
    ("arow", {"average": True}),
]


@pytest.mark.parametrize("solver,params", SETTINGS)
def test_fit_on_arrays_equals_csr(solver, params, monkeypatch):
    X, y = _data()
    kw = dict(solver=solver, max_iter=4, tol=0.0, random_state=0, **params)
    dense = _fit_without_csr_copy(CRFClassifier(**kw), X, y, monkeypatch)
    csr = CRFClassifier(**kw).fit(_as_csr(X), y)
    _assert_same_weights(dense, csr)
    assert dense.loss_curve_ == pytest.approx(csr.loss_curve_, rel=1e-9)


@pytest.mark.parametrize("solver", SOLVERS)
def test_sparse_part_and_block_with_sample_weights(solver, monkeypatch):
    X, y = _data(seed=3)
    sparse = _sparse_part(X)
    weights = np.random.default_rng(0).choice([0.0, 0.5, 1.0, 2.0, 3.5], len(X))
    kw = dict(solver=solver, max_iter=3, tol=0.0, random_state=0,
              l1_ratio=0.3 if solver == "sgd" else 0.0)
    dense = _fit_without_csr_copy(CRFClassifier(**kw), _with_block(X, sparse), y,
                                  monkeypatch, sample_weight=weights)
    csr = CRFClassifier(**kw).fit(_as_csr(X, sparse), y, sample_weight=weights)
    _assert_same_weights(dense, csr)


@pytest.mark.parametrize("solver", SOLVERS)
def test_partial_fit_batches_equal_csr(solver):
    X, y = _data(n_sequences=45, seed=4)
    csr = _as_csr(X)
    kw = dict(solver=solver, random_state=0, eta0=0.1, l1_ratio=0.2 if solver == "sgd" else 0)
    dense_model, csr_model = CRFClassifier(**kw), CRFClassifier(**kw)
    for lo, hi in [(0, 15), (15, 30), (30, 45)]:
        dense_model.partial_fit(X[lo:hi], y[lo:hi], classes=[0, 1, 2])
        csr_model.partial_fit(csr[lo:hi], y[lo:hi], classes=[0, 1, 2])
        _assert_same_weights(dense_model, csr_model)
    assert dense_model.solver_state_["n_dense"] == X[0].shape[1]
    assert "n_dense" not in csr_model.solver_state_


@pytest.mark.parametrize("solver", SOLVERS)
def test_float32_block_equals_its_values_in_float64_csr(solver):
    # the kernels read float32 values as float64, as their CSR columns hold them
    X, y = _data(seed=5, dtype=np.float32)
    kw = dict(solver=solver, max_iter=3, tol=0.0, random_state=0)
    _assert_same_weights(CRFClassifier(**kw).fit(X, y),
                         CRFClassifier(**kw).fit(_as_csr(X), y))


def _partial_labels(y, seed=0):
    """Some tokens unknown (None) or a set, in about half the sequences."""
    rng = np.random.default_rng(seed)
    out = []
    for labels in y:
        labels = list(labels)
        if rng.random() < 0.5:
            for i in range(len(labels)):
                r = rng.random()
                if r < 0.3:
                    labels[i] = None
                elif r < 0.45:
                    labels[i] = {labels[i], (labels[i] + 1) % 3}
        out.append(labels)
    return out


@pytest.mark.parametrize("solver", SOLVERS)
def test_partial_labels_batched_route_equals_csr(solver, monkeypatch):
    X, y = _data(seed=6)
    y = _partial_labels(y)
    kw = dict(solver=solver, max_iter=3, tol=0.0, random_state=0)
    dense = _fit_without_csr_copy(CRFClassifier(**kw), X, y, monkeypatch)
    _assert_same_weights(dense, CRFClassifier(**kw).fit(_as_csr(X), y))


def test_constrained_sgd_visits_by_the_token_form_route(monkeypatch):
    # the kernel hands every constrained visit over, begun, as it hands over a
    # sequence whose scores its scaled passes cannot take: DenseOnline's token
    # form (the chain's statistics on unary + X_q @ W.T) finishes each
    X, y = _data(seed=7)
    y = _partial_labels(y, seed=1)
    kw = dict(solver="sgd", max_iter=2, tol=0.0, random_state=0)
    csr = CRFClassifier(**kw).fit(_as_csr(X), y)
    handed = []

    def hand_over(settings, counters, w, l1_applied, average_sum, visit_sequences,
                  visit_factors, first_visit, *layout):
        if first_visit < visit_sequences.shape[0]:
            begin_step(settings, counters, visit_factors[first_visit])
            handed.append(first_visit)
        return first_visit

    monkeypatch.setattr(_online_partial, "sgd_constrained_visits", hand_over)
    dense = CRFClassifier(**kw).fit(X, y)
    assert handed
    _assert_same_weights(dense, csr)


@pytest.mark.parametrize("solver", ["sgd", "perceptron", "arow"])
def test_order_2_token_form_route_equals_csr(solver, monkeypatch):
    X, y = _data(n_sequences=25, seed=8)
    kw = dict(solver=solver, order=2, max_iter=2, tol=0.0, random_state=0)
    dense = _fit_without_csr_copy(CRFClassifier(**kw), X, y, monkeypatch)
    csr = CRFClassifier(**kw).fit(_as_csr(X), y)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dense.pattern_coef_, csr.pattern_coef_, rtol=0, atol=1e-9)


def _trees(X, seed=0):
    """Random parents per sequence (a root, each other node under an earlier one)."""
    rng = np.random.default_rng(seed)
    return [np.array([-1] + [int(rng.integers(0, i)) for i in range(1, len(x))])
            for x in X]


def _tree_inputs(X, parents):
    """The trees' values as a dense block, and the same values as CSR columns."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    parents = np.concatenate(parents)
    block = SequenceMatrix(sp.csr_matrix((offsets[-1], 0)), offsets, dense=np.vstack(X),
                           parents=parents)
    return block, SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets, parents=parents)


def _assert_same_tree_weights(a, b):
    for name in ("coef_", "transition_coef_", "root_coef_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-9)


@pytest.mark.parametrize("solver", ["sgd", "passive_aggressive"])
def test_tree_token_form_route_equals_csr(solver, monkeypatch):
    X, y = _data(n_sequences=25, seed=9)
    block, as_csr = _tree_inputs(X, _trees(X))
    kw = dict(solver=solver, max_iter=2, tol=0.0, random_state=0)
    dense = _fit_without_csr_copy(TreeCRF(**kw), block, y, monkeypatch)
    _assert_same_tree_weights(dense, TreeCRF(**kw).fit(as_csr, y))


@pytest.mark.parametrize("solver", ["sgd", "arow"])
def test_weights_do_not_depend_on_threads(solver):
    X, y = _data(seed=10)
    kw = dict(solver=solver, max_iter=3, tol=0.0, random_state=0)
    one = CRFClassifier(n_jobs=1, **kw).fit(X, y)
    two = CRFClassifier(n_jobs=2, **kw).fit(X, y)
    for name in COEFS:
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))


def test_early_stopping_reads_the_block():
    X, y = _data(seed=11)
    kw = dict(solver="sgd", max_iter=5, tol=0.0, random_state=0, early_stopping=True,
              n_iter_no_change=10)
    dense = CRFClassifier(**kw).fit(X, y)
    csr = CRFClassifier(**kw).fit(_as_csr(X), y)
    # the held-out sequences' accuracy decides when to stop: both stop alike
    assert dense.n_iter_ == csr.n_iter_
    _assert_same_weights(dense, csr)


def test_partial_fit_continues_a_state_that_read_the_block_as_csr(monkeypatch):
    # a model whose first batches read the block as CSR columns (saved before the
    # online solvers read dense blocks) keeps reading later batches so
    X, y = _data(n_sequences=30, seed=12)
    kw = dict(solver="sgd", random_state=0, eta0=0.1)
    old, csr = CRFClassifier(**kw), CRFClassifier(**kw)
    with monkeypatch.context() as patch:
        patch.setattr(CRFClassifier, "_reads_dense_block", lambda self, *a, **k: False)
        old.partial_fit(X[:15], y[:15], classes=[0, 1, 2])
    assert "n_dense" not in old.solver_state_
    old.partial_fit(X[15:], y[15:])
    csr.partial_fit(_as_csr(X[:15]), y[:15], classes=[0, 1, 2])
    csr.partial_fit(_as_csr(X[15:]), y[15:])
    _assert_same_weights(old, csr)


def test_a_saved_dense_model_continues_after_loading(tmp_path):
    from skcrf import load_model, save_model

    X, y = _data(n_sequences=30, seed=13)
    kw = dict(solver="arow", random_state=0)
    model, kept = CRFClassifier(**kw), CRFClassifier(**kw)
    model.partial_fit(X[:15], y[:15], classes=[0, 1, 2])
    kept.partial_fit(X[:15], y[:15], classes=[0, 1, 2])
    save_model(model, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    assert loaded.solver_state_["n_dense"] == X[0].shape[1]
    loaded.partial_fit(X[15:], y[15:])
    kept.partial_fit(X[15:], y[15:])
    for name in COEFS:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(kept, name))


@pytest.mark.parametrize("n_dense", [-1, 99, 2.5])
def test_a_damaged_n_dense_is_named(n_dense):
    X, y = _data(n_sequences=10, seed=14)
    model = CRFClassifier(solver="perceptron", random_state=0)
    model.partial_fit(X, y, classes=[0, 1, 2])
    model.solver_state_["n_dense"] = n_dense
    with pytest.raises(ValueError, match="'n_dense' must be the dense block's width"):
        model.partial_fit(X, y)


@pytest.mark.parametrize("solver", ["sgd", "perceptron"])
def test_order_2_partial_labels_read_the_block(solver, monkeypatch):
    # the constrained visits of order >= 2 go through the token form, masked
    X, y = _data(n_sequences=25, seed=10)
    y = _partial_labels(y, seed=2)
    kw = dict(solver=solver, order=2, max_iter=2, tol=0.0, random_state=0)
    dense = _fit_without_csr_copy(CRFClassifier(**kw), X, y, monkeypatch)
    csr = CRFClassifier(**kw).fit(_as_csr(X), y)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dense.pattern_coef_, csr.pattern_coef_, rtol=0, atol=1e-9)


@pytest.mark.parametrize("solver", ["sgd", "arow"])
def test_tree_partial_labels_read_the_block(solver, monkeypatch):
    X, y = _data(n_sequences=25, seed=11)
    y = _partial_labels(y, seed=3)
    block, as_csr = _tree_inputs(X, _trees(X, seed=1))
    kw = dict(solver=solver, max_iter=2, tol=0.0, random_state=0)
    dense = _fit_without_csr_copy(TreeCRF(**kw), block, y, monkeypatch)
    _assert_same_tree_weights(dense, TreeCRF(**kw).fit(as_csr, y))


@pytest.mark.parametrize("solver,kernel", [("sgd", "sgd_chain_visits"),
                                           ("perceptron", "margin_chain_visits")])
def test_a_sparse_fit_compiles_its_kernels_without_the_dense_route(solver, kernel):
    """Without a block the epoch kernels get ``dense=None``: numba can type that
    only by pruning the ``dense is None`` branches, so their specialization holds
    no BLAS product (cold compile time a sparse fit would pay for nothing)."""
    from numba import types

    from skcrf.learning import _online_chain

    X, y = _data(n_sequences=10)
    CRFClassifier(solver=solver, max_iter=2).fit(_as_csr(X), y)
    dispatcher = getattr(_online_chain, kernel)
    at = list(inspect.signature(dispatcher.py_func).parameters).index("dense")
    assert types.none in [signature[at] for signature in dispatcher.signatures]
