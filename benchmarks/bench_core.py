"""skcrf vs sklearn-crfsuite on CoNLL-2002 Spanish NER and CoNLL-2000 chunking.

Both libraries get the same per-token feature dicts (the sklearn-crfsuite
tutorial set) and the same regularization: sklearn-crfsuite with c1=0.1,
c2=0.1 is skcrf with alpha = c1 + 2 * c2 = 0.3 and l1_ratio = c1 / alpha = 1/3.
Building the dicts is not timed; each library's fit and predict include turning
the dicts into its own representation.

Run: python benchmarks/bench_core.py [--corpus conll2002 conll2000] [--max-iter 100]

Targets (issue 2): skcrf fit <= 0.5x sklearn-crfsuite's time, entity F1 at most
0.5 point below, predict <= 1x. The machine is shared and noisy: compare the
ratios printed by one run, not absolute times across runs.
"""

import argparse
import platform
import warnings

import numba
from common import add_corpus_argument, data_home, fit_and_predict, tutorial_splits

from skcrf import CRFClassifier
from skcrf.metrics import flat_accuracy_score, span_f1_score

def measure(make_model, X_train, y_train, X_test, y_test):
    """Fit and predict time, peak fit memory, token accuracy and span F1."""
    # both stop at max_iter by design of the comparison
    y_pred, fit_seconds, predict_seconds, fit_mib = fit_and_predict(make_model(), X_train,
                                                                    y_train, X_test)
    return {
        "fit (s)": fit_seconds,
        "predict (s)": predict_seconds,
        "fit peak memory (MiB)": fit_mib,
        "token accuracy": flat_accuracy_score(y_test, y_pred),
        "span F1": span_f1_score(y_test, y_pred),
    }


def report(corpus, crfsuite, skcrf, n_train, n_test):
    print(f"\n{corpus}: {n_train} training / {n_test} test sequences")
    print(f"{'':24s}{'sklearn-crfsuite':>18s}{'skcrf':>12s}{'ratio':>10s}")
    for key in crfsuite:
        a, b = crfsuite[key], skcrf[key]
        if key in ("token accuracy", "span F1"):
            print(f"{key:24s}{a:18.4f}{b:12.4f}{(b - a) * 100:+9.2f}pt")
        else:
            print(f"{key:24s}{a:18.2f}{b:12.2f}{b / a:9.2f}x")
    checks = [
        ("fit time <= 0.5x", skcrf["fit (s)"] <= 0.5 * crfsuite["fit (s)"]),
        ("span F1 >= crfsuite - 0.5pt", skcrf["span F1"] >= crfsuite["span F1"] - 0.005),
        ("predict time <= 1x", skcrf["predict (s)"] <= crfsuite["predict (s)"]),
    ]
    print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_argument(parser)
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()

    import sklearn_crfsuite

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}")
    # compile (or load from cache) the training and decoding kernels outside the
    # timed region
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CRFClassifier(max_iter=1).fit([[{"a": 1.0}, {"b": 1.0}]], [["x", "y"]]).predict(
            [[{"a": 1.0}]])

    for corpus in args.corpus:
        F_train, y_train, F_test, y_test = tutorial_splits(corpus)

        crfsuite = measure(
            lambda: sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                         max_iterations=args.max_iter,
                                         all_possible_transitions=True),
            F_train, y_train, F_test, y_test)
        skcrf = measure(
            lambda: CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=args.max_iter),
            F_train, y_train, F_test, y_test)
        report(corpus, crfsuite, skcrf, len(F_train), len(F_test))


if __name__ == "__main__":
    main()
