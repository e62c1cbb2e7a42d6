"""Small labelled corpora every estimator learns: tags, spans and trees.

Their labels follow from the tokens and their neighbours (or parents), so a
CRF fits them exactly in a few dozen iterations.
"""

import numpy as np
import pytest

# the tag of each word of the chain corpus
WORDS = {"the": "DET", "a": "DET", "big": "ADJ", "cat": "N", "dog": "N", "runs": "V",
         "sleeps": "V"}


def chain_corpus(n_sequences=40, seed=0, first=False):
    """Determiner, maybe an adjective, noun, verb; ``first`` adds a feature true on token 0."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words = ([rng.choice(["the", "a"])] + (["big"] if rng.random() < 0.3 else [])
                 + [rng.choice(["cat", "dog"]), rng.choice(["runs", "sleeps"])])
        X.append([{"w": w, **({"first": i == 0} if first else {}), "len": len(w) / 5}
                  for i, w in enumerate(words)])
        y.append([WORDS[w] for w in words])
    return X, y


def span_corpus(n_sequences=40, seed=0):
    """Names (PER spans of one or two tokens) among other words, in IOB2."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        tokens, tags = [], []
        for _ in range(rng.integers(2, 5)):
            if rng.random() < 0.4:
                name = ["Ada", "Lovelace"] if rng.random() < 0.5 else ["Turing"]
                tokens += name
                tags += ["B-PER"] + ["I-PER"] * (len(name) - 1)
            else:
                tokens.append(str(rng.choice(["wrote", "ran", "and", "then"])))
                tags.append("O")
        X.append([{"w": t, "title": t.istitle()} for t in tokens])
        y.append(tags)
    return X, y


def tree_corpus(n_sequences=40, seed=0):
    """Chains read as trees (each token's parent is the next one) with a root last."""
    X, y = chain_corpus(n_sequences, seed)
    X = [[dict(token, __parent__=i + 1 if i + 1 < len(seq) else -1)
          for i, token in enumerate(seq)] for seq in X]
    return X, y


def toy_fixtures(corpus, estimator, name="toy"):
    """A test module's ``toy`` corpus and the ``fitted`` estimator on it, each built once.

    Assign them at module level: ``toy, fitted = toy_fixtures(my_corpus, lambda:
    CRFClassifier(alpha=0.1))``; ``estimator`` makes the unfitted model, ``name``
    is the corpus fixture's name.
    """
    @pytest.fixture(scope="module", name=name)
    def toy():
        return corpus()

    @pytest.fixture(scope="module")
    def fitted(request):
        X, y = request.getfixturevalue(name)
        return estimator().fit(X, y)

    return toy, fitted
