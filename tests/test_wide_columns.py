"""A wide nameless input (SequenceHasher(n_features=2**24)) costs what its used columns cost.

The estimator keeps the columns the training data holds (``feature_columns_``);
these tests check that nothing is sized by the width (memory of fit, predict,
model files), and that the compact model is the full-width one: same
predictions, marginals and weights of the used columns, 0 for unseen columns,
``partial_fit`` growing the kept columns.
"""
import io
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, load_model, save_model
from skcrf._estimators import columns as columns_module
from skcrf._estimators.columns import compacted, grown_columns, used_columns
from skcrf.explain import explain_token
from skcrf.features import SequenceHasher
from skcrf.inspection import state_features

X_DICTS = [[{"a": 1.0, "b": 2.0}, {"c": 1.0}, {"a": 1.0, "d": -1.0}],
           [{"c": 1.0}, {"a": 0.5}], [{"b": 1.0}, {"d": 1.0}, {"c": 2.0}]]
Y = [["A", "B", "A"], ["B", "A"], ["A", "A", "B"]]

_MEMORY_SCRIPT = textwrap.dedent("""
    import io, tracemalloc, warnings
    warnings.simplefilter("ignore")
    from skcrf import CRFClassifier, load_model, save_model
    from skcrf.features import SequenceHasher
    X = [[{"a": 1.0, "b": 1.0}, {"c": 1.0}]] * 4
    y = [["A", "B"]] * 4
    model = CRFClassifier(max_iter=5).fit(X[:1] * 2, y[:1] * 2)  # kernels loaded first
    tracemalloc.start()
    hasher = SequenceHasher(n_features=2 ** 24)
    model = CRFClassifier(max_iter=5).fit(hasher.transform(X), y)
    model.predict(hasher.transform([[{"never seen": 1.0}, {"c": 1.0}]]))
    file = io.BytesIO()
    save_model(model, file)
    file.seek(0)
    load_model(file).predict(hasher.transform(X))
    print(tracemalloc.get_traced_memory()[1])
""")


def test_a_2_to_24_hasher_on_a_toy_costs_no_memory_per_unused_column():
    # before: 1.6 GB (names x0..x16777215 and a 2 x 2**24 coef_); in a child, so
    # that the figure is this run's alone
    peak = int(subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT], check=True,
                              capture_output=True, text=True, timeout=600,
                              cwd=Path(__file__).resolve().parents[1]).stdout.split()[-1])
    assert peak < 50 * 2 ** 20, f"peak {peak / 2 ** 20:.0f} MiB"


def _wide(X, width=2 ** 20):
    return SequenceHasher(n_features=width).transform(X)


