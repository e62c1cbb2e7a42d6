"""skcrf.dask on a LocalCluster of two worker processes: distributed fit == local fit,
prediction over partitions, a worker lost mid-fit, joblib's Dask backend, bad input."""

import threading
import time
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")

import dask.bag as db  # noqa: E402

import skcrf.dask  # noqa: E402
from skcrf import CRFClassifier, SemiMarkovCRF, TreeCRF  # noqa: E402
from tests._ties import assert_same_predictions  # noqa: E402


@pytest.fixture(scope="module")
def client(warm_kernels):
    # the workers inherit sys.path (spawned), so they import this checkout's skcrf
    # and load the kernels numba cached beside it
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _features(sentence):
    return [{"w": w.lower(), "title": w.istitle(), "pos": p,
             "prev": sentence[i - 1][0].lower() if i else "<s>"}
            for i, (w, p) in enumerate(sentence)]


@pytest.fixture(scope="module")
def ner(tagged_small):
    X_train, y_train, X_test, _ = tagged_small
    return ([_features(s) for s in X_train[:200]], y_train[:200],
            [_features(s) for s in X_test])


@pytest.fixture(scope="module")
def trees():
    """Dependency trees of UD English EWT: those of the sample that ships with skcrf."""
    from skcrf.datasets import load_ud_sample

    X, y = load_ud_sample("train", columns=("form", "upos"), label="deprel")
    X = [[{"w": form.lower(), "pos": pos, "__parent__": head}
          for form, pos, head in sentence] for sentence in X[:150]]
    return X, y[:150]


def _bags(X, y, npartitions):
    pairs = db.from_sequence(list(zip(X, y)), npartitions=npartitions)
    return pairs.pluck(0), pairs.pluck(1)


def _quiet_fit(fit, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(*args, **kwargs)


def _assert_same_model(local, dist, rtol=1e-9):
    """Same fitted attributes; the weights equal to ``rtol`` relative to their largest."""
    names = sorted(a for a in vars(local) if a.endswith("_") and not a.startswith("_"))
    assert names == sorted(a for a in vars(dist) if a.endswith("_") and not a.startswith("_"))
    for name in names:
        a, b = getattr(local, name), getattr(dist, name)
        if hasattr(a, "toarray"):
            assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            a, b = a.toarray(), b.toarray()
        if a is None:  # vectorizer_ of positional columns
            assert b is None, name
        elif name == "vectorizer_":
            assert a.feature_names_ == b.feature_names_ and a.vocabulary_ == b.vocabulary_
            assert a.vector_widths_ == getattr(b, "vector_widths_", {})
        elif name == "loss_curve_" or name.endswith("coef_"):
            a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            assert a.shape == b.shape, name
            finite = np.isfinite(a)
            assert np.array_equal(finite, np.isfinite(b)), name
            scale = np.abs(a[finite]).max(initial=1.0)
            assert np.abs(a[finite] - b[finite]).max(initial=0.0) <= rtol * scale, name
        elif isinstance(a, np.ndarray):
            assert np.array_equal(a, b), name
        else:
            assert a == b, name


@pytest.mark.parametrize("params", [
    {},
    {"transition_features": ["pos="], "allowed_transitions": "auto"},
    {"order": 3, "min_pattern_freq": 2},
], ids=["plain", "edges-auto", "order3"])
def test_chain_distributed_fit_equals_local_fit(client, ner, params):
    X, y, X_test = ner
    local = _quiet_fit(CRFClassifier(max_iter=40, **params).fit, X, y)
    X_bag, y_bag = _bags(X, y, npartitions=3)
    dist = _quiet_fit(skcrf.dask.fit, CRFClassifier(max_iter=40, **params), X_bag, y_bag,
                      client=client)
    assert type(dist) is CRFClassifier and dist.n_iter_ == local.n_iter_
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X_test)
    # prediction mapped over the partitions of a bag: the same model's, exactly
    expected = dist.predict(X_test)
    test_bag = db.from_sequence(X_test, npartitions=3)
    mapped = skcrf.dask.predict(dist, test_bag).compute()
    assert len(mapped) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(expected, mapped))
    marginals = skcrf.dask.predict_marginals(dist, test_bag).compute()
    for a, b in zip(local.predict_marginals(X_test[:10]), marginals[:10]):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_one_partition_is_bitwise_the_local_fit(client, ner):
    """With one partition the sums are the local ones: nothing differs, not even the last bit."""
    X, y, _ = ner
    local = _quiet_fit(CRFClassifier(max_iter=15).fit, X[:80], y[:80])
    dist = _quiet_fit(skcrf.dask.fit, CRFClassifier(max_iter=15), *_bags(X[:80], y[:80], 1),
                      client=client)
    _assert_same_model(local, dist, rtol=0.0)


