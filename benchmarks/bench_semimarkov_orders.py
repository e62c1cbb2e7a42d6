"""Semi-Markov CRFs of order 2 against order 1 on CoNLL-2000 chunking, with chains as reference.

Every model gets the same per-token feature dicts (the sklearn-crfsuite
tutorial's: words and POS), the same regularization (sklearn-crfsuite
c1=0.1, c2=0.1 is skcrf alpha=0.3, l1_ratio=1/3) and the same number of
iterations, all measured in one run, so the ratios compare like with like on
a shared, noisy machine.

Models: sklearn-crfsuite's chain (``crfsuite``); skcrf's order-1 chain
(``chain``); SemiMarkovCRF of order 1 (``semi1``), of order 2 over the
segment-label trigrams seen in training (``semi2``) and over those seen at
least ``--min-pattern-freq`` times (``semi2-fN``). For the semi-Markov models
of order 2 the table also gives the patterns trained and kept (after L1) and
the states of their automaton, whose square a segment boundary costs.

Run: python benchmarks/bench_semimarkov_orders.py [--max-iter 100] [--n-train N]
     [--models crfsuite chain semi1 semi2 semi2-f] [--min-pattern-freq 5]
"""

import argparse
import platform

import numba
from common import data_home, fit_and_predict, print_fit_ratios, print_table, sent2features

from skcrf import CRFClassifier, SemiMarkovCRF
from skcrf.datasets import load_conll2000
from skcrf.metrics import span_f1_score

MODELS = ["crfsuite", "chain", "semi1", "semi2", "semi2-f"]


def models(max_iter, min_pattern_freq):
    skcrf = dict(alpha=0.3, l1_ratio=1 / 3, max_iter=max_iter)

    def crfsuite():
        import sklearn_crfsuite

        return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                    max_iterations=max_iter, all_possible_transitions=True)

    return {
        "crfsuite": crfsuite,
        "chain": lambda: CRFClassifier(**skcrf),
        "semi1": lambda: SemiMarkovCRF(scheme="IOB2", **skcrf),
        "semi2": lambda: SemiMarkovCRF(scheme="IOB2", order=2, **skcrf),
        "semi2-f": lambda: SemiMarkovCRF(scheme="IOB2", order=2,
                                         min_pattern_freq=min_pattern_freq, **skcrf),
    }


def pattern_statistics(model, F_train, y_train):
    """(patterns trained, patterns kept, automaton states) of an order-d SemiMarkovCRF."""
    from skcrf.structures.semimarkov.patterns import segment_automaton_of

    data = model._training_data(F_train, y_train)
    structure = model._training_problem(data).structure
    return (structure.patterns.n_patterns, model.label_patterns_.shape[0],
            segment_automaton_of(structure.patterns).n_states)


def measure(make_model, F_train, y_train, F_test, y_test):
    model = make_model()
    y_pred, fit_seconds, predict_seconds, fit_mib = fit_and_predict(model, F_train, y_train,
                                                                    F_test)
    result = {"span F1": span_f1_score(y_test, y_pred), "fit (s)": fit_seconds,
              "predict (s)": predict_seconds, "fit peak memory (MiB)": fit_mib}
    if getattr(model, "order", 1) > 1 and isinstance(model, SemiMarkovCRF):
        trained, kept, states = pattern_statistics(model, F_train, y_train)
        result.update({"patterns trained": trained, "patterns kept": kept,
                       "automaton states": states})
    return result


def report(results, n_train, n_test):
    print_table(f"CoNLL-2000 chunking: {n_train} training / {n_test} test sentences",
                results, lambda key, value: (f"{value:12.4f}" if key == "span F1" else
                                             f"{value:12d}" if isinstance(value, int) else
                                             f"{value:12.2f}"))
    print_fit_ratios(results, ("crfsuite", "semi1"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=MODELS)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--min-pattern-freq", type=int, default=5)
    parser.add_argument("--n-train", type=int, default=None,
                        help="the first N training sentences only (default: all 8936)")
    args = parser.parse_args()
    X_train, y_train = load_conll2000("train", data_home=data_home())
    X_test, y_test = load_conll2000("test", data_home=data_home())
    if args.n_train is not None:
        X_train, y_train = X_train[:args.n_train], y_train[:args.n_train]
    F_train = [sent2features(s) for s in X_train]
    F_test = [sent2features(s) for s in X_test]
    print(f"{platform.processor() or platform.machine()}, numba threads "
          f"{numba.config.NUMBA_NUM_THREADS}, max_iter {args.max_iter}")
    make = models(args.max_iter, args.min_pattern_freq)
    results = {}
    for name in args.models:
        label = f"semi2-f{args.min_pattern_freq}" if name == "semi2-f" else name
        results[label] = measure(make[name], F_train, y_train, F_test, y_test)
        print(f"{label}: " + ", ".join(f"{k} {v:.4g}" for k, v in results[label].items()),
              flush=True)
    report(results, len(X_train), len(X_test))


if __name__ == "__main__":
    main()
