"""The distributed fit: data stays on the workers, the solver runs on the client."""

import time

import numpy as np

from .._estimators.columns import column_names, kept_columns
from .._estimators.training import _is_fitted_attribute
from .._utils.parallel import kernel_exceptions
from .._utils.validation import _label_array
from ..features._vectors import vector_names
from ..features.vectorizer import SequenceVectorizer
from ..structures.chain.dense import DenseChainStructure
from ..structures.semimarkov.dense import DenseSemiMarkovStructure
from ..structures.semimarkov.structure import SemiMarkovStructure
from ..learning.lbfgs import Stop
from ..learning.objective import NegativeLogLikelihood
from . import _partitions as parts_
from ._partitions import GlobalColumns
from ._plans import _has_partial_labels, plan_of
from ._reduce import contiguous_targets, cut_sum, holders_of, subtree_terms, worker_subtrees


class Run:
    """The client's side of one fit: maps over partitions, gathers with a time limit.

    Results are gathered as lists in partition order, whatever order the
    workers finish in, and an error is that of the first failed partition.
    """

    def __init__(self, client, timeout):
        self.client = client
        self.timeout = timeout
        self.bytes_out = 0  # weights sent per iteration, for the benchmark
        self.bytes_in = 0

    def map(self, function, futures, *args):
        # pure=False: a result depends on worker state only through its inputs,
        # but two fits of the same data must not share keys with different args
        return [self.client.submit(function, future, *args, pure=False)
                for future in futures]

    def put(self, value):
        """A future of ``value`` that the scheduler can recompute if its worker is lost.

        Data ``client.scatter`` places is lost with its worker; a task that
        returns it is recomputed from the client's copy in the graph.
        """
        return self.client.submit(parts_.identity, value, pure=False)

    def gather(self, futures):
        return self.wait(futures, gather=True)

    def wait(self, futures, gather=False):
        """Wait for ``futures`` (their results if ``gather``), within the time limit."""
        from distributed import TimeoutError as DaskTimeout
        from distributed import wait
        from distributed.scheduler import KilledWorker

        try:
            wait(futures, timeout=self.timeout)
            # the first failed partition in partition order, as a local fit
            # names the first bad sequence: not whichever failed first
            for future in futures:
                if future.status == "error":
                    future.result()
            return self.client.gather(futures) if gather else None
        except (DaskTimeout, TimeoutError) as error:
            raise TimeoutError(
                f"The Dask workers did not answer within timeout={self.timeout} s; the "
                f"cluster may have lost its workers (see the scheduler's dashboard or "
                f"logs).") from error
        except KilledWorker as error:
            raise RuntimeError(
                f"A Dask worker died repeatedly while holding a partition of the training "
                f"data ({error}); the partitions may be too large for a worker's memory. "
                f"Use more or smaller partitions, or workers with more memory.") from error


