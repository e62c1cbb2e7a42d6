"""CRFsuite model files in and out of skcrf: :func:`load_crfsuite` and :func:`save_crfsuite`."""

import os

import numpy as np

from .._chain import CRFClassifier
from ..features.vectorizer import SequenceVectorizer
from ._crf import CRF, _summaries
from ._crfsuite_format import (CRFsuiteWeights, check_weight_count, read_crfsuite,
                               write_crfsuite)


def _model_bytes(source):
    """The bytes of a CRFsuite model given as bytes, a path or a fitted sklearn-crfsuite CRF."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as file:
            return file.read()
    # a sklearn_crfsuite.CRF keeps its model file in modelfile (a FileResource,
    # written back to a temporary file when unpickled): read it, import nothing
    modelfile = getattr(source, "modelfile", None)
    if modelfile is not None and hasattr(modelfile, "name"):
        if modelfile.name is None:
            raise ValueError(f"this {type(source).__name__} has no model file: it is not "
                             f"fitted.")
        with open(modelfile.name, "rb") as file:
            return file.read()
    raise TypeError(f"load_crfsuite takes a CRFsuite model file's path or bytes, or a fitted "
                    f"sklearn_crfsuite.CRF; got a {type(source).__name__}.")


def load_crfsuite(source, *, max_weights=None):
    """Load a model CRFsuite trained (python-crfsuite, sklearn-crfsuite, the ``crfsuite`` tool).

    Parameters
    ----------
    source : str, path-like, bytes or sklearn_crfsuite.CRF
        A CRFsuite 0.12 model file (``crf1d``, as ``Trainer.train`` and
        ``crfsuite learn -m`` write it, or as sklearn-crfsuite's
        ``model_filename`` keeps it), its bytes, or a fitted
        ``sklearn_crfsuite.CRF`` (unpickled, say): its model file is read,
        without importing sklearn-crfsuite.
    max_weights : int, default=None
        The most memory the model may take, in weights of 8 bytes: labels x
        weighted attributes (skcrf's dense state weights), plus 33 a pair of
        labels (its weight, and its entry of ``transition_features_``). None
        allows 4 per byte of the file (at least 4 million, 32 MB), several
        times what real models take; loading peaks at about 3 times as much. A file that would make more is refused before
        anything of that size is allocated: a small hostile file cannot claim
        gigabytes. Raise it for a trusted model of many hundreds of labels.

    Returns
    -------
    crf : skcrf.compat.CRF
        Fitted, with CRFsuite's labels (``classes_``, sorted), attributes
        (``attributes_``) and weights (``state_features_``,
        ``transition_features_``); its ``estimator_`` has no start and end
        weights (they are 0), as CRFsuite's model. It takes the same feature
        dicts as python-crfsuite (a string value ``{"w": "dog"}`` is the
        attribute ``"w:dog"``; an attribute the model lacks is ignored) and
        gives CRFsuite's labellings and marginals.

    Raises
    ------
    ValueError
        If the file is not a CRFsuite model or is truncated or damaged (an
        offset or a count past its end, an id out of range, a non-finite
        weight), has fewer than 2 labels, or would make more than
        ``max_weights`` dense weights.

    See Also
    --------
    save_crfsuite : The other way.
    """
    data = _model_bytes(source)
    weights = read_crfsuite(data, max_weights)
    if len(weights.labels) < 2:
        raise ValueError(f"the CRFsuite model has {len(weights.labels)} label(s); skcrf's "
                         f"models have at least 2.")
    by_name = sorted(range(len(weights.labels)), key=weights.labels.__getitem__)
    rank = np.empty(len(by_name), dtype=np.int64)
    rank[by_name] = np.arange(len(by_name))
    # only attributes with a weight become features (an attribute the model lacks is
    # ignored either way): the dense weights are those of what the file holds
    state = weights.state.tocoo()
    weighted = np.unique(state.row)
    attributes = [weights.attributes[a] for a in weighted.tolist()]
    check_weight_count(len(by_name), len(attributes), len(data), max_weights)
    vectorizer = SequenceVectorizer(separator=":").fit([[dict.fromkeys(attributes, 1.0)]])
    columns = np.fromiter((vectorizer.vocabulary_[name] for name in attributes),
                          dtype=np.int64, count=len(attributes))
    column_of = np.zeros(len(weights.attributes), dtype=np.int64)
    column_of[weighted] = columns
    # column-major, as a fit leaves coef_: prediction reads coef_.T row by row, and a
    # row-major coef_ would be copied whole to do so at every predict call
    coef = np.zeros((len(columns), len(by_name))).T
    coef[rank[state.col], column_of[state.row]] = state.data
    crf = CRF()
    classifier, _ = crf._classifier()
    n_classes = len(by_name)
    classifier.__dict__.update(
        classes_=np.asarray([weights.labels[k] for k in by_name]),
        allowed_transitions_=np.ones((n_classes, n_classes), dtype=bool),
        coef_=coef, transition_coef_=weights.transitions[np.ix_(by_name, by_name)],
        start_coef_=np.zeros(n_classes), end_coef_=np.zeros(n_classes),
        n_features_in_=len(columns),
        feature_names_=np.asarray(vectorizer.feature_names_, dtype=object),
        vectorizer_=None, n_iter_=0, loss_curve_=[])
    crf.vectorizer_ = vectorizer
    crf.estimator_ = classifier
    for name, value in _summaries(classifier).items():
        setattr(crf, name, value)
    crf.training_log_ = None
    # as a model file of skcrf's own is checked when it loads
    CRFClassifier._fitted_state.check(classifier)
    CRF._fitted_state.check(crf)
    return crf


def _chain(model):
    """The order-1 CRFClassifier a model to save is, or an error saying why it cannot be."""
    if isinstance(model, CRF):
        model = model.estimator_
    if not isinstance(model, CRFClassifier):
        raise TypeError(f"CRFsuite's files hold linear-chain CRFs: save_crfsuite takes a "
                        f"fitted skcrf.compat.CRF or CRFClassifier, not a "
                        f"{type(model).__name__}.")
    if "coef_" not in model.__dict__:
        raise ValueError("the model is not fitted.")
    if getattr(model, "label_patterns_", None) is not None or model.order != 1:
        raise ValueError(f"CRFsuite's chains are of order 1; this model has order "
                         f"{model.order}.")
    if getattr(model, "transition_feature_coef_", None) is not None:
        raise ValueError("CRFsuite's transitions do not depend on the tokens; this model "
                         "has transition_features.")
    if np.isneginf(model.transition_coef_).any():
        raise ValueError("CRFsuite has no forbidden transitions; this model forbids some "
                         "(allowed_transitions).")
    if np.any(model.start_coef_ != 0) or np.any(model.end_coef_ != 0):
        raise ValueError(
            "CRFsuite's chains have no start or end weights, and this model has non-zero "
            "ones (start_coef_, end_coef_): written without them it would tag otherwise. "
            "Train it with skcrf.compat.CRF (any algorithm), which trains without them "
            "as CRFsuite does.")
    return model


def save_crfsuite(model, path):
    """Write an order-1 chain as a CRFsuite model file, for CRFsuite's tagger and its ports.

    The file is what CRFsuite 0.12 writes: python-crfsuite's ``Tagger``, the
    ``crfsuite`` tool and the libraries that read CRFsuite's format open it
    and tag as the model does. Only the non-zero weights are stored.

    Parameters
    ----------
    model : skcrf.compat.CRF or CRFClassifier
        Fitted, of order 1, with plain (not feature-dependent, not
        forbidden) transitions and no start and end weights, as
        :class:`skcrf.compat.CRF` trains (every algorithm): CRFsuite's model
        has nothing else. Its feature names become CRFsuite's attribute names;
        those of :class:`skcrf.compat.CRF` are CRFsuite's already (a string
        value ``{"w": "dog"}`` is ``"w:dog"``), while a CRFClassifier fitted
        on feature dicts names that feature ``"w=dog"``, which python-crfsuite
        makes of ``{"w=dog": 1.0}``, not of ``{"w": "dog"}``.
    path : str or path-like
        Where to write.

    Raises
    ------
    TypeError
        If ``model`` is not a chain.
    ValueError
        If the model is not fitted, or has what CRFsuite cannot store (order
        above 1, transition features, forbidden transitions, non-zero start
        or end weights); the message says which.

    See Also
    --------
    load_crfsuite : The other way.
    """
    chain = _chain(model)
    names = [str(name) for name in chain.feature_names_]
    data = write_crfsuite(CRFsuiteWeights(
        labels=[str(label) for label in chain.classes_.tolist()], attributes=names,
        state=chain.coef_.T, transitions=chain.transition_coef_))
    with open(path, "wb") as file:
        file.write(data)
