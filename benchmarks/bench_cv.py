"""CRFClassifierCV vs the equivalent GridSearchCV over alpha, on CoNLL-2002 Spanish NER.

Both search the same alphas with the same folds (KFold, not shuffled), the
same scorer (span F1, CoNLL) and the same per-token feature dicts (the
sklearn-crfsuite tutorial set, as bench_core.py); both refit the chosen
alpha on all the training data. GridSearchCV fits every (fold, alpha) from
zero weights and re-featurizes each fold for every alpha; CRFClassifierCV
featurizes each fold once, runs the alphas from strongest to weakest with
warm starts, starts each later fold from the earlier folds' solutions and the
refit from the folds' mean. Also printed, as a reference: sklearn-crfsuite's
time for one fit on all the training data at the alpha CRFClassifierCV
chose, measured in the same run. Building the dicts is not timed.

Besides the times, the solver's work on each side, which the machine's load
does not change: iterations per fit (the grid search's read by a scorer that
records each fold model's ``n_iter_`` before scoring it with span F1), and
objective evaluations weighted by the tokens each one covers (an evaluation
of a fold's training part costs about its share of the tokens of one on all
the data), counted by wrapping the objective.

Run: python benchmarks/bench_cv.py [--sentences N] [--max-iter 300] [--folds 3]

``--max-iter`` defaults to the estimators' own default (300), so both sides
run as a user's ``GridSearchCV(CRFClassifier(), ...)`` and
``CRFClassifierCV()`` would: every fit stops by its ``tol`` (the grid's cold
fits after 105-200 iterations on esp.train, the path's warm ones after
32-57). With ``--max-iter 100`` the grid's fits all stop at the cap, short
of their optimum, so that ratio compares a capped search with a converged
one; it is worth printing too, as the tutorials' setting.

Target (issue 18): CRFClassifierCV <= 0.3x GridSearchCV's time, the same
alpha. The machine is shared and noisy: compare the ratios printed by one
run, not absolute times across runs.
"""

import argparse
import os
import platform
import time
import warnings

import numba
import numpy as np
from common import data_home, sent2features
from sklearn.model_selection import GridSearchCV, KFold

import skcrf.learning.objective as objective_module

from skcrf import CRFClassifier, CRFClassifierCV
from skcrf._estimators import defaults as _defaults
from skcrf._cv import DEFAULT_ALPHAS
from skcrf.datasets import load_conll2002
from skcrf.metrics import span_f1_score, span_f1_scorer

L1_RATIO = 1 / 3


def timed(fit):
    """``(result of fit(), seconds)``, with the max_iter warnings silenced."""
    with warnings.catch_warnings():
        # every fit may stop at max_iter, by design of the comparison
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        result = fit()
        return result, time.perf_counter() - started


class EvaluationCount:
    """Counts objective evaluations and the tokens they cover while it is entered."""

    def __enter__(self):
        self.evaluations = self.token_evaluations = 0
        self._call = call = objective_module.NegativeLogLikelihood.__call__
        counter = self

        def counted(objective, w):
            counter.evaluations += 1
            counter.token_evaluations += int(objective.bench_tokens)
            return call(objective, w)

        self._init = init = objective_module.NegativeLogLikelihood.__init__

        def init_with_tokens(objective, structure, features, offsets, *args, **kwargs):
            init(objective, structure, features, offsets, *args, **kwargs)
            objective.bench_tokens = int(np.asarray(offsets)[-1])

        objective_module.NegativeLogLikelihood.__call__ = counted
        objective_module.NegativeLogLikelihood.__init__ = init_with_tokens
        return self

    def __exit__(self, *exc):
        objective_module.NegativeLogLikelihood.__call__ = self._call
        objective_module.NegativeLogLikelihood.__init__ = self._init


class IterationRecordingScorer:
    """span_f1_scorer that also records the ``n_iter_`` of each model it scores."""

    def __init__(self):
        self.n_iter = []

    def __call__(self, model, X, y):
        self.n_iter.append(model.n_iter_)
        return span_f1_scorer(model, X, y)


