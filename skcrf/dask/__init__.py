"""Dask: train one CRF on data that stays distributed, and predict partition by partition.

``skcrf.dask.fit(estimator, X, y)`` trains ``estimator`` on two dask bags of
sequences (``X`` of per-token feature dicts, ``y`` of labels, partitioned
alike) with the data on the workers: the vocabulary and the label set are
reduced from the partitions, each worker builds and keeps its partitions'
features and objective, and each solver iteration ships only the weights out
and ``(log Z, expected statistics)`` back, the statistics added on each worker
first, along a tree fixed by the partition order (so the bits do not depend
on which worker holds what). The solver runs on the client. The result is the same estimator, fitted as by a
local ``fit``: it saves and predicts locally.

For searches over parameters (many independent fits), use joblib's Dask
backend instead: ``with joblib.parallel_backend("dask"): search.fit(X, y)``.

Needs ``dask[distributed]`` (``pip install skcrf[dask]``).
"""

from ._fit import fit as _fit_body
from ._predict import predict, predict_marginals


def fit(estimator, X, y, *, sample_weight=None, client=None, timeout=None):
    """Train ``estimator`` on dask bags, the data staying on the workers.

    Parameters
    ----------
    estimator : CRFClassifier, SemiMarkovCRF or TreeCRF
        Unfitted or fitted (a previous fit is replaced); its parameters are
        validated as ``fit`` does.
    X : dask.bag.Bag
        One element per sequence: a list of per-token feature dicts (which
        may hold vectors), a 2-D numpy array or a pandas DataFrame, as
        ``estimator.fit`` takes them (with ``"__parent__"`` keys for a
        :class:`~skcrf.TreeCRF`); or partitions that are each a
        :class:`~skcrf.SequenceMatrix` (``dask.bag.from_delayed``). Dense
        blocks stay blocks on the workers.
    y : dask.bag.Bag
        One element per sequence: its labels, partitioned as ``X`` (the
        simplest: both plucked from one bag of ``(x, y)`` pairs). For a
        :class:`~skcrf.CRFClassifier`, a label may be None (unknown) or a
        set of labels, as for its ``fit``.
    sample_weight : dask.bag.Bag, default=None
        One number per sequence, partitioned as ``X``: each sequence's
        weight, as for the estimator's ``fit`` (0 leaves it out). The
        estimator's ``solver`` must be ``"lbfgs"``.
    client : distributed.Client, default=None
        The client to run on; by default the current one
        (``distributed.default_client()``).
    timeout : float, default=None
        Seconds to wait for the workers at each step before raising a
        TimeoutError; None waits as long as the scheduler keeps the work
        alive (a worker lost mid-fit has its partitions recomputed elsewhere).

    Returns
    -------
    estimator : the same estimator, fitted
        Its fitted attributes are those a local ``estimator.fit`` of all the
        sequences in partition order sets; see the user guide's scaling page for
        how closely the weights agree.

    Raises
    ------
    TypeError
        For an estimator this does not train, or inputs that are not bags.
    ValueError
        For bad data, naming the partition and the sequence, as ``fit`` does.
    TimeoutError, RuntimeError
        When the workers do not answer in time, or keep dying.

    Examples
    --------
    >>> import dask.bag as db                                   # doctest: +SKIP
    >>> from distributed import Client, LocalCluster            # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> pairs = db.from_sequence(list(zip(X, y)), npartitions=4)  # doctest: +SKIP
    >>> crf = skcrf.dask.fit(CRFClassifier(), pairs.pluck(0), pairs.pluck(1))  # doctest: +SKIP
    """
    return _fit_body(estimator, X, y, sample_weight=sample_weight, client=client,
                     timeout=timeout)


def warmup(client=None, kinds=None):
    """Compile (or load from each worker's cache) the kernels on every worker, ahead.

    A worker is a fresh process, on a machine whose numba cache may be empty
    (workers without a shared file system, new containers): its first task
    would compile the kernels it needs, once per machine. This runs ``skcrf
    warmup`` on every worker at once, before a fit or a search, so that the
    compilation does not land in the middle of the first one's timing (a
    worker's first fit then loads every kernel from its cache). Workers on
    one machine share its cache; those that start later (an adaptive
    cluster) compile on their first task, or can be warmed by calling this
    again.

    Parameters
    ----------
    client : distributed.Client, default=None
        The client; by default the current one (``distributed.default_client()``).
    kinds : list of str, default=None
        The kinds of model to warm, as ``skcrf warmup --only`` takes them
        (``"chain"``, ``"order2"``, ``"transition-features"``,
        ``"semi-markov"``, ``"tree"``); all by default.

    Returns
    -------
    seconds : dict
        Worker address -> seconds its warm-up took.
    """
    from .._cli._warmup import KINDS, warm_kinds
    from distributed import default_client

    kinds = list(KINDS) if kinds is None else list(kinds)
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ValueError(f"Unknown kind {unknown[0]!r}; choose among {', '.join(KINDS)}.")
    client = default_client() if client is None else client
    return client.run(warm_kinds, kinds)


__all__ = ["fit", "predict", "predict_marginals", "warmup"]