def test_tree_distributed_fit_equals_local_fit(client, trees):
    X, y = trees
    local = _quiet_fit(TreeCRF(max_iter=30).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, TreeCRF(max_iter=30), *_bags(X, y, 2), client=client)
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X[:50])


@pytest.mark.parametrize("npartitions", [1, 3])
def test_semimarkov_distributed_fit_equals_local_fit(client, ner, npartitions):
    """Segment labels, longest segments and token pairs reduced over partitions: the local model.

    One partition is the local fit bit for bit.
    """
    X, y, X_test = ner
    n = 200 if npartitions > 1 else 80
    local = _quiet_fit(SemiMarkovCRF(max_iter=25).fit, X[:n], y[:n])
    dist = _quiet_fit(skcrf.dask.fit, SemiMarkovCRF(max_iter=25), *_bags(X[:n], y[:n],
                                                                         npartitions),
                      client=client)
    assert type(dist) is SemiMarkovCRF and dist.n_iter_ == local.n_iter_
    assert dist.scheme_ == local.scheme_ == "IOB2"
    _assert_same_model(local, dist, rtol=1e-9 if npartitions > 1 else 0.0)
    assert_same_predictions(local, dist, X_test)


@pytest.mark.parametrize("params", [{}, {"all_possible_transitions": True},
                                    {"min_pattern_freq": 3}],
                         ids=["seen", "every", "min-freq"])
def test_semimarkov_of_order_2_distributed_fit_equals_local_fit(client, ner, params):
    """The label patterns of the segments, reduced over partitions (they were left out)."""
    X, y, X_test = ner
    estimator = SemiMarkovCRF(order=2, max_iter=20, **params)
    local = _quiet_fit(clone(estimator).fit, X[:120], y[:120])
    dist = _quiet_fit(skcrf.dask.fit, clone(estimator), *_bags(X[:120], y[:120], 3),
                      client=client)
    assert local.label_patterns_.shape[0] > 0
    _assert_same_model(local, dist)
    assert_same_predictions(local, dist, X_test)


def test_semimarkov_segment_too_long_is_named_as_a_local_fit_names_it(client, ner):
    X, y, _ = ner
    with pytest.raises(ValueError, match=r"Sequence \d+ has a segment") as local:
        SemiMarkovCRF(max_segment_length=1).fit(X[:60], y[:60])
    where = str(local.value).split(" tokens (")[0]  # the sequence, the label, the length
    with pytest.raises(ValueError, match=where.replace("'", ".")):
        skcrf.dask.fit(SemiMarkovCRF(max_segment_length=1), *_bags(X[:60], y[:60], 3),
                       client=client)


def test_worker_lost_mid_fit_is_survived(client, ner):
    """A worker process dies mid-fit: its partitions are rebuilt elsewhere, the fit ends equal."""
    X, y, _ = ner
    local = _quiet_fit(CRFClassifier(max_iter=40).fit, X, y)
    outcome = {}

    def run():
        try:
            outcome["fit"] = _quiet_fit(skcrf.dask.fit, CRFClassifier(max_iter=40),
                                        *_bags(X, y, 4), client=client, timeout=120)
        except Exception as error:  # reported below
            outcome["error"] = error

    def evaluating(dask_scheduler):
        return sum(str(key).startswith("evaluate") for key in dask_scheduler.tasks)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while client.run_on_scheduler(evaluating) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert thread.is_alive(), outcome
    victim = sorted(client.scheduler_info()["workers"])[0]
    client.run(lambda: __import__("os")._exit(1), workers=[victim], wait=False,
               on_error="ignore")
    thread.join(180)
    assert not thread.is_alive(), "the fit hung after a worker died"
    assert "error" not in outcome, outcome.get("error")
    _assert_same_model(local, outcome["fit"])
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_workers_hold_kernels_to_their_thread_share(client):
    from skcrf._utils.parallel import effective_n_threads

    assert client.submit(effective_n_threads, None, pure=False).result() == 1
    assert client.submit(effective_n_threads, -1, pure=False).result() == 1
    assert effective_n_threads(None) >= 1  # the client process is not a worker


