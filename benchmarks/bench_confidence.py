"""Span probabilities and calibration on CoNLL-2002 Spanish NER and CoNLL-2000 chunking.

- the cost of ``predict_spans(X, return_proba=True)`` (every predicted span's
  exact probability) against ``predict_marginals`` on esp.testb, from the
  vectorized SequenceMatrix (the inference alone) and from the feature dicts;
- the expected calibration error (10 equal-width bins) of token marginals and
  of span probabilities on the test set, before and after temperature scaling
  (:class:`skcrf.CalibratedCRF`, both objectives) fitted on held-out data:
  esp.testa for CoNLL-2002, the last 20% of train.txt (not trained on) for
  CoNLL-2000.

The models use the sklearn-crfsuite tutorial features and CRFsuite's usual
regularization (c1=0.1, c2=0.1, i.e. alpha=0.3, l1_ratio=1/3).

- with ``--structures``, the same ratio for a chain of order 2 and a
  SemiMarkovCRF (their span probabilities run one constrained partition
  function per event, batched), trained on the first ``--structure-train``
  sentences of esp.train: the ratio, not the accuracy, is what is measured.

Run: python benchmarks/bench_confidence.py [--max-iter 100] [--corpus both] [--structures]

Target (issue 47): span probabilities for all predicted spans within 2x
predict_marginals; temperature scaling lowers the span ECE. The machine is
shared and noisy: compare the ratios of one run.
"""

import argparse
import os
import platform
import time
import warnings

import numba
from common import best_of, data_home, sent2features

from skcrf import CalibratedCRF, CRFClassifier, SemiMarkovCRF
from skcrf.datasets import load_conll2000, load_conll2002
from skcrf.metrics import expected_calibration_error, span_confidences, token_confidences


def best_time(call, repeats=3):
    call()
    return best_of(repeats, call)


def fit(X, y, max_iter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        crf = CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter).fit(X, y)
    return crf, time.perf_counter() - started


def eces(model, X, y):
    """(token ECE, span ECE, number of predicted spans) of ``model`` on (X, y)."""
    marginals = model.predict_marginals(X)
    token = expected_calibration_error(*token_confidences(y, marginals, model.classes_))
    spans = model.predict_spans(X, return_proba=True)
    correct, confidence = span_confidences(y, spans)
    return token, expected_calibration_error(correct, confidence), correct.shape[0]


def calibration_rows(name, crf, X_dev, y_dev, X_test, y_test):
    print(f"\n{name}: ECE on the test set (10 bins)      token    span   spans")
    token, span, n = eces(crf, X_test, y_test)
    print(f"  uncalibrated{'':29s}{token:8.4f}{span:8.4f}{n:8d}")
    for objective in ("sequence", "token"):
        started = time.perf_counter()
        calibrated = CalibratedCRF(crf, objective=objective).fit(X_dev, y_dev)
        seconds = time.perf_counter() - started
        token, span, n = eces(calibrated, X_test, y_test)
        label = f"T={calibrated.temperature_:.3f} ({objective}, fit {seconds:.1f} s)"
        print(f"  {label:41s}{token:8.4f}{span:8.4f}{n:8d}")


def structure_rows(X_train, y_train, X_test, max_iter):
    """predict_spans(return_proba=True) over predict_marginals for other structures."""
    print(f"\nother structures ({len(X_train)} training sentences, max_iter={max_iter}); "
          f"time on esp.testb from the SequenceMatrix (s, best of 3)")
    print(f"{'model':34s}{'marginals':>10s}{'spans':>8s}{'spans+p':>9s}{'ratio':>8s}")
    for name, model in [("CRFClassifier(order=1)", CRFClassifier(max_iter=max_iter)),
                        ("CRFClassifier(order=2)", CRFClassifier(order=2, max_iter=max_iter)),
                        ("SemiMarkovCRF()", SemiMarkovCRF(max_iter=max_iter))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_train, y_train)
        M = model.vectorizer_.transform(X_test)
        marginals = best_time(lambda: model.predict_marginals(M))
        spans = best_time(lambda: model.predict_spans(M))
        proba = best_time(lambda: model.predict_spans(M, return_proba=True))
        print(f"{name:34s}{marginals:10.3f}{spans:8.3f}{proba:9.3f}{proba / marginals:7.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--corpus", choices=["conll2002", "conll2000", "both", "none"],
                        default="both")
    parser.add_argument("--structures", action="store_true",
                        help="also time span probabilities of order 2 and semi-Markov models")
    parser.add_argument("--structure-train", type=int, default=2000)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}; "
          f"load average at start {os.getloadavg()[0]:.2f} (a shared machine: "
          f"compare ratios within one run)")

    if args.corpus in ("conll2002", "both"):
        X_train, y_train = load_conll2002("train", data_home=data_home())
        X_dev, y_dev = load_conll2002("testa", data_home=data_home())
        X_test, y_test = load_conll2002("testb", data_home=data_home())
        F_train, F_dev, F_test = ([sent2features(s) for s in X]
                                  for X in (X_train, X_dev, X_test))
        crf, seconds = fit(F_train, y_train, args.max_iter)
        n_spans = sum(len(s) for s in crf.predict_spans(F_test))
        print(f"conll2002: {len(F_train)} training sentences, fit {seconds:.0f} s; esp.testb "
              f"{len(F_test)} sentences, {sum(map(len, y_test))} tokens, {n_spans} predicted "
              f"spans")
        M_test = crf.vectorizer_.transform(F_test)
        print(f"\ntime on esp.testb (s, best of 3)      {'dicts':>8s}{'ratio':>8s}"
              f"{'matrix':>8s}{'ratio':>8s}")
        base = {}
        for name, call in [("predict_marginals", lambda X: crf.predict_marginals(X)),
                           ("predict", lambda X: crf.predict(X)),
                           ("predict_spans", lambda X: crf.predict_spans(X)),
                           ("predict_spans(return_proba=True)",
                            lambda X: crf.predict_spans(X, return_proba=True))]:
            times = {"dicts": best_time(lambda: call(F_test)),
                     "matrix": best_time(lambda: call(M_test))}
            base = base or times
            print(f"{name:38s}{times['dicts']:8.3f}{times['dicts'] / base['dicts']:7.2f}x"
                  f"{times['matrix']:8.3f}{times['matrix'] / base['matrix']:7.2f}x")
        calibration_rows("conll2002 (calibrated on esp.testa)", crf, F_dev, y_dev, F_test,
                         y_test)

    if args.corpus in ("conll2000", "both"):
        X_train, y_train = load_conll2000("train", data_home=data_home())
        X_test, y_test = load_conll2000("test", data_home=data_home())
        F_train = [sent2features(s) for s in X_train]
        F_test = [sent2features(s) for s in X_test]
        cut = int(0.8 * len(F_train))
        crf, seconds = fit(F_train[:cut], y_train[:cut], args.max_iter)
        print(f"\nconll2000: {cut} training sentences, fit {seconds:.0f} s; "
              f"{len(F_train) - cut} held out for calibration; {len(F_test)} test sentences")
        calibration_rows("conll2000 (calibrated on the last 20% of train)", crf,
                         F_train[cut:], y_train[cut:], F_test, y_test)

    if args.structures:
        X_train, y_train = load_conll2002("train", data_home=data_home())
        X_test, _ = load_conll2002("testb", data_home=data_home())
        n = args.structure_train
        structure_rows([sent2features(s) for s in X_train[:n]], y_train[:n],
                       [sent2features(s) for s in X_test], args.max_iter)


if __name__ == "__main__":
    main()
