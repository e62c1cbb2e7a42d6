"""The benchmark corpora by name: where they live in the data home, loaders and fetchers."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Literal, Optional, Union

from .._utils.docstrings import fill_sections
from .._utils.type_aliases import LabelledCorpus, StrPath
from ._conll import load_conll
from ._conllu import load_conllu, read_conllu
from ._fetch import corpus_file, data_home_path, fetch_file

__all__ = ["fetch_conll2000", "fetch_conll2002", "fetch_ud", "get_data_home",
           "load_conll2000", "load_conll2002", "load_ud_sample"]


def get_data_home(data_home: Optional[StrPath] = None) -> Path:
    """The folder the corpora are read from and downloaded into.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Returned as given (with ``~`` expanded) when not None; otherwise
        ``$SKCRF_DATA``, otherwise ``~/skcrf_data`` in the user's home folder.

    Returns
    -------
    path : pathlib.Path
        The data home; it need not exist. It holds one folder per corpus:
        ``conll2000/``, ``conll2002/``, ``ud_english_ewt/``.

    Examples
    --------
    >>> from skcrf.datasets import get_data_home
    >>> print(get_data_home("/data/corpora").as_posix())
    /data/corpora
    """
    return data_home_path(data_home)


# corpus folder under the data home, and the file of each subset
_CONLL2000_FILES = ("conll2000", {"train": "train.txt", "test": "test.txt"})
_CONLL2002_FILES = {"esp": ("conll2002", {"train": "esp.train", "testa": "esp.testa",
                                          "testb": "esp.testb"})}
_UD_FILES = {"en_ewt": ("ud_english_ewt", {subset: f"en_ewt-ud-{subset}.conllu"
                                           for subset in ("train", "dev", "test")})}
_UD_LABELS = {"upos": 3, "xpos": 4, "deprel": 7}  # CoNLL-U column indices


# Sections the loaders' and fetchers' docstrings share, one copy each: a
# docstring line ``<<name>>`` stands for the section of that name.
_DOC_SECTIONS = {
    "download_parameters": """\
    data_home : str or path-like, default=None
        Where the corpus is stored; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an :class:`OSError` instead of downloading a missing file.
    base_url : str, default=None
        A mirror holding the files uncompressed in the data-home layout
        (``<base_url>/conll2002/esp.train``, ...); None means
        ``$SKCRF_DATA_URL`` if set, else the public sources, in order.
""",
    "conll2000_returns": """\
    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Chunk labels such as ``B-NP``, ``I-VP`` and ``O``.
""",
    "conll2002_returns": """\
    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Entity labels: ``B-``/``I-`` with ``PER``, ``LOC``, ``ORG``, ``MISC``,
        and ``O``.
""",
    "load_raises": """\
    Raises
    ------
    FileNotFoundError
        If the file is not in the data home; the message says how to get it.
    OSError
        If the file there does not have the recorded size (damaged, or another
        version).
""",
    "fetch_raises": """\
    Raises
    ------
    OSError
        If the file is missing and ``download_if_missing`` is False or no
        source can be reached (a :class:`FileNotFoundError` naming the URLs and
        where to put the file by hand), or every download fails its size or
        checksum (nothing is kept), or the file in the data home does not have
        the recorded size.
