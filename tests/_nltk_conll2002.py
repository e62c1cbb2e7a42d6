"""A stand-in for ``nltk``'s CoNLL-2002 reader, so sklearn-crfsuite's tutorial runs as written.

The tutorial reads its data with ``nltk.corpus.conll2002.iob_sents('esp.train')``:
sentences of ``(word, POS, tag)`` triples. This module's ``nltk`` answers the
same calls from skcrf's data (``tests/_corpora.py``: CoNLL-2002 Spanish if the
data home has it, else the embedded sample's names), cut to a size that keeps
the tutorial's randomized search (150 fits) short in a test.
"""

from types import SimpleNamespace

from tests._corpora import tagged_sentences

#: sentences the stand-in serves of the training file, and of each test file
SIZES = {"esp.train": 120, "esp.testa": 50, "esp.testb": 50}


def _iob_sents(fileid):
    X_train, y_train, X_test, y_test, _ = tagged_sentences(SIZES["esp.train"], SIZES[fileid])
    X, y = (X_train, y_train) if fileid == "esp.train" else (X_test, y_test)
    return [[(word, pos, tag) for (word, pos), tag in zip(tokens, tags)]
            for tokens, tags in zip(X, y)]


nltk = SimpleNamespace(corpus=SimpleNamespace(conll2002=SimpleNamespace(
    fileids=lambda: sorted(SIZES), iob_sents=_iob_sents)))
