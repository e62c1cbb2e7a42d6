"""Segment features: chains vs semi-Markov CRFs with and without them, on NER and chunking.

Four models on CoNLL-2002 Spanish NER (esp.train -> esp.testb) and CoNLL-2000
chunking (train -> test), all from raw tokens through ``TokenFeaturizer`` (its
default token features, the sklearn-crfsuite tutorial's) and
``SequenceVectorizer``:

- ``chain``: CRFClassifier;
- ``chain+gaz``: CRFClassifier with a gazetteer's BIO token features
  (``gaz:B-LOC``...);
- ``semi``: SemiMarkovCRF;
- ``semi+seg``: SemiMarkovCRF with the same gazetteer token features plus
  features of whole segments (``--kinds``, up to ``--segment-length`` tokens).

The gazetteer holds the training set's own spans (entities, chunks) and
nothing else; the training sentences are featurized with the spans of the
other folds only (``gazetteer_folds.py``: otherwise every training entity
matches and the models learn to trust the gazetteer blindly), the test
sentences with all of them. The same regularization (alpha=0.3,
l1_ratio=1/3) and iterations for all. Fit time and peak memory are the
estimator's fit on the featurized training set; featurizing is timed apart.
One run on a shared machine: compare the ratios of one run.

Run: python benchmarks/bench_semimarkov.py [--corpus conll2002 conll2000] [--max-iter 300]

Targets (issue 35): semi+seg's span F1 at least 1.0 above chain+gaz's (the
same token features) on esp.testb, and above it on CoNLL-2000; semi's and
semi+seg's fit within 3x, and their peak memory within 1.5x, of the chain's
with the same token features (chain and chain+gaz).
"""

import argparse
import platform
import time
import warnings

import numba
from common import data_home, fit_and_predict, print_table
from gazetteer_folds import cross_fitted_features

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import load_conll2000, load_conll2002
from skcrf.metrics import span_f1_score

CORPORA = {
    "conll2002": (load_conll2002, "train", "testb"),
    "conll2000": (load_conll2000, "train", "test"),
}

#: The kinds of segment features of ``semi+seg`` by default: the segment's
#: shape pattern, its length and its gazetteer matches.
KINDS = ("shape", "length", "gazetteer")


def models(args):
    common = dict(alpha=0.3, l1_ratio=1 / 3, max_iter=args.max_iter)
    segments = dict(gazetteer=True, segment_features=list(args.kinds),
                    max_segment_length=args.segment_length)
    # (featurizer parameters, estimator); gazetteer=True: the cross-fitted one
    return {
        "chain": ({}, lambda: CRFClassifier(**common)),
        "chain+gaz": ({"gazetteer": True}, lambda: CRFClassifier(**common)),
        "semi": ({}, lambda: SemiMarkovCRF(scheme="IOB2", **common)),
        "semi+seg": (segments, lambda: SemiMarkovCRF(scheme="IOB2", **common)),
    }


def measure(params, make_model, X_train, y_train, X_test, y_test):
    started = time.perf_counter()
    train, test = cross_fitted_features(params, X_train, y_train, X_test)
    vectorizer = SequenceVectorizer()
    Xt_train = vectorizer.fit_transform(train)
    Xt_test = vectorizer.transform(test)
    featurize_seconds = time.perf_counter() - started
    del train, test
    model = make_model()  # a ConvergenceWarning at max_iter is reported as "iterations"
    y_pred, fit_seconds, predict_seconds, fit_mib = fit_and_predict(model, Xt_train, y_train,
                                                                    Xt_test)
    segments = Xt_train.segments
    return {"span F1": span_f1_score(y_test, y_pred), "fit (s)": fit_seconds,
            "fit peak memory (MiB)": fit_mib, "iterations": model.n_iter_,
            "predict (s)": predict_seconds, "featurize (s)": featurize_seconds,
            "segment features": 0 if segments is None else segments.n_features}


def report(corpus, results, n_train, n_test):
    names = list(results)
    print_table(f"{corpus}: {n_train} training / {n_test} test sequences", results,
                lambda key, value: f"{value:12.4f}" if key == "span F1" else f"{value:12.1f}")
    if {"chain", "chain+gaz", "semi", "semi+seg"} <= set(names):
        gain = 100 * (results["semi+seg"]["span F1"] - results["chain+gaz"]["span F1"])
        ratios = [(semi, chain, results[semi]["fit (s)"] / results[chain]["fit (s)"],
                   results[semi]["fit peak memory (MiB)"]
                   / max(results[chain]["fit peak memory (MiB)"], 1e-9))
                  for semi, chain in (("semi", "chain"), ("semi+seg", "chain+gaz"))]
        for semi, chain, time_ratio, memory_ratio in ratios:
            print(f"{semi} / {chain}: fit {time_ratio:.2f}x, peak memory {memory_ratio:.2f}x")
        needed = 1.0 if corpus == "conll2002" else 0.0
        checks = [(f"semi+seg F1 {gain:+.2f} pt over chain+gaz (target >= {needed:+.1f}"
                   f"{'' if needed else ', above'})", gain >= needed and gain > 0)]
        checks += [(f"{semi} fit <= 3x {chain}", time_ratio <= 3) for semi, chain, time_ratio, _
                   in ratios]
        checks += [(f"{semi} memory <= 1.5x {chain}", memory_ratio <= 1.5)
                   for semi, chain, _, memory_ratio in ratios]
        print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}"
                                      for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=sorted(CORPORA),
                        default=["conll2002", "conll2000"])
    parser.add_argument("--models", nargs="+", default=["chain", "chain+gaz", "semi",
                                                        "semi+seg"],
                        choices=["chain", "chain+gaz", "semi", "semi+seg"])
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS),
                        help="the kinds of segment features of semi+seg")
    parser.add_argument("--segment-length", type=int, default=4,
                        help="the longest segment with segment features")
    args = parser.parse_args()

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}, "
          f"max_iter {args.max_iter}, semi+seg kinds {args.kinds} up to "
          f"{args.segment_length} tokens")
    # compile (or load from cache) the kernels outside the timed region
    toy_X, toy_y = [["Ana", "vive", "en", "Lima"]] * 2, [["B-PER", "O", "O", "B-LOC"]] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for params, make_model in models(args).values():
            params = {**params, "gazetteer": {"Lima": "LOC"}} if params.get("gazetteer") \
                else params
            Xt = SequenceVectorizer().fit_transform(TokenFeaturizer(**params).fit_transform(
                toy_X))
            make_model().set_params(max_iter=2).fit(Xt, toy_y).predict(Xt)

    factories = models(args)
    for corpus in args.corpus:
        loader, train, test = CORPORA[corpus]
        X_train, y_train = loader(train, data_home=data_home())
        X_test, y_test = loader(test, data_home=data_home())
        results = {}
        for name in args.models:
            params, make_model = factories[name]
            results[name] = measure(params, make_model, X_train, y_train, X_test, y_test)
            print(f"  {corpus} {name}: " + ", ".join(
                f"{k} {v:.4g}" for k, v in results[name].items()), flush=True)
        report(corpus, results, len(X_train), len(X_test))


if __name__ == "__main__":
    main()