class DistributedTerms:
    """``w -> (log_z per partition, expected statistics summed along a fixed tree)``.

    Each call ships ``w`` to the workers once (one task holds it, the others
    fetch it from there), evaluates every partition where it lives, and adds
    the expected statistics along the tree of :mod:`~skcrf.dask._reduce`: each
    worker adds its runs of consecutive partitions and sends one vector per
    run, the client adds those. Per call, 8 bytes per parameter go to each
    worker and come back per run of partitions (one per worker when each
    holds consecutive partitions), plus one float per partition.
    """

    def __init__(self, run, objectives, n_parameters):
        self.run = run
        self.objectives = objectives
        self.n_parameters = n_parameters
        self.n_calls = 0
        self.seconds = 0.0
        self.n_vectors_in = 0  # expected-statistics vectors the client received

    def __call__(self, w):
        started = time.perf_counter()
        client = self.run.client
        w_future = self.run.put(np.ascontiguousarray(w))
        # each evaluation runs where its objective is, w comes to it
        holders = holders_of(client, self.objectives)
        evaluated = [client.submit(parts_.evaluate, objective, w_future, pure=False,
                                   workers=None if holder is None else [holder],
                                   allow_other_workers=True)
                     for objective, holder in zip(self.objectives, holders)]
        cuts = worker_subtrees(holders)
        futures = [evaluated[lo] if hi - lo == 1 else
                   client.submit(subtree_terms, lo, *evaluated[lo:hi], pure=False,
                                 workers=[holders[lo]], allow_other_workers=True)
                   for lo, hi in cuts]
        results = self.run.gather(futures)
        log_z, sums = [], {}
        for (lo, hi), (part_log_z, part) in zip(cuts, results):
            log_z.extend(part_log_z if hi - lo > 1 else [part_log_z])
            sums[lo, hi] = part
        n_parts = len(self.objectives)
        expected = cut_sum(sums, 0, n_parts)
        if (0, n_parts) in sums:  # the gathered array itself: the caller updates it in place
            expected = expected.copy()
        self.n_calls += 1
        self.seconds += time.perf_counter() - started
        # w reaches each worker holding a partition once
        self.run.bytes_out += w.nbytes * len(set(holders))
        self.run.bytes_in += expected.nbytes * len(cuts) + 8 * n_parts
        self.n_vectors_in += len(cuts)
        return np.array(log_z), expected


def require_dask():
    """Raise an ImportError that says what to install if Dask is missing."""
    try:
        import dask.bag
        import distributed
    except ImportError as error:
        raise ImportError(
            f"skcrf.dask needs dask and distributed ({error}); install them with "
            f"pip install 'skcrf[dask]' (or 'dask[distributed]').") from error
    return dask.bag, distributed


def check_bags(X, y, sample_weight=None):
    """Raise if ``X``, ``y`` (and ``sample_weight``) are not dask bags of as many partitions."""
    require_dask()
    import dask.bag as db

    bags = (("X", X), ("y", y)) + ((("sample_weight", sample_weight),)
                                   if sample_weight is not None else ())
    for name, bag in bags:
        if not isinstance(bag, db.Bag):
            raise TypeError(
                f"{name} must be a dask.bag.Bag of sequences (one element per sequence); "
                f"got {type(bag).__name__}. dask.bag.from_sequence(...) or "
                f"dask.bag.read_text(...).map(...) make one.")
    for name, bag in bags[1:]:
        if X.npartitions != bag.npartitions:
            raise ValueError(
                f"X and {name} must be partitioned alike, sequence for sequence; X has "
                f"{X.npartitions} partitions and {name} {bag.npartitions}. Make them from "
                f"one bag of tuples: X = pairs.pluck(0), y = pairs.pluck(1), ...")


def vectorizer_of_names(names):
    """A fitted :class:`SequenceVectorizer` whose vocabulary is the sorted ``names``.

    What ``SequenceVectorizer().fit`` of all the training data would learn:
    its names sorted by Python's ``str`` order, with ``min_freq=1`` every name
    met is kept.
    """
    return SequenceVectorizer()._set_names(sorted(names))