""",
}


_shared_docs = fill_sections(_DOC_SECTIONS)


@_shared_docs
def load_conll2000(subset: Literal["train", "test"] = "train", *,
                   data_home: Optional[StrPath] = None) -> LabelledCorpus:
    """CoNLL-2000 chunking: tokens are (word, POS) tuples, labels IOB2 chunks.

    Reads ``conll2000/train.txt`` or ``conll2000/test.txt`` under the data home,
    without downloading: :func:`fetch_conll2000` downloads them if missing.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the corpus to read.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    <<conll2000_returns>>

    <<load_raises>>

    Examples
    --------
    >>> from skcrf.datasets import load_conll2000
    >>> X, y = load_conll2000("test")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('Rockwell', 'NNP'), ('International', 'NNP')], ['B-NP', 'I-NP'])
    """
    return load_conll(_located(_CONLL2000_FILES, subset, data_home))


@_shared_docs
def load_conll2002(subset: Literal["train", "testa", "testb"] = "train", *,
                   data_home: Optional[StrPath] = None) -> LabelledCorpus:
    """CoNLL-2002 Spanish named entities: (word, POS) tuples, IOB2 labels.

    Reads ``conll2002/esp.train``, ``esp.testa`` or ``esp.testb`` under the data
    home, as UTF-8 or, failing that, as Latin-1 (the original release), without
    downloading: :func:`fetch_conll2002` downloads them if missing.

    Parameters
    ----------
    subset : {"train", "testa", "testb"}, default="train"
        ``testa`` is the development set, ``testb`` the test set.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    <<conll2002_returns>>

    <<load_raises>>

    Examples
    --------
    >>> from skcrf.datasets import load_conll2002
    >>> X, y = load_conll2002("train")  # doctest: +SKIP
    >>> X[0][:3], y[0][:3]  # doctest: +SKIP
    ([('Melbourne', 'NP'), ('(', 'Fpa'), ('Australia', 'NP')], ['B-LOC', 'O', 'B-LOC'])
    """
    return _read_conll2002(_located(_CONLL2002_FILES["esp"], subset, data_home))


@_shared_docs
def fetch_conll2000(subset: Literal["train", "test"] = "train", *,
                    data_home: Optional[StrPath] = None, download_if_missing: bool = True,
                    base_url: Optional[str] = None) -> LabelledCorpus:
    """Load CoNLL-2000 chunking, downloading it into the data home on first use.

    The file of ``subset`` is downloaded from the CoNLL-2000 shared task's site
    (https://www.clips.uantwerpen.be/conll2000/chunking/, gzip-compressed), or
    failing that from NLTK's data (``conll2000.zip`` at a fixed commit of
    https://github.com/nltk/nltk_data), checked against its recorded size and
    SHA-256 and stored as ``conll2000/train.txt`` or ``conll2000/test.txt``
    under the data home; later calls read it from there without touching the
    network. The data (Wall Street Journal sections 15-18
    and 20, with chunk tags derived from the Penn Treebank) is distributed for
    research by the shared task's organizers.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the corpus to load.
    <<download_parameters>>

    <<conll2000_returns>>

    <<fetch_raises>>

    See Also
    --------
    load_conll2000 : Read the corpus from the data home, never downloading.

    Examples
    --------
    >>> from skcrf.datasets import fetch_conll2000
    >>> X, y = fetch_conll2000("test")  # doctest: +SKIP
    >>> len(X), X[0][:2], y[0][:2]  # doctest: +SKIP
    (2012, [('Rockwell', 'NNP'), ('International', 'NNP')], ['B-NP', 'I-NP'])
    """
    return load_conll(_located(_CONLL2000_FILES, subset, data_home, fetch=dict(
        download_if_missing=download_if_missing, base_url=base_url)))


@_shared_docs
def fetch_conll2002(language: Literal["esp"] = "esp",
                    subset: Literal["train", "testa", "testb"] = "train", *,
                    data_home: Optional[StrPath] = None, download_if_missing: bool = True,
                    base_url: Optional[str] = None) -> LabelledCorpus:
    """Load CoNLL-2002 named entities, downloading them into the data home on first use.

    The file of ``subset`` is downloaded from NLTK's data (the UTF-8 copy in
    ``conll2002.zip``, at a fixed commit of https://github.com/nltk/nltk_data),
    or failing that from the same files at a fixed commit of
    https://github.com/teropa/nlp, checked against its recorded size and
    SHA-256 and stored as ``conll2002/esp.train``, ``esp.testa`` or
    ``esp.testb`` under the data home; later calls read it from there without
    touching the network. The
    Spanish data (EFE news wire of May 2000, annotated by TALP-UPC and CLiC-UB)
    may only be used for research: see the shared task's README.

    Parameters
    ----------
    language : {"esp"}, default="esp"
        The corpus language: Spanish. (The Dutch part has a different layout
        and is not supported.)
    subset : {"train", "testa", "testb"}, default="train"
        ``testa`` is the development set, ``testb`` the test set.
    <<download_parameters>>

    <<conll2002_returns>>

    <<fetch_raises>>

    See Also
    --------
    load_conll2002 : Read the corpus from the data home, never downloading.

    Examples
    --------
    >>> from skcrf.datasets import fetch_conll2002
    >>> X, y = fetch_conll2002("esp", "testb")  # doctest: +SKIP
    >>> len(X), y[0][:3]  # doctest: +SKIP
    (1517, ['B-LOC', 'O', 'B-LOC'])
    """
    files = _choose(_CONLL2002_FILES, language, "language")
    return _read_conll2002(_located(files, subset, data_home, fetch=dict(
        download_if_missing=download_if_missing, base_url=base_url)))


@_shared_docs
def fetch_ud(treebank: Literal["en_ewt"] = "en_ewt",
             subset: Literal["train", "dev", "test"] = "train", *,
             label: Literal["upos", "xpos", "deprel"] = "upos",
             columns: Optional[Sequence[Union[str, int]]] = None,
             deprel_subtypes: bool = True, data_home: Optional[StrPath] = None,
             download_if_missing: bool = True, base_url: Optional[str] = None,
             ) -> LabelledCorpus:
    """Load a Universal Dependencies treebank, downloading it on first use.

    The CoNLL-U file of ``subset`` is downloaded from the treebank's GitHub
    repository at its release r2.16 (for ``en_ewt``,
    https://github.com/UniversalDependencies/UD_English-EWT), checked against
    its recorded size and SHA-256 and stored as
    ``ud_english_ewt/en_ewt-ud-train.conllu`` (etc.) under the data home; later
    calls read it from there without touching the network. UD English EWT is
    licensed under CC BY-SA 4.0 (Silveira et al., 2014, "A Gold Standard
    Dependency Corpus for English", and the UD contributors).

    The file is read by :func:`load_conllu`: comment lines, multiword-token
    ranges (``1-2``) and empty nodes (``1.1``) are skipped, so each sentence is
    its syntactic words, and every sentence's heads are checked to form a tree.

    Parameters
    ----------
    treebank : {"en_ewt"}, default="en_ewt"
        The treebank: English Web Treebank.
    subset : {"train", "dev", "test"}, default="train"
        Which part of the treebank to load.
    label : {"upos", "xpos", "deprel"}, default="upos"
        The column returned as labels: universal part-of-speech tags (17),
        Penn Treebank tags, or each word's dependency relation to its head.
    columns : sequence of str or int, default=None
        None gives each word as its form, a str. Otherwise the CoNLL-U columns
        making up a token, as in :func:`load_conllu`, and each token is then a
        tuple of them followed by the 0-based index of the word's head (-1 for
        a root): ``columns=("form",)`` gives ``("The", 1)``.
    deprel_subtypes : bool, default=True
        If False, dependency relations keep only the part before ``:``
        (``nmod:poss`` becomes ``nmod``).
    <<download_parameters>>

    Returns
    -------
    X : list of list of str, or list of list of tuple
        Sentences of word forms; with ``columns``, of tuples ending in the head.
    y : list of list of str
        The ``label`` column of each word.

    <<fetch_raises>>

    See Also
    --------
    load_conllu : Read any CoNLL-U file.
    load_ud_sample : A sample of the same treebank, shipped with skcrf.

    Examples
    --------
    >>> from skcrf.datasets import fetch_ud
    >>> X, y = fetch_ud("en_ewt", "dev")  # doctest: +SKIP
    >>> len(X), X[0][:4], y[0][:4]  # doctest: +SKIP
    (2001, ['From', 'the', 'AP', 'comes'], ['ADP', 'DET', 'PROPN', 'VERB'])
    >>> X, y = fetch_ud("en_ewt", "dev", columns=("form", "upos"), label="deprel",
    ...                 deprel_subtypes=False)  # doctest: +SKIP
    >>> X[0][:4], y[0][:4]  # doctest: +SKIP
    ([('From', 'ADP', 2), ('the', 'DET', 2), ('AP', 'PROPN', 3), ('comes', 'VERB', -1)],
     ['case', 'det', 'obl', 'root'])
    """
    files = _choose(_UD_FILES, treebank, "treebank")
    _choose(_UD_LABELS, label, "label")
    path = _located(files, subset, data_home, fetch=dict(
        download_if_missing=download_if_missing, base_url=base_url))
    return _read_ud(path, label, columns, deprel_subtypes)


def load_ud_sample(subset: Literal["train", "test"] = "train", *,
                   label: Literal["upos", "xpos", "deprel"] = "upos",
                   columns: Optional[Sequence[Union[str, int]]] = None,
                   deprel_subtypes: bool = True) -> LabelledCorpus:
    """A small sample of UD English EWT that ships with skcrf: no download, no data home.

    Every 30th sentence of UD English EWT r2.16's training and test files:
    419 training sentences (6,637 words) and 70 test sentences (803 words) of
    weblogs, newsgroups, emails, reviews and Yahoo! answers, each with its
    words' forms, lemmas, universal and Penn part-of-speech tags, heads and
    dependency relations. Enough to try every model of skcrf offline (tagging
    with :class:`~skcrf.CRFClassifier`, relations over the trees with
    :class:`~skcrf.TreeCRF`) in seconds; :func:`fetch_ud` gets the whole
    treebank, 30 times larger.

    The sample is licensed, as the treebank, under CC BY-SA 4.0 (Silveira et
    al., 2014, "A Gold Standard Dependency Corpus for English", and the UD
    English EWT contributors): the licence and the credits are in the
    package's ``skcrf/datasets/data/ud_english_ewt_sample/`` folder, with what
    was changed (only the FEATS, DEPS and MISC columns are emptied).

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the sample to load.
    label : {"upos", "xpos", "deprel"}, default="upos"
        The column returned as labels, as in :func:`fetch_ud`.
    columns : sequence of str or int, default=None
        None gives each word as its form, a str; otherwise the CoNLL-U columns
        making up a token, each token then a tuple of them followed by the
        0-based index of the word's head (-1 for a root), as in :func:`fetch_ud`.
    deprel_subtypes : bool, default=True
        If False, dependency relations keep only the part before ``:``.

    Returns
    -------
    X : list of list of str, or list of list of tuple
        Sentences of word forms; with ``columns``, of tuples ending in the head.
    y : list of list of str
        The ``label`` column of each word.

    See Also
    --------
    fetch_ud : The whole treebank, downloaded into the data home.

    Examples
    --------
    >>> from skcrf.datasets import load_ud_sample
    >>> X, y = load_ud_sample("test")
    >>> len(X), X[1][:4], y[1][:4]
    (70, ['The', 'President', 'has', 'also'], ['DET', 'PROPN', 'AUX', 'ADV'])
    >>> X, y = load_ud_sample(columns=("form", "upos"), label="deprel",
    ...                       deprel_subtypes=False)
    >>> X[0][:3], y[0][:3]
    ([('Al', 'PROPN', -1), ('-', 'PUNCT', 2), ('Zaman', 'PROPN', 0)], ['root', 'punct', 'flat'])
    """
    name = _choose(_UD_SAMPLE_FILES, subset, "subset")
    _choose(_UD_LABELS, label, "label")
    with resources.as_file(resources.files(__package__) / _UD_SAMPLE / name) as path:
        return _read_ud(path, label, columns, deprel_subtypes)


_UD_SAMPLE = "data/ud_english_ewt_sample"
_UD_SAMPLE_FILES = {subset: f"en_ewt-ud-sample-{subset}.conllu" for subset in ("train", "test")}


def _read_ud(path, label, columns, deprel_subtypes):
    """The sentences of a UD file: forms alone if ``columns`` is None, else tokens with heads."""
    if columns is None:
        # the forms alone, as before trees were read: what taggers take
        return read_conllu(path, [1], _UD_LABELS[label], deprel_subtypes=deprel_subtypes,
                           heads=False)
    return load_conllu(path, label=label, columns=columns, deprel_subtypes=deprel_subtypes)


def _located(files, subset, data_home, fetch=None):
    """The path of a corpus file in the data home: read as it is, or fetched if ``fetch``.

    ``files`` is the corpus folder and its files by subset; ``fetch`` holds
    :func:`fetch_file`'s download options.
    """
    corpus, names = files
    name = _choose(names, subset, "subset")
    if fetch is None:
        return corpus_file(corpus, name, data_home)
    return fetch_file(corpus, name, data_home=data_home, **fetch)


def _choose(options, key, what):
    if key not in options:
        raise ValueError(f"{what} must be one of {sorted(options)}; got {key!r}.")
    return options[key]


def _read_conll2002(path):
    # the Spanish files are Latin-1 in the original release, UTF-8 in NLTK's copy
    try:
        return load_conll(path, encoding="utf-8")
    except UnicodeDecodeError:
        return load_conll(path, encoding="latin-1")


_CORPORA = {
    "conll2000": [(fetch_conll2000, {"subset": s}) for s in _CONLL2000_FILES[1]],
    "conll2002": [(fetch_conll2002, {"subset": s}) for s in _CONLL2002_FILES["esp"][1]],
    "ud": [(fetch_ud, {"subset": s}) for s in _UD_FILES["en_ewt"][1]],
}
