"""TreeCRF over gold dependency trees against chains, on UD English EWT (train -> test).

Every model gets the same per-token feature dicts, made by
``TokenFeaturizer(head_column=...).transform_dicts``: the tutorial-style
window features of the words (and of UPOS where it is not the label) plus
features of each token's head (its word, its columns, the side and length of
the link). The same regularization (sklearn-crfsuite c1=0.1, c2=0.1, which is
skcrf alpha=0.3, l1_ratio=1/3) and the same number of iterations for all,
measured in one run, so the ratios compare like with like on this shared,
noisy machine.

Tasks:

- ``deprel``: each word's dependency relation to its head (the part before
  ':', 37 labels) over the gold tree; tokens are (form, UPOS, head).
- ``upos``: universal part-of-speech tags (17) over the gold tree; tokens are
  (form, head).

Models: sklearn-crfsuite (linear chain, the dicts without the tree);
skcrf ``CRFClassifier`` (linear chain, same dicts); ``no links``, a TreeCRF
whose every token is a root (no pairwise factors: each token on its own);
``TreeCRF`` (pairwise factors along the tree's links).

Run: python benchmarks/bench_tree.py [--tasks deprel upos] [--max-iter 100]

Targets (issue 13): on deprel, TreeCRF's token accuracy above both chains
(sklearn-crfsuite's with head features is about 0.936 here), with fit time
within 1.5x CRFClassifier's.
"""

import argparse
import platform
import time
import warnings

import numba
from common import PeakRSS, data_home

from skcrf import CRFClassifier, TokenFeaturizer, TreeCRF
from skcrf.datasets import load_conllu
from skcrf.metrics import flat_accuracy_score

PARENT = "__parent__"


def load_task(task):
    """(dicts_train, y_train, dicts_test, y_test) of one task, with the trees in the dicts."""
    folder = data_home() / "ud_english_ewt"
    columns = ("form", "upos") if task == "deprel" else ("form",)
    featurizer = TokenFeaturizer(head_column=len(columns))
    data = []
    for subset in ("train", "test"):
        X, y = load_conllu(folder / f"en_ewt-ud-{subset}.conllu", label=task,
                           columns=columns, deprel_subtypes=False)
        data += [featurizer.transform_dicts(X), y]
    return data


def without(dicts, key):
    return [[{k: v for k, v in token.items() if k != key} for token in sentence]
            for sentence in dicts]


def all_roots(dicts):
    return [[{**token, PARENT: -1} for token in sentence] for sentence in dicts]


def models(max_iter):
    import sklearn_crfsuite

    skcrf = dict(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter)
    # (factory, how the model sees the dicts)
    return {
        "crfsuite": (lambda: sklearn_crfsuite.CRF(
            algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=max_iter,
            all_possible_transitions=True), lambda d: without(d, PARENT)),
        "chain": (lambda: CRFClassifier(**skcrf), lambda d: d),
        "no links": (lambda: TreeCRF(**skcrf), all_roots),
        "tree": (lambda: TreeCRF(**skcrf), lambda d: d),
    }


def measure(make_model, F_train, y_train, F_test, y_test):
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
    return {"fit (s)": fit_seconds, "predict (s)": predict_seconds,
            "fit peak memory (MiB)": memory.mib,
            "token accuracy": flat_accuracy_score(y_test, y_pred)}


def report(task, results, n_classes):
    names = list(results)
    print(f"\n{task}: {n_classes} labels")
    print(f"{'':24s}" + "".join(f"{name:>12s}" for name in names))
    for key in next(iter(results.values())):
        form = "{:12.4f}" if key == "token accuracy" else "{:12.2f}"
        print(f"{key:24s}" + "".join(form.format(results[name][key]) for name in names))
    for base in ("crfsuite", "chain"):
        if base in results:
            print(f"fit time / {base}: " + ", ".join(
                f"{name} {results[name]['fit (s)'] / results[base]['fit (s)']:.2f}x"
                for name in names if name != base))
    if task == "deprel" and {"tree", "chain"} <= set(results):
        accuracy = results["tree"]["token accuracy"]
        chains = [results[name]["token accuracy"] for name in ("crfsuite", "chain")
                  if name in results]
        ratio = results["tree"]["fit (s)"] / results["chain"]["fit (s)"]
        checks = [("tree accuracy above both chains", accuracy > max(chains)),
                  (f"tree fit <= 1.5x CRFClassifier ({ratio:.2f}x)", ratio <= 1.5)]
        print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}"
                                      for name, ok in checks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=["deprel", "upos"],
                        default=["deprel", "upos"])
    parser.add_argument("--models", nargs="+", default=["crfsuite", "chain", "no links", "tree"],
                        choices=["crfsuite", "chain", "no links", "tree"])
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()

    print(f"python {platform.python_version()}, numba {numba.__version__}, "
          f"{numba.config.NUMBA_NUM_THREADS} threads, data from {data_home()}, "
          f"{args.max_iter} iterations")
    # compile (or load from cache) the kernels outside the timed region
    tiny = [[{"a": 1.0, PARENT: -1}, {"b": 1.0, PARENT: 0}]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model in (CRFClassifier(max_iter=1), TreeCRF(max_iter=1)):
            model.fit(tiny, [["x", "y"]]).predict(tiny)

    for task in args.tasks:
        F_train, y_train, F_test, y_test = load_task(task)
        n_classes = len({label for labels in y_train for label in labels})
        factories = models(args.max_iter)
        results = {}
        for name in args.models:
            make_model, view = factories[name]
            results[name] = measure(make_model, view(F_train), y_train, view(F_test), y_test)
            print(f"  {task} {name}: " + ", ".join(
                f"{k} {v:.4g}" for k, v in results[name].items()), flush=True)
        report(task, results, n_classes)


if __name__ == "__main__":
    main()
