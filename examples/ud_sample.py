"""
Tags and trees on the sample that ships with skcrf
==================================================

skcrf carries a small sample of the Universal Dependencies English Web
Treebank (:func:`~skcrf.datasets.load_ud_sample`, CC BY-SA 4.0): 419 training
and 70 test sentences of weblogs, emails, reviews and answers, each word with
its part-of-speech tag, its head in the sentence's dependency tree and its
relation to that head. Nothing to download: this script runs anywhere, and
it is what ``make demo`` runs when CoNLL-2002 is neither in the data home nor
downloadable.

Two tasks:

- **Part-of-speech tagging**: a :class:`~skcrf.CRFClassifier` gives each word
  one of the 17 universal tags (``NOUN``, ``VERB``, ``DET``, ...) from the
  words around it.
- **Dependency relations over a given tree**: each word's relation to its head
  (``nsubj``, ``obj``, ``det``, ...). A :class:`~skcrf.TreeCRF` links each
  word's label to its head's label along the tree; a
  :class:`~skcrf.CRFClassifier` on the same features links it to the previous
  word's instead.

Run it from any folder (``--max-iter N`` caps training)::

    python ud_sample.py

With 30 times more data, :func:`~skcrf.datasets.fetch_ud` gives the whole
treebank (see :ref:`getting-the-data`).
"""

# %%
# Load the sample
# ---------------
import argparse
import time

import matplotlib.pyplot as plt
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer, TreeCRF
from skcrf.datasets import load_ud_sample
from skcrf.inspection import format_table, transition_features
from skcrf.metrics import flat_accuracy_score, flat_classification_report
from skcrf.plotting import plot_loss_curve, plot_top_features, plot_transition_weights

parser = argparse.ArgumentParser(
    description="Part-of-speech tags and dependency relations on skcrf's embedded sample.")
parser.add_argument("--max-iter", type=int, default=None,
                    help="most L-BFGS iterations (default: the estimators' max_iter)")
args = parser.parse_args()
limits = {} if args.max_iter is None else {"max_iter": args.max_iter}

X_train, y_train = load_ud_sample("train")
X_test, y_test = load_ud_sample("test")
print(f"UD English EWT sample: {len(X_train)} training sentences "
      f"({sum(map(len, X_train))} words), {len(X_test)} test sentences")

# %%
# Part-of-speech tags
# -------------------
# Window features of each word and its neighbours (the word, its shape,
# prefixes and suffixes), then a CRF with the default settings.
tagger = make_pipeline(TokenFeaturizer(window=1), SequenceVectorizer(),
                       CRFClassifier(**limits))
started = time.perf_counter()
tagger.fit(X_train, y_train)
crf = tagger[-1]
print(f"tagger trained in {time.perf_counter() - started:.1f} s: {crf.n_iter_} iterations, "
      f"{crf.coef_.shape[1]} features")
y_pred = tagger.predict(X_test)
print(f"part-of-speech accuracy: {flat_accuracy_score(y_test, y_pred):.4f}\n")
print(flat_classification_report(y_test, y_pred, digits=3, zero_division=0))

# %%
# With 6,637 training words, about 88% of the test words get their tag; the
# rarer tags (``INTJ``, ``SYM``) are the hardest, and more data is what helps
# most. The strongest transitions are the grammar of English phrases: a
# determiner or an adjective before a noun, a pronoun before an auxiliary, no
# preposition right before a verb.
print(format_table(transition_features(crf, top=8)))

# %%
# Relations over the dependency tree
# ----------------------------------
# Tokens are now ``(form, UPOS, head)``: the part-of-speech tag is given, and
# :class:`~skcrf.TokenFeaturizer` reads the head column, adding features of
# each word's head (its form and tag, the side and length of the link).
X_train, y_train = load_ud_sample("train", columns=("form", "upos"), label="deprel",
                                  deprel_subtypes=False)
X_test, y_test = load_ud_sample("test", columns=("form", "upos"), label="deprel",
                                deprel_subtypes=False)
print(f"first tokens: {X_train[0][:3]}, relations {y_train[0][:3]}")
for name, model in [("chain", CRFClassifier(**limits)), ("tree", TreeCRF(**limits))]:
    pipe = make_pipeline(TokenFeaturizer(head_column=2), SequenceVectorizer(), model)
    started = time.perf_counter()
    pipe.fit(X_train, y_train)
    accuracy = flat_accuracy_score(y_test, pipe.predict(X_test))
    print(f"{name}: relation accuracy {accuracy:.4f} ({len(model.classes_)} relations, "
          f"trained in {time.perf_counter() - started:.1f} s)")

# %%
# The tree scores each relation together with its head's (``nsubj`` and
# ``obj`` hang from a verb, ``det`` from a noun), which a chain, linking each
# word to the previous one, cannot see: on this sample the tree gets about 2.5
# points more of the relations right.
#
# What the tagger learned
# -----------------------
# Which tag follows which? Rows are the current tag, columns the next one.
fig, ax = plt.subplots(figsize=(7, 6), layout="constrained")
plot_transition_weights(crf, ax=ax)

# %%
# The training objective, iteration by iteration: it falls fast, then flattens
# out until the solver stops.
fig, ax = plt.subplots(layout="constrained")
plot_loss_curve(crf, ax=ax)

# %%
# Which features speak most for a noun or a verb?
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
plot_top_features(crf, "NOUN", top=12, ax=left)
plot_top_features(crf, "VERB", top=12, ax=right)
plt.show()