def test_grid_search_on_the_dask_backend_equals_the_local_search(client, tagged_small):
    import joblib
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from skcrf import SequenceVectorizer, TokenFeaturizer

    X, y = tagged_small[0][:120], tagged_small[1][:120]
    pipe = make_pipeline(TokenFeaturizer(window=1, columns={1: 0}), SequenceVectorizer(),
                         CRFClassifier(max_iter=20))
    grid = {"crfclassifier__alpha": [0.1, 1.0]}
    local = _quiet_fit(GridSearchCV(pipe, grid, cv=2).fit, X, y)
    with joblib.parallel_backend("dask"):
        dist = _quiet_fit(GridSearchCV(pipe, grid, cv=2).fit, X, y)
    for key in ("mean_test_score", "split0_test_score", "split1_test_score"):
        assert np.array_equal(local.cv_results_[key], dist.cv_results_[key]), key
    assert local.best_params_ == dist.best_params_
    a, b = local.best_estimator_[-1], dist.best_estimator_[-1]
    assert np.array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("n_parts", [1, 2, 5, 8, 13])
def test_tree_sums_do_not_depend_on_which_worker_holds_what(n_parts):
    """Any placement cuts the tree differently; every cut gives the same bits."""
    from skcrf.dask._reduce import cut_sum, subtree_terms, tree_sum, worker_subtrees

    rng = np.random.default_rng(n_parts)
    # magnitudes far apart, so that another order of the additions changes the bits
    parts = {i: rng.standard_normal(64) * 10.0 ** rng.integers(-8, 9, 64)
             for i in range(n_parts)}
    whole = tree_sum(parts, 0, n_parts)
    for trial in range(20):
        holders = rng.integers(0, 3, n_parts).tolist() if trial else [0] * n_parts
        if trial % 5 == 4:
            holders[rng.integers(n_parts)] = None  # a partition being rebuilt
        cuts = worker_subtrees(holders)
        assert [lo for lo, _ in cuts] == sorted(lo for lo, _ in cuts)
        assert sum(hi - lo for lo, hi in cuts) == n_parts
        assert all(len({holders[i] for i in range(lo, hi)}) == 1 for lo, hi in cuts)
        sums = {(lo, hi): subtree_terms(lo, *((0.0, parts[i]) for i in range(lo, hi)))[1]
                for lo, hi in cuts}
        assert np.array_equal(cut_sum(sums, 0, n_parts), whole)
    # each half on its own worker: one vector per worker
    half = n_parts // 2
    assert len(worker_subtrees([0] * half + [1] * (n_parts - half))) == min(n_parts, 2)


# --- bad input ----------------------------------------------------------------------


def test_empty_bag_is_refused(client):
    X, y = db.from_sequence([], npartitions=1), db.from_sequence([], npartitions=1)
    with pytest.raises(ValueError, match="X is empty"):
        skcrf.dask.fit(CRFClassifier(), X, y, client=client)


def test_all_zero_weights_are_named_not_an_empty_x(client, ner):
    # issue 43, item 24: "X is empty" for a non-empty X of weights 0
    X, y, _ = ner
    weights = db.from_sequence([0.0] * 6, npartitions=2)
    with pytest.raises(ValueError, match="No sequence of X has a sample_weight above 0"):
        skcrf.dask.fit(CRFClassifier(), db.from_sequence(X[:6], npartitions=2),
                       db.from_sequence(y[:6], npartitions=2), sample_weight=weights,
                       client=client)


def test_mismatched_partitions_are_refused(client, ner):
    X, y, _ = ner
    with pytest.raises(ValueError, match="X has 3 partitions and y 2"):
        skcrf.dask.fit(CRFClassifier(), db.from_sequence(X[:20], npartitions=3),
                       db.from_sequence(y[:20], npartitions=2), client=client)
    # as many partitions, split differently: both partitions' X and y disagree,
    # the first is named whichever the scheduler reads first
    with pytest.raises(ValueError, match=r"partition 0 \(sequences counted within it\): "
                                         r"Sequence 0 has \d+ tokens but \d+ labels"):
        skcrf.dask.fit(CRFClassifier(), db.from_sequence(X[:20], npartitions=2),
                       db.from_sequence(y[1:21], npartitions=2), client=client)


