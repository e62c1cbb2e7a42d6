"""Chunking on CoNLL-2000: train, evaluate, report.

It reads ``train.txt`` and ``test.txt`` of the CoNLL-2000 shared task from the
data home (``$SKCRF_DATA``, else ``~/skcrf_data``) with ``fetch_conll2000``,
which downloads them there on first use (``load_conll2000`` reads the data
home without downloading); with no data and no network, the script prints one
line saying how to get it. Each token is a (word, POS) pair; the labels split a sentence into
non-overlapping phrases (noun phrases ``B-NP I-NP``, verb phrases ``B-VP``,
...). It builds window features straight from the raw tokens, trains a CRF
with the default settings (``alpha=0.3, l1_ratio=1/3``, CRFsuite's usual
``c1=0.1, c2=0.1``; training stops once the objective has settled), and
prints the chunk-level (conlleval) report on the test set.

Run: python examples/conll2000_chunking.py [--max-iter N] [--data-home PATH]
"""

import argparse
import sys
import time

from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import fetch_conll2000, get_data_home
from skcrf.inspection import format_table, state_features, transition_features
from skcrf.metrics import (
    flat_accuracy_score,
    sequence_accuracy_score,
    span_classification_report,
    span_f1_score,
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=None,
                        help="most L-BFGS iterations (default: CRFClassifier's max_iter)")
    parser.add_argument("--data-home", default=None,
                        help="folder holding conll2000/ "
                             "(default: $SKCRF_DATA, else ~/skcrf_data)")
    args = parser.parse_args()

    data_home = get_data_home(args.data_home)
    try:
        X_train, y_train = fetch_conll2000("train", data_home=data_home)
        X_test, y_test = fetch_conll2000("test", data_home=data_home)
    except OSError as exc:  # no data and no network: one line saying how to get it
        sys.exit(str(exc))
    n_train_tokens = sum(map(len, X_train))
    print(f"CoNLL-2000 chunking from {data_home}: {len(X_train)} training sentences "
          f"({n_train_tokens} tokens), {len(X_test)} test sentences")

    # The POS column carries most of the signal for chunking; TokenFeaturizer
    # uses it (and its 2-letter prefix, the coarse tag) at offsets -1, 0, +1.
    pipe = make_pipeline(
        TokenFeaturizer(window=1),
        SequenceVectorizer(),
        CRFClassifier(),
    )
    if args.max_iter is not None:
        pipe.set_params(crfclassifier__max_iter=args.max_iter)
    started = time.perf_counter()
    pipe.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - started
    crf = pipe[-1]
    print(f"trained in {fit_seconds:.1f} s: {crf.n_iter_} iterations, "
          f"{crf.coef_.shape[1]} features, {(crf.coef_ != 0).sum()} non-zero state weights, "
          f"final objective {crf.loss_curve_[-1]:.1f}")

    started = time.perf_counter()
    y_pred = pipe.predict(X_test)
    predict_seconds = time.perf_counter() - started
    print(f"tagged {len(X_test)} test sentences in {predict_seconds:.2f} s\n")

    print(f"Chunk-level (conlleval) F1: {span_f1_score(y_test, y_pred):.4f}   "
          f"token accuracy: {flat_accuracy_score(y_test, y_pred):.4f}   "
          f"sentences without error: {sequence_accuracy_score(y_test, y_pred):.4f}\n")
    print("Chunks (exact span and type match):")
    print(span_classification_report(y_test, y_pred, digits=4, zero_division=0.0))

    print("Strongest transitions:")
    print(format_table(transition_features(crf, top=8)))
    print("\nStrongest state features of B-NP and B-VP:")
    print(format_table(state_features(crf, top=5, classes=["B-NP", "B-VP"])))


if __name__ == "__main__":
    main()
