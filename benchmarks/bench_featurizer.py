"""Featurizing raw tokens: TokenFeaturizer pipeline vs tutorial dicts, on CoNLL-2002.

Three comparisons on esp.train / esp.testb, printed side by side in one run
(issue 3):

1. featurize + vectorize esp.train: ``TokenFeaturizer`` + ``SequenceVectorizer``
   vs building the sklearn-crfsuite tutorial dicts in Python and vectorizing
   them with ``SequenceVectorizer``. Target: at least 5x faster.
2. fit from raw tokens: ``make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
   CRFClassifier(alpha=0.3, l1_ratio=1/3))`` vs sklearn-crfsuite
   (``c1=c2=0.1``, the same regularization) with its dict building timed.
   Target: at most 0.4x the time, entity F1 (seqeval) within 0.5 point.
3. predict esp.testb from raw tokens, dict building included for
   sklearn-crfsuite. Target: at most 0.5x the time.

Featurizing and predicting are timed as the best of ``--repeat`` runs,
alternating the two sides; each fit runs once. The machine is shared and
noisy: compare the ratios of one run, not absolute times across runs.

Run: python benchmarks/bench_featurizer.py [--max-iter 100] [--repeat 3]
"""

import argparse
import os
import time
import warnings

import numpy as np
from common import PeakRSS, data_home, sent2features
from seqeval.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn_crfsuite import CRF

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import load_conll2002
from skcrf.inference._runtime.batch import current_threads


def best_of(repeat, *functions):
    """Best wall time of each function over ``repeat`` alternating rounds."""
    best = [float("inf")] * len(functions)
    results = [None] * len(functions)
    for _ in range(repeat):
        for i, function in enumerate(functions):
            started = time.perf_counter()
            results[i] = function()
            best[i] = min(best[i], time.perf_counter() - started)
    return best, results


def tutorial_matrix(X):
    return SequenceVectorizer().fit_transform([sent2features(s) for s in X])


def featurizer_matrix(X):
    return SequenceVectorizer().fit_transform(TokenFeaturizer().fit_transform(X))


def crfsuite_fit(X, y, max_iter):
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
              all_possible_transitions=True)
    crf.fit([sent2features(s) for s in X], y)
    return crf


def skcrf_fit(X, y, max_iter):
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(),
                         CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter))
    return pipe.fit(X, y)


def timed(function, *args):
    with PeakRSS() as memory:
        started = time.perf_counter()
        result = function(*args)
        seconds = time.perf_counter() - started
    return result, seconds, memory.mib


def row(label, theirs, ours, unit="s", digits=3):
    ratio = ours / theirs if theirs else float("nan")
    print(f"  {label:34s}{theirs:>14.{digits}f}{ours:>14.{digits}f}{ratio:>9.2f}x  {unit}")
    return ratio


def verdict(met, text):
    print(f"  -> {'MET' if met else 'NOT MET'}: {text}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    home = data_home()
    X_train, y_train = load_conll2002("train", data_home=home)
    X_test, y_test = load_conll2002("testb", data_home=home)
    n_tokens = sum(map(len, X_train))
    print(f"CoNLL-2002 Spanish from {home}: {len(X_train)} training sequences "
          f"({n_tokens} tokens), {len(X_test)} test sequences; "
          f"{os.cpu_count()} cores, kernel threads {current_threads()}")

    # 1. featurize + vectorize
    (t_tutorial, t_ours), (tutorial, ours) = best_of(
        args.repeat, lambda: tutorial_matrix(X_train), lambda: featurizer_matrix(X_train))
    print(f"\n1. Featurize + vectorize esp.train (best of {args.repeat})")
    print(f"  {'':34s}{'tutorial dicts':>14s}{'featurizer':>14s}{'ratio':>10s}")
    row("time", t_tutorial, t_ours)
    print(f"  {'features / nnz':34s}{tutorial.n_features:>14d}{ours.n_features:>14d}")
    print(f"  {'':34s}{tutorial.matrix.nnz:>14d}{ours.matrix.nnz:>14d}")
    speedup = t_tutorial / t_ours
    verdict(speedup >= 5, f"{speedup:.1f}x faster (target >= 5x)")

    # 2. fit from raw tokens
    with warnings.catch_warnings():
        # both libraries stop at max_iter by design of the comparison
        warnings.simplefilter("ignore")
        crf, t_fit_crfsuite, mem_crfsuite = timed(crfsuite_fit, X_train, y_train,
                                                  args.max_iter)
        pipe, t_fit_ours, mem_ours = timed(skcrf_fit, X_train, y_train, args.max_iter)

    # 3. predict from raw tokens
    (t_pred_crfsuite, t_pred_ours), (pred_crfsuite, pred_ours) = best_of(
        args.repeat,
        lambda: crf.predict([sent2features(s) for s in X_test]),
        lambda: pipe.predict(X_test))
    f1_crfsuite = 100 * f1_score(y_test, [list(p) for p in pred_crfsuite])
    f1_ours = 100 * f1_score(y_test, [list(p) for p in pred_ours])

    print(f"\n2. Fit on esp.train from raw tokens (max_iter={args.max_iter}), "
          f"3. predict esp.testb (best of {args.repeat})")
    print(f"  {'':34s}{'crfsuite':>14s}{'skcrf':>14s}{'ratio':>10s}")
    fit_ratio = row("fit time", t_fit_crfsuite, t_fit_ours)
    row("fit peak RSS", mem_crfsuite, mem_ours, unit="MiB", digits=0)
    print(f"  {'solver iterations':34s}{'':>14s}{pipe[-1].n_iter_:>14d}")
    # CRFsuite keeps only attributes with a non-zero weight in its model
    active = int(np.count_nonzero(np.any(pipe[-1].coef_ != 0, axis=0)))
    print(f"  {'features with a non-zero weight':34s}{len(crf.attributes_):>14d}{active:>14d}")
    print(f"  {'entity F1 (seqeval, esp.testb)':34s}{f1_crfsuite:>14.2f}{f1_ours:>14.2f}"
          f"{f1_ours - f1_crfsuite:>+9.2f}   points")
    predict_ratio = row("predict time", t_pred_crfsuite, t_pred_ours)
    verdict(fit_ratio <= 0.4, f"fit {fit_ratio:.2f}x of sklearn-crfsuite (target <= 0.4x)")
    verdict(abs(f1_ours - f1_crfsuite) <= 0.5,
            f"entity F1 {f1_ours - f1_crfsuite:+.2f} points (target within 0.5)")
    verdict(predict_ratio <= 0.5,
            f"predict {predict_ratio:.2f}x of sklearn-crfsuite (target <= 0.5x)")


if __name__ == "__main__":
    main()
