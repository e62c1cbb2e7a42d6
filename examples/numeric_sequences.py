"""
Numeric sequences: a CRF, a per-token classifier and a Gaussian HMM
===================================================================

Sensor streams, activity logs and speech frames are sequences of numbers
whose labels come in runs. This example makes such data with
:func:`~skcrf.datasets.make_sequence_classification` (hidden states that
stay put with probability 0.9, Gaussian emissions that overlap) and labels it
three ways:

- a per-token :class:`~sklearn.linear_model.LogisticRegression`, which sees
  one token at a time;
- a :class:`~skcrf.CRFClassifier` after a
  :class:`~sklearn.preprocessing.StandardScaler` applied to every token by
  :class:`~skcrf.features.PerTokenTransformer`: the list of arrays goes in as
  it is, one 2-D array per sequence;
- hmmlearn's :class:`~hmmlearn.hmm.GaussianHMM`, supervised by counting
  (start, transition and emission statistics of the labelled training
  sequences, then Viterbi), when hmmlearn is installed
  (``pip install hmmlearn``).

The HMM is the kind of model that generated the data, so it is the ceiling
one expects here. The emissions have the same spherical noise in every
state, so a linear score per token is all a state needs, and the CRF, with
learned transitions, comes as close (0.906 against the HMM's 0.905 token
accuracy in a full run); the per-token classifier cannot use the neighbours
and stays at 0.725.

Run it from any folder (``--max-iter N`` caps the CRF's training)::

    python numeric_sequences.py
"""

# %%
# The data
# --------
import argparse
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skcrf import CRFClassifier
from skcrf.datasets import make_sequence_classification
from skcrf.features import PerTokenTransformer
from skcrf.metrics import flat_accuracy_score

parser = argparse.ArgumentParser(description="A CRF, a per-token classifier and an HMM "
                                             "on synthetic numeric sequences.")
parser.add_argument("--max-iter", type=int, default=None,
                    help="most L-BFGS iterations of the CRF (default: CRFClassifier's)")
args = parser.parse_args()

# One call, then a split: the states' means come from the seed too.
X, y = make_sequence_classification(600, n_features=2, n_classes=3, length_range=(20, 60),
                                    stickiness=0.9, class_sep=1.0, noise=1.0,
                                    random_state=0)
X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
print(f"{len(X_train)} training sequences ({sum(map(len, X_train))} tokens), "
      f"{len(X_test)} test sequences; 3 states, 2 numbers per token")

# %%
# Three models
# ------------
results = {}

started = time.perf_counter()
per_token = LogisticRegression().fit(np.vstack(X_train), np.concatenate(y_train))
seconds = time.perf_counter() - started
stacked_predictions = per_token.predict(np.vstack(X_test))
bounds = np.cumsum([len(x) for x in X_test])[:-1]
results["LogisticRegression (per token)"] = (np.split(stacked_predictions, bounds), seconds)

crf = make_pipeline(PerTokenTransformer(StandardScaler()), CRFClassifier())
if args.max_iter is not None:
    crf.set_params(crfclassifier__max_iter=args.max_iter)
started = time.perf_counter()
crf.fit(X_train, y_train)
seconds = time.perf_counter() - started
results["CRFClassifier"] = (crf.predict(X_test), seconds)


def supervised_gaussian_hmm(X, y, n_states):
    """A GaussianHMM whose parameters are counted from labelled sequences, not EM."""
    from hmmlearn.hmm import GaussianHMM

    tokens, labels = np.vstack(X), np.concatenate(y)
    start = np.bincount([labels_q[0] for labels_q in y if len(labels_q)],
                        minlength=n_states) + 1.0
    moves = np.ones((n_states, n_states))  # add-one smoothing
    for labels_q in y:
        np.add.at(moves, (labels_q[:-1], labels_q[1:]), 1.0)
    hmm = GaussianHMM(n_components=n_states, covariance_type="full", init_params="",
                      params="")
    hmm.n_features = tokens.shape[1]
    hmm.startprob_ = start / start.sum()
    hmm.transmat_ = moves / moves.sum(axis=1, keepdims=True)
    hmm.means_ = np.array([tokens[labels == s].mean(axis=0) for s in range(n_states)])
    hmm.covars_ = np.array([np.cov(tokens[labels == s].T) + 1e-6 * np.eye(tokens.shape[1])
                            for s in range(n_states)])
    return hmm


try:
    started = time.perf_counter()
    hmm = supervised_gaussian_hmm(X_train, y_train, 3)
    seconds = time.perf_counter() - started
    lengths = [len(x) for x in X_test]
    hmm_predictions = np.split(hmm.predict(np.vstack(X_test), lengths), bounds)
    results["GaussianHMM (hmmlearn, counted)"] = (hmm_predictions, seconds)
except ImportError:
    print("hmmlearn is not installed (pip install hmmlearn): no HMM in the table")

# %%
# Token accuracy on the test sequences
# ------------------------------------
for name, (predictions, seconds) in results.items():
    print(f"{name:32s} accuracy {flat_accuracy_score(y_test, predictions):.3f}   "
          f"trained in {seconds:.2f} s")

# %%
# One test sequence: the two numbers of each token, the true states and what
# each model says. The per-token classifier flickers where the emissions
# overlap; the CRF and the HMM keep the runs.
q = 0
fig, axes = plt.subplots(2 + len(results), 1, figsize=(9, 1.4 * (2 + len(results))),
                         sharex=True, layout="constrained")
axes[0].plot(X_test[q])
axes[0].set_ylabel("features")
axes[1].step(range(len(y_test[q])), y_test[q], where="mid", color="black")
axes[1].set_ylabel("true")
for ax, (name, (predictions, _)) in zip(axes[2:], results.items()):
    ax.step(range(len(predictions[q])), predictions[q], where="mid")
    ax.set_ylabel(name.split(" ")[0][:10])
axes[-1].set_xlabel("token")
plt.show()
