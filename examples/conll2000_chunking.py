"""
Chunking on CoNLL-2000
======================

The task: split English sentences into non-overlapping phrases, such as noun
phrases (``NP``), verb phrases (``VP``) and prepositional phrases (``PP``).
For example::

   [NP He] [VP reckons] [NP the current account deficit] [VP will narrow]
   [PP to] [NP only # 1.8 billion] ...

The corpus is Wall Street Journal text: 8,936 training sentences (211,727
tokens) and 2,012 test sentences. Each token comes with its part-of-speech
tag, which carries most of the signal: a determiner (``DT``) usually begins a
noun phrase. The labels use the IOB2 scheme (``B-NP``, ``I-NP``, ``O``).

The script has the same shape as :ref:`the named-entity one
<sphx_glr_auto_examples_conll2002_ner.py>`: raw ``(word, POS)`` tokens go
through :class:`~skcrf.TokenFeaturizer` and :class:`~skcrf.SequenceVectorizer`
into a :class:`~skcrf.CRFClassifier` with its defaults (``alpha=0.3,
l1_ratio=1/3``), it prints the chunk-level report of the shared task and plots
the model with :mod:`skcrf.plotting`.

Run it from any folder (``--max-iter N`` caps training, ``--data-home PATH``
says where the corpora are)::

    python conll2000_chunking.py

:func:`~skcrf.datasets.fetch_conll2000` reads ``train.txt`` and ``test.txt``
from the data home (``$SKCRF_DATA``, else ``~/skcrf_data``) and downloads them
there on first use; with no data and no network, the script prints one line
saying how to get it (see :ref:`getting-the-data`).

.. note::

   This page is built with ``--max-iter 50`` to keep the documentation build
   short (and only when the corpus is in the data home at build time: else it
   shows the script alone), so the scores printed below are a little lower than
   those of a full run, which stops by itself after 163 iterations with a chunk F1 of 0.930.
   The comments quote the full run.
"""

# %%
# Load the corpus
# ---------------
import argparse
import sys
import time

import matplotlib.pyplot as plt
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import fetch_conll2000
from skcrf.inspection import format_table, state_features, transition_features
from skcrf.metrics import (
    flat_accuracy_score,
    sequence_accuracy_score,
    span_classification_report,
    span_f1_score,
)
from skcrf.plotting import plot_loss_curve, plot_top_features, plot_transition_weights

parser = argparse.ArgumentParser(description="Chunking on CoNLL-2000: train, evaluate, report.")
parser.add_argument("--max-iter", type=int, default=None,
                    help="most L-BFGS iterations (default: CRFClassifier's max_iter)")
parser.add_argument("--data-home", default=None,
                    help="folder holding conll2000/ (default: $SKCRF_DATA, else ~/skcrf_data)")
args = parser.parse_args()

data_home = args.data_home  # None: $SKCRF_DATA, else ~/skcrf_data
try:
    X_train, y_train = fetch_conll2000("train", data_home=data_home)
    X_test, y_test = fetch_conll2000("test", data_home=data_home)
except OSError as exc:  # no data and no network: one line saying how to get it
    sys.exit(str(exc))
n_train_tokens = sum(map(len, X_train))
print(f"CoNLL-2000 chunking: {len(X_train)} training sentences "
      f"({n_train_tokens} tokens), {len(X_test)} test sentences")

# %%
# Train
# -----
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

# %%
# Evaluate
# --------
# ``zero_division=0.0`` prints 0 for a type that is never predicted, as
# conlleval does, instead of warning.
started = time.perf_counter()
y_pred = pipe.predict(X_test)
predict_seconds = time.perf_counter() - started
print(f"tagged {len(X_test)} test sentences in {predict_seconds:.2f} s\n")

print(f"Chunk-level (conlleval) F1: {span_f1_score(y_test, y_pred):.4f}   "
      f"token accuracy: {flat_accuracy_score(y_test, y_pred):.4f}   "
      f"sentences without error: {sequence_accuracy_score(y_test, y_pred):.4f}\n")
print("Chunks (exact span and type match):")
print(span_classification_report(y_test, y_pred, digits=4, zero_division=0.0))

# %%
# How to read it (the numbers are those of the full run):
#
# - **Chunk F1 is 0.93**, in line with what CRFs with these features report
#   on this task. The frequent types (``NP``, ``VP``, ``PP``) carry it.
# - **Rare types are hard.** ``LST`` (list markers) has 5 test chunks and
#   none is found. The macro average, which weighs every type equally, shows
#   this (0.72); the micro average, which weighs every chunk equally, does not.
# - **Sentence accuracy is much lower** (0.56): a long sentence has many
#   chunks, and one wrong boundary is enough to miss it.
#
# The trained model
# -----------------
print("Strongest transitions:")
print(format_table(transition_features(crf, top=8)))
print("\nStrongest state features of B-NP and B-VP:")
print(format_table(state_features(crf, top=5, classes=["B-NP", "B-VP"])))

# %%
# With 22 labels the transition heatmap is larger; the weights are not written
# in the cells, colour alone tells sign and strength. Each ``B-X`` to ``I-X``
# cell is red (a phrase continues with its own type), and moving into an
# ``I-`` label of another type is blue.
fig, ax = plt.subplots(figsize=(9, 8), layout="constrained")
plot_transition_weights(crf, ax=ax)

# %%
# The objective, iteration by iteration:
fig, ax = plt.subplots(layout="constrained")
plot_loss_curve(crf, ax=ax)

# %%
# The strongest features for the start of a noun phrase and of a verb phrase.
# Most are single words, each seen on few tokens. POS features appear too:
# ``col1`` is the POS column and ``col1[:2]`` its two-letter prefix, so
# ``col1[:2]=VB`` (any verb tag) speaks for ``B-VP``.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
plot_top_features(crf, "B-NP", top=12, ax=left)
plot_top_features(crf, "B-VP", top=12, ax=right)
plt.show()