@pytest.fixture(scope="module")
def wide_and_full():
    """The same model fitted on a wide hashed input (compacted) and on its used columns.

    The full-width fit of the used columns alone is the reference: a column
    the data never holds gets weight 0 under L2 and adds nothing.
    """
    X = _wide(X_DICTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wide = CRFClassifier(max_iter=50).fit(X, Y)
        used = used_columns(X)
        narrow = compacted(X, used)
        full = CRFClassifier(max_iter=50).fit(narrow, Y)
    return X, wide, full


def test_the_model_keeps_the_used_columns_only(wide_and_full):
    X, wide, _ = wide_and_full
    used = np.unique(X.matrix.indices)
    assert np.array_equal(wide.feature_columns_, used)
    assert wide.coef_.shape == (2, used.shape[0])
    assert wide.n_features_in_ == 2 ** 20
    assert wide.feature_names_.tolist() == [f"x{j}" for j in used.tolist()]


def test_the_compact_model_is_the_full_width_model(wide_and_full):
    X, wide, full = wide_and_full
    np.testing.assert_array_equal(wide.coef_, full.coef_)
    np.testing.assert_array_equal(wide.transition_coef_, full.transition_coef_)
    narrow = compacted(X, wide.feature_columns_)
    for a, b in zip(wide.predict_marginals(X), full.predict_marginals(narrow)):
        np.testing.assert_array_equal(a, b)


def test_unseen_columns_score_zero(wide_and_full):
    X, wide, _ = wide_and_full
    # the same sequences with extra features the training data never held
    noisy = [[dict(token, **{f"unseen{k}": 3.0}) for k, token in enumerate(seq)]
             for seq in X_DICTS]
    Xn = _wide(noisy)
    assert np.setdiff1d(Xn.matrix.indices, wide.feature_columns_).size
    for a, b in zip(wide.predict_marginals(Xn), wide.predict_marginals(X)):
        np.testing.assert_array_equal(a, b)


def test_a_width_other_than_the_training_width_is_still_refused(wide_and_full):
    _, wide, _ = wide_and_full
    with pytest.raises(ValueError, match="features"):
        wide.predict(_wide(X_DICTS, 2 ** 19))


def test_model_files_and_pipelines_keep_the_columns(wide_and_full):
    X, wide, _ = wide_and_full
    file = io.BytesIO()
    save_model(wide, file)
    assert len(file.getvalue()) < 200_000
    file.seek(0)
    loaded = load_model(file)
    np.testing.assert_array_equal(loaded.feature_columns_, wide.feature_columns_)
    for a, b in zip(loaded.predict_marginals(X), wide.predict_marginals(X)):
        np.testing.assert_array_equal(a, b)
    pipe = make_pipeline(SequenceHasher(n_features=2 ** 20), CRFClassifier(max_iter=50))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_DICTS, Y)
    file = io.BytesIO()
    save_model(pipe, file)
    file.seek(0)
    assert [p.tolist() for p in load_model(file).predict(X_DICTS)] == \
        [p.tolist() for p in wide.predict(X)]


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.feature_columns_.__setitem__(0, 2 ** 20), "outside"),
    (lambda m: m.feature_columns_.__setitem__(1, m.feature_columns_[0]), "twice"),
    (lambda m: setattr(m, "feature_names_", m.feature_names_[::-1].copy()), "names"),
    (lambda m: setattr(m, "feature_columns_", m.feature_columns_[:-1].copy()), "feature"),
])
def test_bad_feature_columns_are_refused_at_load(wide_and_full, edit, match):
    _, wide, _ = wide_and_full
    file = io.BytesIO()
    save_model(wide, file)
    file.seek(0)
    model = load_model(file)
    edit(model)
    file = io.BytesIO()
    with pytest.raises(ValueError, match=match):
        save_model(model, file)
        file.seek(0)
        load_model(file)


def test_inspection_and_explanations_name_the_input_columns(wide_and_full):
    X, wide, _ = wide_and_full
    names = {row[0] for row in state_features(wide, top=None)}
    assert names <= set(wide.feature_names_.tolist())
    explanation = explain_token(wide, X[:1], 0)
    listed = {row.term for row in explanation.rows if not row.term.startswith("(")}
    active = X.matrix[0].indices.tolist()
    assert listed == {f"x{j}" for j in active}


