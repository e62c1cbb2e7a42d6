"""What the documentation build runs of the example scripts, and with which arguments.

The CoNLL scripts train on the full corpora; with their default settings that
takes minutes on two cores, too long for a documentation build. The build caps
their training at ``MAX_ITER`` iterations instead, through the scripts' own
``--max-iter`` option, so the scripts shown are exactly what a user runs; the
script on the embedded sample trains in full. A CoNLL script runs only when its
corpus is in the data home (the build never downloads): without it, its page
shows the script alone (sphinx-gallery's ``filename_pattern``).
"""

import re
from pathlib import Path

#: L-BFGS iterations of the CRFs trained while the documentation is built.
MAX_ITER = 50


#: Examples fast enough to train in full during the build.
IN_FULL = {"ud_sample.py", "numeric_sequences.py"}


def reset_argv(gallery_conf, script_vars):
    """The command-line arguments every example script gets during the build."""
    if Path(script_vars["src_file"]).name in IN_FULL:
        return []
    return ["--max-iter", str(MAX_ITER)]


#: script -> the corpus files it reads from the data home
NEEDS = {"conll2002_ner.py": [("conll2002", "esp.train"), ("conll2002", "esp.testb")],
         "active_learning.py": [("conll2002", "esp.train"), ("conll2002", "esp.testb")],
         "conll2002_word_vectors.py": [("conll2002", "esp.train"), ("conll2002", "esp.testa"),
                                       ("conll2002", "esp.testb")],
         "conll2000_chunking.py": [("conll2000", "train.txt"), ("conll2000", "test.txt")]}


def executed_pattern(examples):
    """sphinx-gallery's ``filename_pattern``: the scripts of ``examples`` whose data is there."""
    from skcrf.datasets._fetch import corpus_file

    runnable = []
    for script in sorted(Path(examples).glob("*.py")):
        try:
            for corpus, name in NEEDS.get(script.name, ()):
                corpus_file(corpus, name)  # there, with its recorded size
        except OSError:
            continue
        runnable.append(re.escape(script.name))
    return rf"[\\/]({'|'.join(runnable)})$"