def global_columns(estimator, layouts, names):
    """The :class:`~skcrf.dask._partitions.GlobalColumns` of the partitions' layouts.

    ``layouts`` are ``(partition index, ColumnLayout)`` of the partitions
    holding sequences, ``names`` the union of the feature dicts' names. The
    partitions must agree on what a local fit of all of them requires:
    feature dicts everywhere or positional columns everywhere; positional
    columns of one width and names; vector keys of one length.
    """
    first_index, first = layouts[0]
    for index, layout in layouts:
        if layout.positional != first.positional:
            kinds = ("numeric arrays or SequenceMatrix", "feature dicts")
            raise TypeError(
                f"Partition {index} holds {kinds[layout.positional is False]}, partition "
                f"{first_index} {kinds[first.positional is False]}: every partition of X "
                f"must hold sequences of one kind.")
        if layout.positional and (layout.n_sparse, layout.n_dense, layout.names) != (
                first.n_sparse, first.n_dense, first.names):
            raise ValueError(
                f"Partition {index} has {layout.n_sparse} sparse and {layout.n_dense} dense "
                f"columns{_named(layout.names)}; partition {first_index} has "
                f"{first.n_sparse} and {first.n_dense}{_named(first.names)}: every "
                f"partition needs the same columns.")
    widths = {}
    for index, layout in layouts:
        for key, width in layout.vector_widths.items():
            seen = widths.setdefault(key, (width, index))
            if seen[0] != width:
                raise ValueError(
                    f"Partition {index} has vectors of length {width} under {key!r}, "
                    f"partition {seen[1]} of length {seen[0]} (every vector of one key "
                    f"needs the same length).")
    widths = {key: widths[key][0] for key in sorted(widths)}
    float32 = all(layout.float32 is not False for _, layout in layouts) and any(
        layout.float32 for _, layout in layouts)
    keep_dense = estimator._reads_dense_block(True)
    if first.positional:
        n_sparse = first.n_sparse
        return GlobalColumns(None, n_sparse, widths, float32, keep_dense,
                             None if first.names is None
                             else np.asarray(first.names, dtype=object),
                             _kept(layouts, n_sparse))
    vectorizer = vectorizer_of_names(names)
    vectorizer.vector_widths_ = widths
    all_names = vectorizer._names_out
    if widths:
        all_names = np.asarray(vectorizer.feature_names_ + vector_names(widths),
                               dtype=object)
    return GlobalColumns(vectorizer, len(vectorizer.feature_names_), widths, float32,
                         keep_dense, all_names)


def _kept(layouts, n_sparse):
    """The columns a local fit of every partition keeps (``feature_columns_``), or None.

    Each partition holds some of the columns; a local fit would see their
    union, so the rule of :func:`~skcrf._estimators.columns.used_columns`
    is applied to it. The partitions agree on names and dense block
    (checked above), so either all report their columns or none does.
    """
    used = [layout.used for _, layout in layouts]
    if any(part is None for part in used):
        return None
    return kept_columns(np.unique(np.concatenate(used)).astype(np.int64), n_sparse)


def _named(names):
    return "" if names is None else f" named {list(names[:5])}..."


class ColumnNames:
    """The columns of the partitions' FeatureArrays, named: what the plans read.

    The sparse columns, then the dense block's when the partitions copy it
    into CSR columns (``keep_dense`` False), as a local fit numbers them.
    """

    def __init__(self, columns):
        n = columns.n_sparse + (0 if columns.keep_dense else columns.n_dense)
        names = columns.names
        if columns.kept is not None:  # no names, no dense block: those of the kept columns
            names, n = column_names(columns.kept), columns.kept.shape[0]
        elif names is None:
            names = np.asarray([f"x{i}" for i in range(n)], dtype=object)
        self.feature_names_ = names[:n].tolist()
        self._names_out = names[:n]


class _Summary:
    """What :meth:`CRFEstimator._store_training` reads of the training data."""

    def __init__(self, columns):
        n_dense = columns.n_dense
        kept = columns.kept
        self.features = _Shape(columns.n_sparse if kept is None else kept.shape[0], n_dense)
        self.n_dense = n_dense
        self.feature_names = columns.names
        self.vectorizer = columns.vectorizer
        # a compacted input: feature_columns_, and n_features_in_ the input's width
        self.columns = kept
        self.input_width = None if kept is None else columns.n_sparse


class _Shape:
    def __init__(self, n_features, n_dense):
        self.n_features = n_features
        self.n_dense = n_dense


def fit(estimator, X, y, *, sample_weight=None, client=None, timeout=None):
    """The body of :func:`skcrf.dask.fit` (see there)."""
    return fit_recorded(estimator, X, y, sample_weight=sample_weight, client=client,
                        timeout=timeout)[0]


