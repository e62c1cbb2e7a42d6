"""Readers for CoNLL-style and CoNLL-U files, and loaders and fetchers for the benchmark corpora.

One small corpus ships with skcrf: :func:`load_ud_sample`, a sample of UD
English EWT (CC BY-SA 4.0), for trying everything offline. The benchmark
corpora are not shipped (the CoNLL licences allow research use only). The
``fetch_*`` functions download the public files once into a data
home, verify their SHA-256 and read them; the ``load_*`` functions only read
the data home. The data home is the ``data_home`` argument, else the
``SKCRF_DATA`` environment variable, else ``~/skcrf_data``: never a folder
relative to the current directory. ``python -m skcrf.datasets conll2002``
(or ``conll2000``, ``ud``) downloads a corpus from the command line.
"""

# The package's modules, each with one job: _conll.py reads column files,
# _conllu.py CoNLL-U treebanks, _fetch.py downloads into the data home, and
# _corpora.py names the corpora on top of them; __main__.py is the command.
from ._conll import iter_conll, load_conll
from ._conllu import load_conllu
from ._generators import make_sequence_classification
from ._corpora import (
    fetch_conll2000,
    fetch_conll2002,
    fetch_ud,
    get_data_home,
    load_conll2000,
    load_conll2002,
    load_ud_sample,
)

__all__ = ["fetch_conll2000", "fetch_conll2002", "fetch_ud", "get_data_home", "iter_conll",
           "load_conll", "load_conll2000", "load_conll2002", "load_conllu", "load_ud_sample",
           "make_sequence_classification"]
