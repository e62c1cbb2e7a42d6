"""SemiMarkovCRF vs CRFClassifier vs sklearn-crfsuite on CoNLL-2002 Spanish NER and CoNLL-2000.

All three get the same per-token feature dicts (the sklearn-crfsuite tutorial
set) and the same regularization (c1=0.1, c2=0.1, i.e. alpha=0.3,
l1_ratio=1/3). One run; building the dicts is not timed.

Run: python benchmarks/bench_semimarkov.py [--corpus conll2002 conll2000] [--max-iter 100]

Targets (issue 12): SemiMarkovCRF's span F1 above CRFClassifier's on both
corpora, and its fit time within 3x CRFClassifier's. The machine is shared and
noisy: compare the ratios of one run.
"""

import argparse
import platform
import warnings

import numba
from sklearn.exceptions import ConvergenceWarning
from bench_core import LOADERS, measure
from common import data_home, sent2features

from skcrf import CRFClassifier, SemiMarkovCRF


def report(corpus, results, n_train, n_test):
    print(f"\n{corpus}: {n_train} training / {n_test} test sequences")
    names = list(results)
    print(f"{'':24s}" + "".join(f"{name:>18s}" for name in names))
    for key in results[names[0]]:
        fmt = "{:18.4f}" if key in ("token accuracy", "span F1") else "{:18.2f}"
        print(f"{key:24s}" + "".join(fmt.format(results[name][key]) for name in names))
    semi, chain = results["SemiMarkovCRF"], results["CRFClassifier"]
    checks = [("span F1 > CRFClassifier", semi["span F1"] > chain["span F1"]),
              ("fit time <= 3x CRFClassifier", semi["fit (s)"] <= 3 * chain["fit (s)"])]
    print(f"fit time ratio SemiMarkovCRF / CRFClassifier: "
          f"{semi['fit (s)'] / chain['fit (s)']:.2f}x")
    print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=sorted(LOADERS),
                        default=["conll2002", "conll2000"])
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()

    import sklearn_crfsuite

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}")
    # compile (or load from cache) the kernels outside the timed region
    toy_X, toy_y = [[{"a": 1.0}, {"b": 1.0}]], [["B-X", "O"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        CRFClassifier(max_iter=1).fit(toy_X, toy_y).predict(toy_X)
        semi = SemiMarkovCRF(max_iter=1).fit(toy_X, toy_y)
        semi.predict(toy_X)
        semi.predict_marginals(toy_X)

    for corpus in args.corpus:
        loader, train, test = LOADERS[corpus]
        X_train, y_train = loader(train, data_home=data_home())
        X_test, y_test = loader(test, data_home=data_home())
        F_train = [sent2features(s) for s in X_train]
        F_test = [sent2features(s) for s in X_test]
        models = {
            "sklearn-crfsuite": lambda: sklearn_crfsuite.CRF(
                algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=args.max_iter,
                all_possible_transitions=True),
            "CRFClassifier": lambda: CRFClassifier(alpha=0.3, l1_ratio=1 / 3,
                                                   max_iter=args.max_iter),
            # both corpora's test files are IOB2: write predictions that way
            "SemiMarkovCRF": lambda: SemiMarkovCRF(alpha=0.3, l1_ratio=1 / 3, scheme="IOB2",
                                                   max_iter=args.max_iter),
        }
        results = {name: measure(make, F_train, y_train, F_test, y_test)
                   for name, make in models.items()}
        report(corpus, results, len(X_train), len(X_test))


if __name__ == "__main__":
    main()
