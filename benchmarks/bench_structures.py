"""Chain structures side by side: order 1, order 2 and transition features, against sklearn-crfsuite.

Every model of a task gets the same per-token feature dicts and the same
regularization (sklearn-crfsuite c1=0.1, c2=0.1 is skcrf alpha=0.3,
l1_ratio=1/3) and the same number of iterations, and all are measured in one
run, so the ratios compare like with like on this shared, noisy machine.

Tasks:

- ``chunk``: CoNLL-2000 chunking, the tutorial features (words and POS).
- ``pos``: CoNLL-2000's POS column as the label (45 tags), tutorial features
  without the POS ones, so the C**2 (order 1) and C**3 (order 2) terms weigh.
- ``ner``: CoNLL-2002 Spanish NER, the tutorial features.

Models: sklearn-crfsuite; skcrf order 1; skcrf order 2; skcrf order 1 with
transition features (POS and word-shape features of the token on the
transitions, where the task has them).

Run: python benchmarks/bench_structures.py [--tasks chunk pos ner] [--max-iter 100]
     [--models crfsuite order1 order2 edges]

Targets (issue 11): order 2 at least as accurate as order 1 on chunk and pos,
with fit time within (C/2)x order 1's.
"""

import argparse
import platform
import time
import warnings

import numba
from common import PeakRSS, data_home, sent2features

from skcrf import CRFClassifier
from skcrf.datasets import load_conll2000, load_conll2002
from skcrf.metrics import flat_accuracy_score, span_f1_score

#: Transition features: the token's POS and word shape (tutorial dict names).
EDGE_FEATURES = ["postag=", "postag[:2]=", "word.istitle()", "word.isupper()",
                 "word.isdigit()"]


def words_only(sent):
    """Tutorial features without the POS ones, for tagging POS."""
    features = sent2features(sent)
    for token in features:
        for key in [k for k in token if "postag" in k]:
            del token[key]
    return features


def load_task(task):
    """(F_train, y_train, F_test, y_test, scored by span F1)."""
    if task == "ner":
        X_train, y_train = load_conll2002("train", data_home=data_home())
        X_test, y_test = load_conll2002("testb", data_home=data_home())
        return ([sent2features(s) for s in X_train], y_train,
                [sent2features(s) for s in X_test], y_test, True)
    X_train, y_train = load_conll2000("train", data_home=data_home())
    X_test, y_test = load_conll2000("test", data_home=data_home())
    if task == "chunk":
        return ([sent2features(s) for s in X_train], y_train,
                [sent2features(s) for s in X_test], y_test, True)
    pos_train = [[token[1] for token in s] for s in X_train]
    pos_test = [[token[1] for token in s] for s in X_test]
    return ([words_only(s) for s in X_train], pos_train,
            [words_only(s) for s in X_test], pos_test, False)


def models(max_iter):
    import sklearn_crfsuite

    skcrf = dict(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter)
    return {
        "crfsuite": lambda: sklearn_crfsuite.CRF(
            algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
            all_possible_transitions=True),
        "order1": lambda: CRFClassifier(**skcrf),
        "order2": lambda: CRFClassifier(order=2, **skcrf),
        "edges": lambda: CRFClassifier(transition_features=EDGE_FEATURES, **skcrf),
    }


def measure(make_model, F_train, y_train, F_test, y_test, spans):
    model = make_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every model stops at max_iter by design
        with PeakRSS() as memory:
            started = time.perf_counter()
            model.fit(F_train, y_train)
            fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    y_pred = [list(labels) for labels in model.predict(F_test)]
    predict_seconds = time.perf_counter() - started
    result = {"fit (s)": fit_seconds, "predict (s)": predict_seconds,
              "fit peak memory (MiB)": memory.mib,
              "token accuracy": flat_accuracy_score(y_test, y_pred)}
    if spans:
        result["span F1"] = span_f1_score(y_test, y_pred)
    if hasattr(model, "transition_feature_coef_"):
        result["edge weights"] = model.transition_feature_coef_.nnz
    return result


def report(task, results, n_classes):
    names = list(results)
    print(f"\n{task}: {n_classes} labels")
    print(f"{'':24s}" + "".join(f"{name:>12s}" for name in names))
    keys = [k for k in next(iter(results.values()))]
    keys += [k for r in results.values() for k in r if k not in keys]
    for key in keys:
        cells = []
        for name in names:
            value = results[name].get(key)
            if value is None:
                cells.append(f"{'':>12s}")
            elif key in ("token accuracy", "span F1"):
                cells.append(f"{value:12.4f}")
            elif key == "edge weights":
                cells.append(f"{value:12d}")
            else:
                cells.append(f"{value:12.2f}")
        print(f"{key:24s}" + "".join(cells))
    for base in ("crfsuite", "order1"):
        if base not in results:
            continue
        ratios = [f"{name} {results[name]['fit (s)'] / results[base]['fit (s)']:.2f}x"
                  for name in names if name != base]
        print(f"fit time / {base}: " + ", ".join(ratios))
    if "order1" in results and "order2" in results:
        score = "span F1" if "span F1" in results["order1"] else "token accuracy"
        ratio = results["order2"]["fit (s)"] / results["order1"]["fit (s)"]
        checks = [
            (f"order 2 {score} >= order 1",
             results["order2"][score] >= results["order1"][score]),
            (f"order 2 fit <= (C/2 = {n_classes / 2:.1f})x order 1 ({ratio:.1f}x)",
             ratio <= n_classes / 2),
        ]
        print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}"
                                      for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=["chunk", "pos", "ner"],
                        default=["chunk", "pos", "ner"])
    parser.add_argument("--models", nargs="+", choices=["crfsuite", "order1", "order2", "edges"],
                        default=["crfsuite", "order1", "order2", "edges"])
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}, "
          f"{args.max_iter} iterations")
    # compile (or load from cache) the kernels outside the timed region
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for options in ({}, {"order": 2}, {"transition_features": "all"}):
            CRFClassifier(max_iter=1, **options).fit(
                [[{"a": 1.0}, {"b": 1.0}]], [["x", "y"]]).predict([[{"a": 1.0}]])

    for task in args.tasks:
        F_train, y_train, F_test, y_test, spans = load_task(task)
        n_classes = len({label for labels in y_train for label in labels})
        factories = models(args.max_iter)
        results = {}
        for name in args.models:
            if name == "edges" and task == "pos":
                # the task is to find the POS, so it has none to put on the transitions
                continue
            results[name] = measure(factories[name], F_train, y_train, F_test, y_test,
                                    spans)
            print(f"  {task} {name}: " + ", ".join(
                f"{k} {v:.4g}" for k, v in results[name].items()), flush=True)
        report(task, results, n_classes)


if __name__ == "__main__":
    main()