def test_partial_fit_appends_a_later_batch_s_new_columns():
    hasher = SequenceHasher(n_features=2 ** 20)
    model = CRFClassifier(solver="sgd", shuffle=False, random_state=0)
    model.partial_fit(hasher.transform(X_DICTS[:2]), Y[:2], classes=["A", "B"])
    first = model.feature_columns_.copy()
    before = model.coef_.copy()
    model.partial_fit(hasher.transform(X_DICTS[2:]), Y[2:])
    assert np.array_equal(model.feature_columns_[:first.shape[0]], first)
    assert set(model.feature_columns_.tolist()) == set(
        np.unique(hasher.transform(X_DICTS).matrix.indices).tolist())
    assert model.coef_.shape == (2, model.feature_columns_.shape[0])
    assert not np.array_equal(model.coef_[:, :first.shape[0]], before)  # it trained on
    # the batches in the other order: the same columns, another order of weights
    other = CRFClassifier(solver="sgd", shuffle=False, random_state=0)
    other.partial_fit(hasher.transform(X_DICTS[2:]), Y[2:], classes=["A", "B"])
    other.partial_fit(hasher.transform(X_DICTS[:2]), Y[:2])
    assert set(other.feature_columns_.tolist()) == set(model.feature_columns_.tolist())
    # predictions read the unsorted kept columns right: same as on the compact input
    X = hasher.transform(X_DICTS)
    narrow = compacted(X, model.feature_columns_)
    assert narrow.n_features == model.coef_.shape[1]
    unary = narrow.matrix @ model.coef_.T
    full_width = X.matrix[:, model.feature_columns_] @ model.coef_.T
    np.testing.assert_array_equal(unary.toarray() if hasattr(unary, "toarray") else unary,
                                  full_width.toarray() if hasattr(full_width, "toarray")
                                  else full_width)


def test_semi_markov_and_higher_orders_compact_too():
    X = _wide(X_DICTS)
    n_used = np.unique(X.matrix.indices).shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for model in (CRFClassifier(order=2, max_iter=10),
                      CRFClassifier(prune_threshold=0.01, max_iter=10),
                      SemiMarkovCRF(max_segment_length=2, max_iter=10)):
            model.fit(X, Y)
            assert model.coef_.shape[1] == n_used
            assert len(model.predict(X)) == len(X)


def test_narrow_or_named_inputs_keep_their_full_width():
    X = _wide(X_DICTS, 64)
    assert used_columns(X) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = CRFClassifier(max_iter=5).fit(X, Y)
    assert model.coef_.shape == (2, 64) and not hasattr(model, "feature_columns_")
    named = SequenceMatrix(X.matrix, X.offsets,
                           feature_names=[f"f{j}" for j in range(64)])
    assert used_columns(named) is None


def test_compacted_drops_other_columns_and_keeps_row_order(monkeypatch):
    monkeypatch.setattr(columns_module, "WIDE_UNUSED", 1)
    X = _wide(X_DICTS, 1000)
    columns = np.unique(X.matrix.indices)[::-1].copy()  # an unsorted order
    grown = grown_columns(_wide([[{"zzz": 1.0}]], 1000), columns)
    assert grown.shape[0] == columns.shape[0] + 1
    narrow = compacted(X, columns[1:])
    expected = X.matrix[:, columns[1:]].toarray()
    np.testing.assert_array_equal(narrow.matrix.toarray(), expected)
    assert narrow.matrix.has_sorted_indices


def test_a_pipeline_whose_hasher_width_is_not_the_model_s_is_refused_at_load():
    # n_features_in_ no longer sizes the weights of a compact model: the pipeline's
    # rule ties it to the hasher's width (it did not run for pipelines before)
    pipe = make_pipeline(SequenceHasher(n_features=2 ** 20), CRFClassifier(max_iter=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X_DICTS, Y)
    pipe[-1].n_features_in_ = 2 ** 20 + 1
    file = io.BytesIO()
    save_model(pipe, file)
    file.seek(0)
    with pytest.raises(ValueError, match="its SequenceHasher makes 1048576 features, but the "
                                         "CRFClassifier after it was fitted on 1048577"):
        load_model(file)


def test_a_user_matrix_with_repeated_entries_compacts_to_their_sum():
    import scipy.sparse as sp

    cols, values = np.array([7, 7, 99, 5, 7]), np.array([1.0, 2.0, 1.0, 1.0, 1.0])
    matrix = sp.csr_matrix((values, cols, np.array([0, 3, 4, 5])), shape=(3, 2 ** 20))
    assert not matrix.has_canonical_format
    narrow = compacted(SequenceMatrix(matrix, [0, 3]), np.array([5, 7, 99]))
    np.testing.assert_array_equal(narrow.matrix.toarray(),
                                  [[0.0, 3.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert narrow.matrix.has_canonical_format
