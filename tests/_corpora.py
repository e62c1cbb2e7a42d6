"""Small synthetic CoNLL corpora in the data-home layout, for running the examples fast.

The example scripts read ``conll2002/esp.train``, ``conll2002/esp.testb``,
``conll2000/train.txt`` and ``conll2000/test.txt`` under ``$SKCRF_DATA``;
``write_example_corpora`` writes tiny, learnable stand-ins for them, holding
every label the scripts name (``B-PER``, ``B-LOC``, ``B-NP``, ``B-VP``).
"""

import numpy as np

NAMES = ["Pedro", "Ana", "Luis", "Marta"]
CITIES = ["Madrid", "Lima", "Quito"]
VERBS = ["vive", "trabaja", "llega"]


def ner_sentences(rng, n):
    """(word, POS, label) rows of CoNLL-2002: a person, a verb, 'en', a city."""
    return [[(rng.choice(NAMES), "NP", "B-PER"), (rng.choice(VERBS), "VMI", "O"),
             ("en", "SP", "O"), (rng.choice(CITIES), "NP", "B-LOC"), (".", "Fp", "O")]
            for _ in range(n)]


def chunk_sentences(rng, n):
    """(word, POS, chunk) rows of CoNLL-2000: a noun phrase, a verb phrase, a noun phrase."""
    return [[("The", "DT", "B-NP"), (rng.choice(["cat", "dog"]), "NN", "I-NP"),
             (rng.choice(["saw", "ate"]), "VBD", "B-VP"), ("a", "DT", "B-NP"),
             (rng.choice(["bird", "fish"]), "NN", "I-NP"), (".", ".", "O")]
            for _ in range(n)]


#: (training file, test file, sentence maker) of each corpus the examples read
EXAMPLE_CORPORA = {
    "conll2002": ("conll2002/esp.train", "conll2002/esp.testb", ner_sentences),
    "conll2000": ("conll2000/train.txt", "conll2000/test.txt", chunk_sentences),
}


def write_sentences(path, sentences):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("".join(" ".join(row) + "\n" for row in sentence) + "\n"
                            for sentence in sentences), encoding="utf-8")


def write_example_corpora(home, corpora=tuple(EXAMPLE_CORPORA), n_train=40, n_test=10):
    """Write the synthetic corpora under ``home``; return ``home``."""
    rng = np.random.default_rng(0)
    for corpus in corpora:
        train, test, make = EXAMPLE_CORPORA[corpus]
        write_sentences(home / train, make(rng, n_train))
        write_sentences(home / test, make(rng, n_test))
    return home
