"""Prediction on dask bags: the fitted estimator mapped over the partitions."""

from sklearn.utils.validation import check_is_fitted


def _predict_partition(sequences, estimator, method, kwargs):
    from ..features.sequence_matrix import SequenceMatrix

    # a partition that is a SequenceMatrix is predicted whole: its dense block
    # stays a block (listing its sequences would make each a sparse matrix)
    if not isinstance(sequences, SequenceMatrix):
        sequences = list(sequences)
    if not sequences:  # predict of no sequence is allowed, but skip the work
        return []
    return list(getattr(estimator, method)(sequences, **kwargs))


def _mapped(estimator, X, method, kwargs):
    from ._fit import require_dask

    require_dask()
    import dask
    import dask.bag as db

    if not isinstance(X, db.Bag):
        raise TypeError(f"X must be a dask.bag.Bag of sequences; got {type(X).__name__}. "
                        f"For a list, call estimator.{method} directly.")
    check_is_fitted(estimator)
    # one key for the model, shared by every partition's task
    model = dask.delayed(estimator, pure=True)
    return X.map_partitions(_predict_partition, model, method, kwargs)


def predict(estimator, X, **kwargs):
    """``estimator.predict`` over every partition of ``X``, lazily.

    Parameters
    ----------
    estimator : fitted CRF estimator or Pipeline
        Shipped to the workers once per computation.
    X : dask.bag.Bag
        One element per sequence, as ``estimator.predict`` takes them.
    **kwargs
        Passed to ``estimator.predict`` (``decoding=``, ``fixed=`` is not
        supported here since it goes with each sequence).

    Returns
    -------
    y_pred : dask.bag.Bag
        One array of labels per sequence, partitioned as ``X``; ``.compute()``
        gives the list ``estimator.predict`` would.
    """
    if kwargs.get("return_proba") or "fixed" in kwargs:
        raise ValueError("skcrf.dask.predict maps plain predictions; fixed= and "
                         "return_proba= are per sequence: map estimator.predict yourself.")
    return _mapped(estimator, X, "predict", kwargs)


def predict_marginals(estimator, X):
    """``estimator.predict_marginals`` (``predict_proba`` for a Pipeline) over ``X``, lazily.

    Returns
    -------
    marginals : dask.bag.Bag
        One (n_tokens_i, n_classes) array per sequence.
    """
    method = "predict_marginals" if hasattr(estimator, "predict_marginals") else "predict_proba"
    return _mapped(estimator, X, method, {})