def test_f1(model, X_test, y_test):
    return span_f1_score(y_test, [list(labels) for labels in model.predict(X_test)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=None,
                        help="use the first N training sentences (default: all)")
    parser.add_argument("--max-iter", type=int, default=_defaults.MAX_ITER)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--alphas", type=float, nargs="+", default=list(DEFAULT_ALPHAS))
    args = parser.parse_args()

    import sklearn_crfsuite

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}")
    # compile (or load from cache) the kernels outside the timed region
    timed(lambda: CRFClassifier(max_iter=1).fit([[{"a": 1.0}, {"b": 1.0}]],
                                                [["x", "y"]]).predict([[{"a": 1.0}]]))

    X_train, y_train = load_conll2002("train", data_home=data_home())
    X_test, y_test = load_conll2002("testb", data_home=data_home())
    if args.sentences:
        X_train, y_train = X_train[:args.sentences], y_train[:args.sentences]
    F_train = [sent2features(s) for s in X_train]
    n_tokens = sum(len(labels) for labels in y_train)
    F_test = [sent2features(s) for s in X_test]
    folds = KFold(args.folds)
    params = {"l1_ratio": L1_RATIO, "max_iter": args.max_iter}

    with EvaluationCount() as cv_count:
        cv, cv_seconds = timed(lambda: CRFClassifierCV(
            alphas=args.alphas, cv=folds, scoring=span_f1_scorer, **params).fit(
                F_train, y_train))
    cv_load = os.getloadavg()[0]
    recording = IterationRecordingScorer()
    with EvaluationCount() as grid_count:
        grid, grid_seconds = timed(lambda: GridSearchCV(
            CRFClassifier(**params), {"alpha": args.alphas}, cv=folds,
            scoring=recording).fit(F_train, y_train))
    grid_load = os.getloadavg()[0]
    alpha = cv.alpha_
    crfsuite, crfsuite_seconds = timed(lambda: sklearn_crfsuite.CRF(
        algorithm="lbfgs", c1=alpha * L1_RATIO, c2=0.5 * alpha * (1 - L1_RATIO),
        max_iterations=args.max_iter, all_possible_transitions=True).fit(F_train, y_train))

    grid_scores = np.array([grid.cv_results_[f"split{k}_test_score"]
                            for k in range(args.folds)])
    print(f"\nconll2002 esp: {len(X_train)} training / {len(X_test)} test sentences, "
          f"{args.folds} folds, alphas {args.alphas}, l1_ratio 1/3, "
          f"max_iter {args.max_iter}")
    print(f"{'':34s}{'GridSearchCV':>14s}{'CRFClassifierCV':>17s}{'ratio':>8s}")
    print(f"{'search + refit (s)':34s}{grid_seconds:14.1f}{cv_seconds:17.1f}"
          f"{cv_seconds / grid_seconds:7.2f}x")
    print(f"{'chosen alpha':34s}{grid.best_params_['alpha']:14.4g}{alpha:17.4g}")
    print(f"{'best mean fold span F1':34s}{grid.best_score_:14.4f}{cv.best_score_:17.4f}")
    print(f"{'refit span F1 on esp.testb':34s}{test_f1(grid, F_test, y_test):14.4f}"
          f"{test_f1(cv, F_test, y_test):17.4f}")
    print(f"{'largest |fold score difference|':34s}"
          f"{np.abs(grid_scores - cv.scores_).max():31.4f}")
    # GridSearchCV fits each candidate (in args.alphas order) on every fold in turn
    grid_n_iter = np.array(recording.n_iter).reshape(len(args.alphas), args.folds).T
    by_strength = np.argsort(-np.asarray(args.alphas), kind="stable")
    print(f"{'iterations, all fold fits':34s}{grid_n_iter.sum():14d}"
          f"{cv.path_n_iter_.sum():17d}{cv.path_n_iter_.sum() / grid_n_iter.sum():7.2f}x")
    print(f"{'iterations, refit':34s}{grid.best_estimator_.n_iter_:14d}{cv.n_iter_:17d}")
    print(f"{'objective evaluations':34s}{grid_count.evaluations:14d}"
          f"{cv_count.evaluations:17d}")
    print(f"{'  weighted by tokens (all data = 1)':34s}"
          f"{grid_count.token_evaluations / n_tokens:14.1f}"
          f"{cv_count.token_evaluations / n_tokens:17.1f}"
          f"{cv_count.token_evaluations / grid_count.token_evaluations:7.2f}x")
    print(f"{'1-minute load average after':34s}{grid_load:14.2f}{cv_load:17.2f}")
    print(f"path iterations per fold (strongest alpha first): "
          f"{[row[by_strength].tolist() for row in cv.path_n_iter_]}; the grid's: "
          f"{[row[by_strength].tolist() for row in grid_n_iter]}")
    print(f"mean fold span F1 per alpha {[float(a) for a in args.alphas]}: grid "
          f"{np.round(grid_scores.mean(axis=0), 4).tolist()}, CV "
          f"{np.round(cv.scores_.mean(axis=0), 4).tolist()}")
    print(f"sklearn-crfsuite, one fit at alpha={alpha:.4g} on all the training data: "
          f"{crfsuite_seconds:.1f} s (span F1 on esp.testb "
          f"{test_f1(crfsuite, F_test, y_test):.4f})")
    checks = [("CRFClassifierCV <= 0.3x GridSearchCV", cv_seconds <= 0.3 * grid_seconds),
              ("same alpha", alpha == grid.best_params_["alpha"])]
    print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}"
                                  for name, ok in checks))


if __name__ == "__main__":
    main()
