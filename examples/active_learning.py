"""
Active learning on CoNLL-2002 Spanish: uncertainty against random selection
===========================================================================

Annotating sentences costs time, so annotate first those the model is least
sure of. This script simulates it: the training set of CoNLL-2002 Spanish
stands for the pool of unannotated sentences (its gold tags are the
annotator's answers), a model starts from a few random sentences, and each
round adds a batch of sentences chosen either at random or by
:func:`skcrf.uncertainty.uncertainty_scores` (the expected number of wrong
tokens of the best labelling, the least-confidence measure of Settles and
Craven, 2008, summed over tokens, so that long uncertain sentences come
first). After each round it scores the entity F1 on ``esp.testb``. Several
seeds (different starting sentences and random picks) show how much of the
difference is luck.

Run it from any folder (``--max-iter N`` caps each training, ``--data-home
PATH`` says where the corpora are)::

    python active_learning.py

:func:`~skcrf.datasets.fetch_conll2002` reads the corpus from the data home
and downloads it on first use; with no data and no network the script says so
in one line and runs the same loop on the sample of UD English EWT that ships
with skcrf (its names as entities), where the curves are noisier.

.. note::

   This page is built with ``--max-iter 50`` and only when the corpus is in
   the data home at build time (else it shows the script alone).
"""

# %%
# The pool, the test set and the model
# ------------------------------------
import argparse
import sys
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import fetch_conll2002, load_ud_sample
from skcrf.metrics import flat_accuracy_score, span_classification_report, span_f1_score
from skcrf.uncertainty import uncertainty_scores

parser = argparse.ArgumentParser(
    description="Active learning on CoNLL-2002 Spanish: uncertainty against random selection.")
parser.add_argument("--max-iter", type=int, default=50, help="most L-BFGS iterations per fit")
parser.add_argument("--data-home", default=None,
                    help="folder holding conll2002/ (default: $SKCRF_DATA, else ~/skcrf_data)")
parser.add_argument("--rounds", type=int, default=8, help="annotation rounds")
parser.add_argument("--batch", type=int, default=40, help="sentences annotated per round")
parser.add_argument("--seeds", type=int, default=3, help="repetitions with other seeds")
args = parser.parse_args()

try:
    X_pool, y_pool = fetch_conll2002("esp", "train", data_home=args.data_home)
    X_test, y_test = fetch_conll2002("esp", "testb", data_home=args.data_home)
    corpus = "CoNLL-2002 Spanish"
except OSError as exc:  # no data and no network: say so, and use the embedded sample
    print(f"CoNLL-2002 is not available ({str(exc).splitlines()[0]}); running on the UD "
          f"English EWT sample instead.", file=sys.stderr)
    X_pool, X_test = load_ud_sample("train")[0], load_ud_sample("test")[0]
    # the names: each run of proper nouns (UPOS PROPN) is one NAME entity, in IOB2
    y_pool, y_test = ([[("I-NAME" if i and tags[i - 1] == "PROPN" else "B-NAME")
                        if tag == "PROPN" else "O" for i, tag in enumerate(tags)]
                       for tags in load_ud_sample(subset)[1]] for subset in ("train", "test"))
    corpus = "UD English EWT sample"
print(f"{corpus}: a pool of {len(X_pool)} sentences, {len(X_test)} test sentences")

# Features are computed once for the whole pool: each round only trains.
featurize = TokenFeaturizer().fit(X_pool[:1])
vectorizer = SequenceVectorizer().fit(featurize.transform(X_pool))
F_pool = vectorizer.transform(featurize.transform(X_pool))
F_test = vectorizer.transform(featurize.transform(X_test))


def train(indices):
    crf = CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=args.max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(F_pool[indices], [y_pool[i] for i in indices])
    return crf


# %%
# The loop
# --------
# Each round trains on the sentences annotated so far, scores the test set,
# then picks the next batch among the sentences not yet annotated.
def run(strategy, seed):
    rng = np.random.default_rng(seed)
    annotated = list(rng.choice(len(X_pool), size=args.batch, replace=False))
    sizes, scores = [], []
    for _ in range(args.rounds):
        crf = train(np.array(annotated))
        sizes.append(len(annotated))
        scores.append(span_f1_score(y_test, crf.predict(F_test)))
        left = np.setdiff1d(np.arange(len(X_pool)), annotated)
        if strategy == "random":
            chosen = rng.choice(left, size=args.batch, replace=False)
        else:
            doubt = uncertainty_scores(crf, F_pool[left], scores=["expected_errors"])[
                "expected_errors"]
            chosen = left[np.argsort(-doubt, kind="stable")[:args.batch]]
        annotated.extend(chosen.tolist())
    return np.array(sizes), np.array(scores), crf


started = time.perf_counter()
curves = {"uncertainty": [], "random": []}
for seed in range(args.seeds):
    for strategy in curves:
        sizes, scores, model = run(strategy, seed)
        curves[strategy].append(scores)
        if strategy == "uncertainty":
            last = model
print(f"{2 * args.seeds * args.rounds} models trained in {time.perf_counter() - started:.0f} s")

print(f"\n{'sentences':>10s}" + "".join(f"{s:>24s}" for s in curves))
for k, size in enumerate(sizes):
    cells = "".join(f"{np.mean([c[k] for c in curves[s]]):14.3f} +- "
                    f"{np.std([c[k] for c in curves[s]]):.3f}" for s in curves)
    print(f"{size:10d}{cells}")

# %%
# The curves
# ----------
# Mean entity F1 of the seeds, with their range: an honest picture needs the
# spread as much as the means.
fig, ax = plt.subplots(layout="constrained")
for strategy, runs in curves.items():
    runs = np.array(runs)
    ax.plot(sizes, runs.mean(axis=0), marker="o", label=strategy)
    ax.fill_between(sizes, runs.min(axis=0), runs.max(axis=0), alpha=0.2)
ax.set_xlabel("annotated sentences")
ax.set_ylabel("entity F1 on the test set")
ax.set_title(f"Active learning on {corpus} ({args.seeds} seeds)")
ax.legend()

# %%
# The last model chosen by uncertainty, in detail
# -----------------------------------------------
predicted = last.predict(F_test)
print(f"\ntoken accuracy {flat_accuracy_score(y_test, predicted):.4f}")
print(span_classification_report(y_test, predicted, digits=3))
plt.show()