def fit_recorded(estimator, X, y, *, sample_weight=None, client=None, timeout=None):
    """:func:`fit`, and its :class:`DistributedTerms` (calls, seconds, bytes moved)."""
    from distributed import default_client

    check_bags(X, y, sample_weight)
    estimator._validate_params()
    if getattr(estimator, "solver", "lbfgs") != "lbfgs":
        raise ValueError(
            f"skcrf.dask.fit trains with L-BFGS; solver={estimator.solver!r} is online: "
            f"call estimator.partial_fit on each partition in turn instead "
            f"(for part in bag.to_delayed(): ...).")
    plan = plan_of(estimator)
    plan.check()
    if client is None:
        try:
            client = default_client()
        except ValueError:
            raise ValueError(
                "skcrf.dask.fit needs a Dask distributed client: pass client=, or start one "
                "first (distributed.Client(), or Client(LocalCluster()) on one "
                "machine).") from None
    run = Run(client, timeout)
    shadow = object.__new__(type(estimator))
    shadow.__dict__.update((name, value) for name, value in vars(estimator).items()
                           if not _is_fitted_attribute(name))
    with kernel_exceptions():
        terms = _fit(shadow, plan, run, X, y, sample_weight)
    estimator.__dict__ = shadow.__dict__
    return estimator, terms


def _fit(estimator, plan, run, X, y, sample_weight=None):
    import dask

    x_parts, y_parts = X.to_delayed(), y.to_delayed()
    w_parts = (sample_weight.to_delayed() if sample_weight is not None
               else [None] * len(x_parts))
    raw = run.client.compute([dask.delayed(parts_.read_partition)(i, xp, yp, wp)
                              for i, (xp, yp, wp) in enumerate(zip(x_parts, y_parts,
                                                                   w_parts))])
    summaries = run.gather(run.map(parts_.partition_summary, raw))
    n_sequences = [n for n, _, _, _, _ in summaries]
    if sum(n_sequences) == 0:
        if sample_weight is not None:
            # the partitions drop the sequences of weight 0 as they read them
            raise ValueError("No sequence of X has a sample_weight above 0: X is empty or "
                             "every weight is 0, and there is nothing to train on.")
        raise ValueError("X is empty: fit needs at least one sequence.")
    if sum(n for _, n, _, _, _ in summaries) == 0:
        raise ValueError("X has no tokens: every sequence is empty.")
    names = set()
    labels = set()
    for _, _, part_names, part_labels, _ in summaries:
        names.update(part_names)
        labels.update(part_labels)
    layouts = [(i, layout) for i, (_, _, _, _, layout) in enumerate(summaries)
               if layout is not None]
    del summaries
    columns = global_columns(estimator, layouts, names)
    del names
    try:
        classes = _label_array(sorted(labels))
    except TypeError as error:
        raise TypeError(f"y mixes labels of different types across partitions: "
                        f"{error}") from error
    if classes.shape[0] < 2:
        raise ValueError(
            f"y holds a single class ({classes[0]!r}); a CRF needs at least two.")
    firsts = np.concatenate([[0], np.cumsum(n_sequences)[:-1]]).tolist()
    shared_columns = run.put(columns)
    encoded = [run.client.submit(parts_.encoded_partition, part, first, shared_columns,
                                 classes, pure=False)
               for part, first in zip(raw, firsts)]
    del raw  # the workers drop the dict-side matrices once nothing needs them
    if any(run.gather(run.map(_has_partial_labels, encoded))):
        refusal = estimator._partial_labels_refusal()
        if refusal is not None:
            raise ValueError(f"y holds unknown (None) or ambiguous (set) labels, which "
                             f"{type(estimator).__name__} cannot train on {refusal}.")
    names = ColumnNames(columns)
    problem, encoded = plan.problem(run, encoded, classes, names)
    if columns.keep_dense and columns.n_dense:
        # as the estimator's _training_problem wraps its structure
        wrapper = (DenseSemiMarkovStructure if isinstance(problem.structure, SemiMarkovStructure)
                   else DenseChainStructure)
        problem.structure = wrapper(problem.structure, columns.n_dense)
    structure = run.put(problem.structure)
    objectives = _placed_objectives(run, encoded, structure, estimator.n_jobs)
    del encoded  # the objectives hold their partitions (moved ones leave their worker)
    empirical = run.gather(run.map(parts_.partition_empirical, objectives))
    total = empirical[0].copy()
    for part in empirical[1:]:
        total += part
    terms = DistributedTerms(run, objectives, problem.n_parameters)
    objective = NegativeLogLikelihood.of_terms(problem.structure, total, terms,
                                               estimator._l2)
    result = estimator._solve(objective, np.zeros(problem.n_parameters))
    n_features = len(names.feature_names_)
    found = (run.gather(run.map(parts_.objective_largest_value, objectives))
             if _needs_largest(result) else [])
    estimator._check_training(result, _CheckData(
        _LargestValue(found, n_features, names._names_out)))
    summary = _Summary(columns)
    for name, value in problem.fitted_attributes(result.w).items():
        setattr(estimator, name, value)
    estimator._store_training(summary, result)
    return terms


