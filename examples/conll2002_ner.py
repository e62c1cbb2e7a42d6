"""
Named-entity recognition on CoNLL-2002 Spanish
==============================================

The task: find the names of persons (``PER``), locations (``LOC``),
organizations (``ORG``) and other entities (``MISC``) in Spanish newswire.
The corpus has 8,323 training sentences (264,715 tokens) and 1,517 test
sentences (``esp.testb``). Each token comes with its part-of-speech tag; the
labels use the IOB2 scheme (``B-PER`` begins a person, ``I-PER`` continues
it, ``O`` is outside any entity).

This is the script behind ``make demo``. It builds features straight from the
raw ``(word, POS)`` tokens with :class:`~skcrf.TokenFeaturizer`, trains a
:class:`~skcrf.CRFClassifier` with the default settings (``alpha=0.3,
l1_ratio=1/3``, CRFsuite's usual ``c1=0.1, c2=0.1``, until the objective
settles), prints the scores the CoNLL shared task reported, and plots what the
model learned with :mod:`skcrf.plotting`.

Run it from any folder (``--max-iter N`` caps training, ``--data-home PATH``
says where the corpora are)::

    python conll2002_ner.py

:func:`~skcrf.datasets.fetch_conll2002` reads ``esp.train`` and ``esp.testb``
from the data home (``$SKCRF_DATA``, else ``~/skcrf_data``) and downloads them
there on first use; with no data and no network, the script prints one line
saying how to get it (see :ref:`getting-the-data`), or, with
``--sample-if-unavailable`` (as ``make demo`` runs it), says so in one line and
runs :ref:`the report on the sample that ships with skcrf
<sphx_glr_auto_examples_ud_sample.py>` instead.

.. note::

   This page is built with ``--max-iter 50`` to keep the documentation build
   short (and only when the corpus is in the data home at build time: else it
   shows the script alone), so the scores printed below are a little lower than
   those of a full run, which stops by itself after 131 iterations with an entity F1 of 0.786.
   The comments quote the full run.
"""

# %%
# Load the corpus
# ---------------
import argparse
import runpy
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import fetch_conll2002
from skcrf.inspection import format_table, state_features, transition_features
from skcrf.metrics import (
    flat_accuracy_score,
    flat_classification_report,
    span_classification_report,
    span_f1_score,
)
from skcrf.plotting import plot_loss_curve, plot_top_features, plot_transition_weights

parser = argparse.ArgumentParser(
    description="Named-entity recognition on CoNLL-2002 Spanish: train, evaluate, report.")
parser.add_argument("--max-iter", type=int, default=None,
                    help="most L-BFGS iterations (default: CRFClassifier's max_iter)")
parser.add_argument("--data-home", default=None,
                    help="folder holding conll2002/ (default: $SKCRF_DATA, else ~/skcrf_data)")
parser.add_argument("--sample-if-unavailable", action="store_true",
                    help="without the corpus, run the report on skcrf's embedded sample")
args = parser.parse_args()

data_home = args.data_home  # None: $SKCRF_DATA, else ~/skcrf_data
try:
    X_train, y_train = fetch_conll2002("esp", "train", data_home=data_home)
    X_test, y_test = fetch_conll2002("esp", "testb", data_home=data_home)
except OSError as exc:  # no data and no network: one line saying how to get it
    if not args.sample_if_unavailable:
        sys.exit(str(exc))
    print(f"CoNLL-2002 is not available, so this runs the report on the sample that ships "
          f"with skcrf (examples/ud_sample.py) instead. {exc}", file=sys.stderr, flush=True)
    sys.argv = ["ud_sample.py"] + ([] if args.max_iter is None
                                   else ["--max-iter", str(args.max_iter)])
    runpy.run_path(str(Path(__file__).with_name("ud_sample.py")), run_name="__main__")
    sys.exit(0)
n_train_tokens = sum(map(len, X_train))
print(f"CoNLL-2002 Spanish NER: {len(X_train)} training sentences "
      f"({n_train_tokens} tokens), {len(X_test)} test sentences")

# %%
# Train
# -----
# Window features of each token and its neighbours, vectorized once, then a
# CRF. ``--max-iter`` only caps the iterations: by default training stops once
# 10 iterations improved the objective by less than 0.1% (``tol=1e-3``).
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

# %%
# Evaluate
# --------
started = time.perf_counter()
y_pred = pipe.predict(X_test)
predict_seconds = time.perf_counter() - started
print(f"tagged {len(X_test)} test sentences in {predict_seconds:.2f} s\n")

print(f"Entity-level (conlleval) F1: {span_f1_score(y_test, y_pred):.4f}   "
      f"token accuracy: {flat_accuracy_score(y_test, y_pred):.4f}\n")
print("Entities (exact span and type match):")
print(span_classification_report(y_test, y_pred, digits=4))
print("Tokens (labels other than O):")
labels = [label for label in crf.classes_ if label != "O"]
print(flat_classification_report(y_test, y_pred, labels=labels, digits=4))

# %%
# How to read it (the numbers are those of the full run):
#
# - **Entity F1 is the number to compare** (0.786). Token accuracy (0.97)
#   looks far better, but most tokens are ``O`` and easy. Entity F1 counts an
#   entity as found only when its type and both ends are right.
# - **MISC is the hard type** (F1 0.57). It is a grab bag (events, titles,
#   nationalities) with few examples, so its recall is low.
# - **L1 made the model sparse.** Of the 76,684 features, each with a weight
#   for the labels it was seen with, only 26,503 weights are non-zero.
# - **Training stopped by itself** after 131 iterations; more iterations
#   would not change the F1 (see :doc:`/user_guide/regularization`).
#
# The strongest weights
# ---------------------
print("Strongest transitions:")
print(format_table(transition_features(crf, top=8)))
print("\nStrongest state features of B-PER and B-LOC:")
print(format_table(state_features(crf, top=5, classes=["B-PER", "B-LOC"])))

# %%
# Which label follows which? Rows are the current label, columns the next one.
# The blue cells from ``O`` to every ``I-`` label show that the model learned
# the IOB2 rule that an entity starts with ``B-``; the red cells from ``B-X``
# and ``I-X`` to ``I-X`` say that an entity continues with its own type.
fig, ax = plt.subplots(figsize=(7, 6), layout="constrained")
plot_transition_weights(crf, ax=ax)

# %%
# Did training converge? The objective falls fast in the first iterations and
# then flattens out; a curve still falling steeply at the end would mean
# ``max_iter`` is too small.
fig, ax = plt.subplots(layout="constrained")
plot_loss_curve(crf, ax=ax)

# %%
# Which features speak most for a person or a location?
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
plot_top_features(crf, "B-PER", top=12, ax=left)
plot_top_features(crf, "B-LOC", top=12, ax=right)
plt.show()

# %%
# Going further
# -------------
#
# - Search ``alpha`` with ``GridSearchCV`` on ``esp.train`` and keep
#   ``esp.testa`` (the development set) for checks:
#   :doc:`/user_guide/model_selection`.
# - Try ``TokenFeaturizer(window=2)`` or add ``"shape"`` and ``"prefix"`` to
#   ``word_features``: :doc:`/user_guide/features`.
# - Find the entities the model is unsure of: :doc:`/user_guide/marginals`.