def test_other_inputs_are_refused_clearly(client, ner):
    from sklearn.linear_model import LogisticRegression

    X, y, _ = ner
    X_bag, y_bag = _bags(X[:20], y[:20], 2)
    with pytest.raises(TypeError, match="dask.bag.Bag"):
        skcrf.dask.fit(CRFClassifier(), X[:20], y_bag, client=client)
    with pytest.raises(TypeError, match="CRFClassifier, SemiMarkovCRF and TreeCRF"):
        skcrf.dask.fit(LogisticRegression(), X_bag, y_bag, client=client)
    with pytest.raises(ValueError, match="tag schemes do not apply"):
        skcrf.dask.fit(SemiMarkovCRF(allowed_transitions="bio"), X_bag, y_bag, client=client)
    with pytest.raises(ValueError, match="alpha"):
        skcrf.dask.fit(CRFClassifier(alpha=-1.0), X_bag, y_bag, client=client)
    with pytest.raises(ValueError, match="__parent__"):
        skcrf.dask.fit(TreeCRF(), X_bag, y_bag, client=client)


def test_warmup_runs_on_every_worker(client):
    """skcrf.dask.warmup compiles (here: loads, the session warmed them) on each worker."""
    seconds = skcrf.dask.warmup(client, kinds=["chain"])
    assert sorted(seconds) == sorted(client.scheduler_info()["workers"])
    assert all(value >= 0 for value in seconds.values())
    with pytest.raises(ValueError, match="Unknown kind 'chains'"):
        skcrf.dask.warmup(client, kinds=["chains"])


@pytest.mark.parametrize("params", [{}, {"order": 2}, {"allowed_transitions": "auto"}],
                         ids=["plain", "order2", "auto"])
def test_partial_labels_distributed_fit_equals_local_fit(client, ner, params):
    X, y, X_test = ner
    X, y = X[:120], [list(tags) for tags in y[:120]]
    rng = np.random.default_rng(0)
    for q, tags in enumerate(y):
        if q % 3 == 0:  # unknown tokens where the tags are O (a BIO-feasible labelling)
            y[q] = [None if tag == "O" and rng.random() < 0.5 else tag for tag in tags]
        elif q % 3 == 1 and tags[0] == "O":
            y[q] = [{"O", "B-PER", "B-LOC"}] + tags[1:]
    y[5] = [None] * len(y[5])
    local = _quiet_fit(CRFClassifier(max_iter=25, **params).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, CRFClassifier(max_iter=25, **params),
                      *_bags(X, y, npartitions=3), client=client)
    assert dist.n_iter_ == local.n_iter_
    _assert_same_model(local, dist)


def test_a_partition_of_unknown_labels_only_trains_as_a_local_fit(client, ner):
    X, y, _ = ner
    X, y = X[:50], [list(tags) for tags in y[:50]]
    for q in range(40, 50):  # the last partition: every token unknown
        y[q] = [None] * len(y[q])
    y[0] = [None] + y[0][1:]
    local = _quiet_fit(CRFClassifier(max_iter=10).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, CRFClassifier(max_iter=10), *_bags(X, y, 5),
                      client=client)
    _assert_same_model(local, dist)


def test_tree_partial_labels_distributed_fit_equals_local_fit(client, trees):
    X, y = trees
    rng = np.random.default_rng(1)
    y = [[None if rng.random() < 0.3 else ({label, "punct"} if rng.random() < 0.1
                                           else label) for label in labels]
         for labels in y]
    local = _quiet_fit(TreeCRF(max_iter=20).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, TreeCRF(max_iter=20), *_bags(X, y, 3), client=client)
    assert dist.n_iter_ == local.n_iter_
    _assert_same_model(local, dist)


def test_semimarkov_partial_labels_distributed_fit_equals_local_fit(client, ner):
    X, y, _ = ner
    X, y = X[:120], [list(tags) for tags in y[:120]]
    rng = np.random.default_rng(2)
    for q, tags in enumerate(y):
        if q % 3 == 0:
            y[q] = [None if rng.random() < 0.3 else tag for tag in tags]
        elif q % 3 == 1:
            y[q] = [{"B-PER", "I-PER", "O"} if tag.endswith("PER") else tag for tag in tags]
    for q in range(80, 120):  # the last partition: no fully labelled sequence
        y[q] = [None] + y[q][1:]
    local = _quiet_fit(SemiMarkovCRF(max_iter=20).fit, X, y)
    dist = _quiet_fit(skcrf.dask.fit, SemiMarkovCRF(max_iter=20), *_bags(X, y, 3),
                      client=client)
    assert dist.n_iter_ == local.n_iter_
    _assert_same_model(local, dist)