def _placed_objectives(run, parts, structure, n_jobs):
    """The partitions' objectives, built on workers that each hold consecutive partitions.

    Dask spreads the partitions over the workers in no useful order; moving
    those that break a worker's run once, in their compact encoded form,
    lets each evaluation send one vector per worker instead of one per
    partition (:mod:`~skcrf.dask._reduce`). The placement is a preference:
    a lost worker's partitions are rebuilt elsewhere. The sums do not depend
    on it.
    """
    workers = sorted(run.client.scheduler_info(n_workers=-1)["workers"])
    if len(parts) <= len(workers):  # one partition per worker: nothing to gain
        return run.map(parts_.partition_objective, parts, structure, n_jobs)
    run.wait(parts)  # where they are decides where they go
    targets = contiguous_targets(holders_of(run.client, parts), workers)
    return [run.client.submit(parts_.partition_objective, part, structure, n_jobs,
                              workers=[target], allow_other_workers=True, pure=False)
            for part, target in zip(parts, targets)]


def _needs_largest(result):
    """Whether :meth:`_check_training` will name the largest feature value (it raises or warns)."""
    return (result.stop in (Stop.NOT_FINITE, Stop.LINE_SEARCH)
            or not np.isfinite(result.w).all()
            or not np.isfinite(result.loss_curve[-1:]).all()
            or (result.n_iter > 0 and not result.w.any()))


class _LargestValue:
    """One feature value where the whole training set has it: what ``_check_training`` reads.

    ``data``, ``indices`` and ``indptr`` hold that one entry at its token, and
    ``lengths`` put that token in its sequence (the ones before it empty), so
    that the estimator's own message names the global sequence, the token and
    the feature.
    """

    def __init__(self, found, n_features, feature_names):
        self.n_features = n_features
        self.feature_names = feature_names
        found = [f for f in found if f is not None]
        if not found:  # every value is 1
            self.data = self.indices = self.indptr = None
            self.lengths = np.zeros(0, dtype=np.int64)
            return
        _, value, q, token, column = max(found, key=lambda f: f[0])
        self.data = np.array([value])
        self.indices = np.array([column], dtype=np.int32)
        self.indptr = np.concatenate([np.zeros(token + 1, dtype=np.int64), [1]])
        self.lengths = np.concatenate([np.zeros(q, dtype=np.int64), [token + 1]])


class _CheckData:
    """The attributes of :class:`TrainingData` that ``_check_training`` reads."""

    def __init__(self, largest):
        self.features = largest
        self.lengths = largest.lengths
        self.feature_names = largest.feature_names
