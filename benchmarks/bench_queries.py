"""Inference queries on CoNLL-2002 Spanish NER: the cost of n-best, and constrained decoding.

One model trained on esp.train with the sklearn-crfsuite tutorial features
and CRFsuite's usual regularization (c1=0.1, c2=0.1, i.e. alpha=0.3,
l1_ratio=1/3), applied to esp.testb:

- time of ``predict_nbest(n=10)`` and of ``predict(return_proba=True)``
  against ``predict``, from the feature dicts (what a user calls) and from
  the vectorized SequenceMatrix (the inference alone, plus building the lists);
- span F1 and the number of test sentences with an ill-formed IOB2 span
  (an ``I-X`` that opens it) for: sklearn-crfsuite; skcrf unconstrained;
  skcrf with the ``"bio"`` constraints at decoding only (the unconstrained
  weights with ``-inf`` on the forbidden transitions); skcrf trained and
  decoding with ``allowed_transitions="bio"``; and the oracle of the 10-best
  lists (per sentence the labelling with most correct tokens: how much a
  reranker could gain).

CRF++'s ``-n 10`` is not compared: CRF++ is not installed and cannot be built
here (its sources would have to be downloaded).

Run: python benchmarks/bench_queries.py [--max-iter 100] [--n 10]

Target (issue 14): predict_nbest(n=10) within 4x predict's time. The machine
is shared and noisy: compare the ratios of one run. Building the dicts is not
timed.
"""

import argparse
import copy
import platform
import time
import warnings

import numba
import numpy as np
from common import best_of, data_home, sent2features

from skcrf import CRFClassifier
from skcrf._estimators.constraints import scheme_constraints
from skcrf.datasets import load_conll2002
from skcrf.metrics import span_f1_score
from skcrf.tags import segments_to_tags, tags_to_segments


def best_time(call, repeats=3):
    """Shortest of ``repeats`` wall times of ``call()`` (after one untimed call)."""
    call()
    return best_of(repeats, call)


def fit(make_model, X, y):
    model = make_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached, the malformed training tag
        started = time.perf_counter()
        model.fit(X, y)
    return model, time.perf_counter() - started


def ill_formed(y_pred):
    """Number of sentences whose tags are not the well-formed IOB2 of their spans."""
    return sum(segments_to_tags(tags_to_segments(list(tags)), len(tags)) != list(tags)
               for tags in y_pred)


def decoding_only_constraints(crf):
    """A copy of an unconstrained model with -inf on the transitions "bio" forbids."""
    constrained = copy.deepcopy(crf)
    transitions, start, end = scheme_constraints(crf.classes_, "IOB2").masks()
    constrained.transition_coef_ = crf.transition_coef_ + transitions
    constrained.start_coef_ = crf.start_coef_ + start
    constrained.end_coef_ = crf.end_coef_ + end
    return constrained


def oracle(nbest, y_true):
    """Per sentence, the labelling of the n-best list with most correct tokens."""
    return [max(labellings, key=lambda item: np.sum(item[0] == np.asarray(gold)))[0]
            for labellings, gold in zip(nbest, y_true)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--n", type=int, default=10, help="labellings per sentence")
    args = parser.parse_args()

    import sklearn_crfsuite

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}")
    # compile (or load from numba's cache) every kernel outside the timed regions
    toy_X, toy_y = [[{"a": 1.0}, {"b": 1.0}]], [["B-X", "I-X"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for constraints in (None, "bio"):
            toy = CRFClassifier(max_iter=1, allowed_transitions=constraints).fit(toy_X, toy_y)
            toy.predict_nbest(toy_X, n=2)
            toy.predict(toy_X, return_proba=True)
            toy.predict_marginals(toy_X)
    X_train, y_train = load_conll2002("train", data_home=data_home())
    X_test, y_test = load_conll2002("testb", data_home=data_home())
    F_train = [sent2features(s) for s in X_train]
    F_test = [sent2features(s) for s in X_test]
    n_tokens = sum(map(len, y_test))
    print(f"conll2002: {len(X_train)} training / {len(X_test)} test sentences "
          f"({n_tokens} tokens), max_iter={args.max_iter}, n={args.n}")

    settings = dict(alpha=0.3, l1_ratio=1 / 3, max_iter=args.max_iter)
    crf, fit_plain = fit(lambda: CRFClassifier(**settings), F_train, y_train)
    bio, fit_bio = fit(lambda: CRFClassifier(allowed_transitions="bio", **settings),
                       F_train, y_train)
    suite, fit_suite = fit(lambda: sklearn_crfsuite.CRF(
        algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=args.max_iter,
        all_possible_transitions=True), F_train, y_train)
    print(f"fit (s): skcrf {fit_plain:.1f}, skcrf bio {fit_bio:.1f}, "
          f"sklearn-crfsuite {fit_suite:.1f}")

    M_test = crf.vectorizer_.transform(F_test)
    print(f"\ntime on esp.testb (s, best of 3)    {'dicts':>10s}{'ratio':>8s}"
          f"{'matrix':>10s}{'ratio':>8s}")
    rows = [("predict", lambda X: crf.predict(X)),
            ("predict(return_proba=True)", lambda X: crf.predict(X, return_proba=True)),
            (f"predict_nbest(n={args.n})", lambda X: crf.predict_nbest(X, n=args.n)),
            ("predict_marginals", lambda X: crf.predict_marginals(X)),
            ("sklearn-crfsuite predict", None)]
    base = {}
    ratios = {}
    for name, call in rows:
        if call is None:
            seconds = best_time(lambda: suite.predict(F_test))
            print(f"{name:36s}{seconds:10.3f}{seconds / base['dicts']:7.2f}x")
            continue
        times = {"dicts": best_time(lambda: call(F_test)),
                 "matrix": best_time(lambda: call(M_test))}
        base = base or times
        ratios[name] = {k: times[k] / base[k] for k in times}
        print(f"{name:36s}{times['dicts']:10.3f}{ratios[name]['dicts']:7.2f}x"
              f"{times['matrix']:10.3f}{ratios[name]['matrix']:7.2f}x")

    predictions = {
        "sklearn-crfsuite": suite.predict(F_test),
        "skcrf": crf.predict(F_test),
        "skcrf, bio at decoding only": decoding_only_constraints(crf).predict(F_test),
        "skcrf, bio (trained and decoding)": bio.predict(F_test),
        f"skcrf, oracle of the {args.n} best": oracle(crf.predict_nbest(F_test, n=args.n),
                                                    y_test),
    }
    print(f"\n{'decoding':40s}{'span F1':>10s}{'ill-formed sentences':>22s}")
    for name, y_pred in predictions.items():
        y_pred = [list(tags) for tags in y_pred]
        print(f"{name:40s}{span_f1_score(y_test, y_pred):10.4f}{ill_formed(y_pred):22d}")
    nbest_ratio = ratios[f"predict_nbest(n={args.n})"]["dicts"]
    print(f"\ntarget: predict_nbest(n={args.n}) <= 4x predict (from dicts): "
          f"{nbest_ratio:.2f}x, {'met' if nbest_ratio <= 4 else 'MISSED'}")
    print("CRF++ -n 10: not compared (CRF++ cannot be built here without network access)")


if __name__ == "__main__":
    main()
