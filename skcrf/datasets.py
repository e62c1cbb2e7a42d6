"""Readers for CoNLL-style and CoNLL-U files, and loaders and fetchers for the benchmark corpora.

The corpora are not shipped with skcrf (the CoNLL licences allow research use
only). The ``fetch_*`` functions download the public files once into a data
home, verify their SHA-256 and read them; the ``load_*`` functions only read
the data home. The data home is the ``data_home`` argument, else the
``SKCRF_DATA`` environment variable, else ``~/skcrf_data``: never a folder
relative to the current directory. ``python -m skcrf.datasets conll2002``
(or ``conll2000``, ``ud``) downloads a corpus from the command line.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Literal, Optional, Union

from skcrf._conllu import load_conllu, read_conllu
from skcrf._fetch import corpus_file, data_home_path, fetch_file
from skcrf._typing import Corpus, LabelledCorpus, StrPath, Token

__all__ = ["fetch_conll2000", "fetch_conll2002", "fetch_ud", "get_data_home", "iter_conll",
           "load_conll", "load_conll2000", "load_conll2002", "load_conllu"]


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


def load_conll(path: StrPath, *, columns: Optional[Sequence[int]] = None,
               label_column: Optional[int] = -1, encoding: str = "utf-8",
               separator: Optional[str] = None) -> Corpus:
    r"""Read a CoNLL-style column file into token and label sequences.

    One token per line, its columns split on runs of spaces and tabs (or on
    ``separator``); blank lines end sequences; ``-DOCSTART-`` lines are skipped
    (and end the current sequence). Every token line must have the same number
    of columns. The whole file is held in memory, about 18 times its size:
    :func:`iter_conll` reads one sequence at a time.

    Parameters
    ----------
    path : str or path-like
        The file to read.
    columns : list of int, default=None
        Which columns make up a token, in order. None means every column except
        the label column. With one column, a token is a str; with several, a
        tuple of str (word, POS, ...).
    label_column : int or None, default=-1
        Column holding the label (negative counts from the end); None for
        unlabelled files.
    encoding : str, default="utf-8"
        Text encoding of the file. A UTF-8 file may start with a byte-order
        mark, which is skipped (Python's ``utf-8-sig``).
    separator : str, default=None
        Column separator; None splits on any run of spaces and tabs. Other
        whitespace, such as a no-break space (U+00A0), U+0085 or a form feed,
        is part of its column, as in ``1\u00a0000``.

    Returns
    -------
    X : list of list of str or tuple of str
        Token sequences.
    y : list of list of str or None
        Label sequences; None when ``label_column`` is None.

    Raises
    ------
    ValueError
        If a line has a different number of columns than the first token line,
        or ``columns`` / ``label_column`` name a column the file lacks; the
        message names the file and the line.

    See Also
    --------
    iter_conll : The same sequences, read lazily one at a time.

    Examples
    --------
    >>> import tempfile, os
    >>> from skcrf.datasets import load_conll
    >>> text = "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n"
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write(text)
    >>> X, y = load_conll(f.name)
    >>> X
    [[('EU', 'NNP'), ('rejects', 'VBZ')], [('Peter', 'NNP')]]
    >>> y
    [['B-ORG', 'O'], ['B-PER']]
    >>> load_conll(f.name, columns=[0], label_column=None)
    ([['EU', 'rejects'], ['Peter']], None)
    >>> os.remove(f.name)
    """
    X, y = [], []
    for tokens, labels in iter_conll(path, columns=columns, label_column=label_column,
                                     encoding=encoding, separator=separator):
        X.append(tokens)
        y.append(labels)
    return X, (y if label_column is not None else None)


def iter_conll(path: StrPath, *, columns: Optional[Sequence[int]] = None,
               label_column: Optional[int] = -1, encoding: str = "utf-8",
               separator: Optional[str] = None,
               ) -> Iterator[tuple[list[Token], Optional[list[str]]]]:
    r"""Read a CoNLL-style column file lazily, one sequence at a time.

    The file format and the parameters are those of :func:`load_conll`; only
    the current sequence is in memory, so files of any size can be streamed
    through a model in batches. The file is opened at the first ``next()`` and
    closed when the last sequence has been read (or the generator is closed);
    an error in the file is raised when the reading reaches its line.

    Parameters
    ----------
    path : str or path-like
        The file to read.
    columns : list of int, default=None
        Which columns make up a token, in order. None means every column except
        the label column.
    label_column : int or None, default=-1
        Column holding the label (negative counts from the end); None for
        unlabelled files.
    encoding : str, default="utf-8"
        Text encoding of the file; a UTF-8 byte-order mark is skipped.
    separator : str, default=None
        Column separator; None splits on any run of spaces and tabs.

    Yields
    ------
    tokens : list of str or tuple of str
        The tokens of one sequence.
    labels : list of str or None
        Its labels; None when ``label_column`` is None.

    Raises
    ------
    ValueError
        As :func:`load_conll`, naming the file and the line.

    Examples
    --------
    >>> import tempfile, os
    >>> from itertools import islice
    >>> from skcrf.datasets import iter_conll
    >>> text = "EU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n\nIt PRP O\n"
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write(text)
    >>> sequences = iter_conll(f.name, columns=[0])
    >>> next(sequences)
    (['EU', 'rejects'], ['B-ORG', 'O'])
    >>> [tokens for tokens, _ in sequences]
    [['Peter'], ['It']]
    >>> os.remove(f.name)
    """
    path = Path(path)
    tokens, labels = [], []
    reader = None
    with open(path, encoding=_reading_encoding(encoding)) as handle:
        for line_number, line in enumerate(handle, start=1):
            if separator is None:
                # str.split() is twice as fast as the regex, and right unless the
                # line holds other whitespace, which nearly no line does
                fields = _FIELD.findall(line) if _OTHER_SPACE.search(line) else line.split()
            else:
                fields = line.rstrip(_EOL).split(separator) if line.strip(" \t\r\n") else []
            # startswith, not fields[0]: with a separator such as a tab, the usual
            # space-separated "-DOCSTART- -X- O" line is a single field
            if not fields or line.startswith("-DOCSTART-"):
                if tokens:
                    yield tokens, (labels if label_column is not None else None)
                    tokens, labels = [], []
                continue
            if reader is None:
                reader = _ColumnReader(path, line_number, len(fields), columns, label_column)
            if len(fields) != reader.n_columns:
                raise ValueError(
                    f"{path}, line {line_number}: expected {reader.n_columns} columns as "
                    f"on line {reader.first_line}, found {len(fields)}: {line.rstrip(_EOL)!r}")
            tokens.append(reader.token(fields))
            if reader.label is not None:
                labels.append(fields[reader.label])
    if tokens:
        yield tokens, (labels if label_column is not None else None)


_EOL = "\r\n"

# Columns are separated by spaces and tabs only. str.split() would also split
# on no-break spaces, U+0085, form feeds and the other Unicode and control
# whitespace inside a word ("1\u00a0000"), and the line after it would then be
# blamed for having the wrong number of columns.
_FIELD = re.compile(r"[^ \t\r\n]+")
# the whitespace str.split() splits on (the same set as re's \s) but columns do not
_OTHER_SPACE = re.compile(r"[^\S \t\r\n]")


def _reading_encoding(encoding):
    """``encoding``, or ``utf-8-sig`` for UTF-8 so a leading byte-order mark is skipped.

    Without it the mark (U+FEFF) sticks to the first word, or turns a first
    ``-DOCSTART-`` line into a token line.
    """
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


class _ColumnReader:
    """Which fields of a line make the token and the label, checked once."""

    def __init__(self, path, line_number, n_columns, columns, label_column):
        self.n_columns = n_columns
        self.first_line = line_number

        def check(index, what):
            if not -n_columns <= index < n_columns:
                raise ValueError(
                    f"{path}, line {line_number}: {what} {index} does not exist; the "
                    f"line has {n_columns} columns.")
            return index % n_columns

        self.label = None if label_column is None else check(label_column, "label_column")
        if columns is None:
            token_columns = [c for c in range(n_columns) if c != self.label]
        else:
            token_columns = [check(c, "token column") for c in columns]
        if not token_columns:
            raise ValueError(
                f"{path}, line {line_number}: no token columns left: the line has "
                f"{n_columns} column(s) and column {self.label} is the label.")
        # itemgetter gives a str for one column and a tuple for several
        self.token = itemgetter(*token_columns)


_CONLL2000_FILES = {"train": "train.txt", "test": "test.txt"}
_CONLL2002_FILES = {"esp": {"train": "esp.train", "testa": "esp.testa", "testb": "esp.testb"}}
_UD_FILES = {"en_ewt": ("ud_english_ewt", "en_ewt-ud-{}.conllu", ("train", "dev", "test"))}
_UD_LABELS = {"upos": 3, "xpos": 4, "deprel": 7}  # CoNLL-U column indices


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

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Chunk labels such as ``B-NP``, ``I-VP`` and ``O``.

    Raises
    ------
    FileNotFoundError
        If the file is not in the data home; the message says how to get it.

    Examples
    --------
    >>> from skcrf.datasets import load_conll2000
    >>> X, y = load_conll2000("test")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('Rockwell', 'NNP'), ('International', 'NNP')], ['B-NP', 'I-NP'])
    """
    name = _choose(_CONLL2000_FILES, subset, "subset")
    return load_conll(corpus_file("conll2000", name, data_home))


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

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Entity labels: ``B-``/``I-`` with ``PER``, ``LOC``, ``ORG``, ``MISC``,
        and ``O``.

    Raises
    ------
    FileNotFoundError
        If the file is not in the data home; the message says how to get it.

    Examples
    --------
    >>> from skcrf.datasets import load_conll2002
    >>> X, y = load_conll2002("train")  # doctest: +SKIP
    >>> X[0][:3], y[0][:3]  # doctest: +SKIP
    ([('Melbourne', 'NP'), ('(', 'Fpa'), ('Australia', 'NP')], ['B-LOC', 'O', 'B-LOC'])
    """
    name = _choose(_CONLL2002_FILES["esp"], subset, "subset")
    return _read_conll2002(corpus_file("conll2002", name, data_home))


def fetch_conll2000(subset: Literal["train", "test"] = "train", *,
                    data_home: Optional[StrPath] = None, download_if_missing: bool = True,
                    base_url: Optional[str] = None) -> LabelledCorpus:
    """Load CoNLL-2000 chunking, downloading it into the data home on first use.

    The file of ``subset`` is downloaded from the CoNLL-2000 shared task's site
    (https://www.clips.uantwerpen.be/conll2000/chunking/, gzip-compressed),
    checked against its SHA-256 and stored as ``conll2000/train.txt`` or
    ``conll2000/test.txt`` under the data home; later calls read it from there
    without touching the network. The data (Wall Street Journal sections 15-18
    and 20, with chunk tags derived from the Penn Treebank) is distributed for
    research by the shared task's organizers.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the corpus to load.
    data_home : str or path-like, default=None
        Where the corpus is stored; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an :class:`OSError` instead of downloading a missing file.
    base_url : str, default=None
        A mirror holding the files uncompressed in the data-home layout
        (``<base_url>/conll2000/train.txt``); None means ``$SKCRF_DATA_URL``
        if set, else the public URL.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Chunk labels such as ``B-NP``, ``I-VP`` and ``O``.

    Raises
    ------
    OSError
        If the file is missing and ``download_if_missing`` is False or the
        download fails (a :class:`FileNotFoundError` saying how to get it), or
        the downloaded file has the wrong checksum (nothing is kept).

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
    name = _choose(_CONLL2000_FILES, subset, "subset")
    return load_conll(fetch_file("conll2000", name, data_home=data_home,
                                 download_if_missing=download_if_missing, base_url=base_url))


def fetch_conll2002(language: Literal["esp"] = "esp",
                    subset: Literal["train", "testa", "testb"] = "train", *,
                    data_home: Optional[StrPath] = None, download_if_missing: bool = True,
                    base_url: Optional[str] = None) -> LabelledCorpus:
    """Load CoNLL-2002 named entities, downloading them into the data home on first use.

    The file of ``subset`` is downloaded (the UTF-8 copy NLTK distributes, from
    https://github.com/teropa/nlp), checked against its SHA-256 and stored as
    ``conll2002/esp.train``, ``esp.testa`` or ``esp.testb`` under the data
    home; later calls read it from there without touching the network. The
    Spanish data (EFE news wire of May 2000, annotated by TALP-UPC and CLiC-UB)
    may only be used for research: see the shared task's README.

    Parameters
    ----------
    language : {"esp"}, default="esp"
        The corpus language: Spanish. (The Dutch part has a different layout
        and is not supported.)
    subset : {"train", "testa", "testb"}, default="train"
        ``testa`` is the development set, ``testb`` the test set.
    data_home : str or path-like, default=None
        Where the corpus is stored; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an :class:`OSError` instead of downloading a missing file.
    base_url : str, default=None
        A mirror holding the files in the data-home layout
        (``<base_url>/conll2002/esp.train``); None means ``$SKCRF_DATA_URL`` if
        set, else the public URL.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Entity labels: ``B-``/``I-`` with ``PER``, ``LOC``, ``ORG``, ``MISC``,
        and ``O``.

    Raises
    ------
    OSError
        If the file is missing and ``download_if_missing`` is False or the
        download fails (a :class:`FileNotFoundError` saying how to get it), or
        the downloaded file has the wrong checksum (nothing is kept).

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
    name = _choose(files, subset, "subset")
    return _read_conll2002(fetch_file("conll2002", name, data_home=data_home,
                                      download_if_missing=download_if_missing,
                                      base_url=base_url))


def fetch_ud(treebank: Literal["en_ewt"] = "en_ewt",
             subset: Literal["train", "dev", "test"] = "train", *,
             label: Literal["upos", "xpos", "deprel"] = "upos",
             columns: Optional[Sequence[Union[str, int]]] = None,
             deprel_subtypes: bool = True, data_home: Optional[StrPath] = None,
             download_if_missing: bool = True, base_url: Optional[str] = None,
             ) -> LabelledCorpus:
    """Load a Universal Dependencies treebank, downloading it on first use.

    The CoNLL-U file of ``subset`` is downloaded from the treebank's GitHub
    repository (for ``en_ewt``,
    https://github.com/UniversalDependencies/UD_English-EWT), checked against
    its SHA-256 and stored as ``ud_english_ewt/en_ewt-ud-train.conllu`` (etc.)
    under the data home; later calls read it from there without touching the
    network. UD English EWT is licensed under CC BY-SA 4.0 (Silveira et al.,
    2014, "A Gold Standard Dependency Corpus for English", and the UD
    contributors).

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
    data_home : str or path-like, default=None
        Where the treebank is stored; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an :class:`OSError` instead of downloading a missing file.
    base_url : str, default=None
        A mirror holding the files in the data-home layout
        (``<base_url>/ud_english_ewt/en_ewt-ud-train.conllu``); None means
        ``$SKCRF_DATA_URL`` if set, else the public URL.

    Returns
    -------
    X : list of list of str, or list of list of tuple
        Sentences of word forms; with ``columns``, of tuples ending in the head.
    y : list of list of str
        The ``label`` column of each word.

    Raises
    ------
    OSError
        If the file is missing and ``download_if_missing`` is False or the
        download fails (a :class:`FileNotFoundError` saying how to get it), or
        the downloaded file has the wrong checksum (nothing is kept).

    See Also
    --------
    load_conllu : Read any CoNLL-U file.

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
    corpus, pattern, subsets = _choose(_UD_FILES, treebank, "treebank")
    name = pattern.format(_choose(dict(zip(subsets, subsets)), subset, "subset"))
    _choose(_UD_LABELS, label, "label")
    path = fetch_file(corpus, name, data_home=data_home,
                      download_if_missing=download_if_missing, base_url=base_url)
    if columns is None:
        # the forms alone, as before trees were read: what taggers take
        return read_conllu(path, [1], _UD_LABELS[label], deprel_subtypes=deprel_subtypes,
                           heads=False)
    return load_conllu(path, label=label, columns=columns, deprel_subtypes=deprel_subtypes)


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
    "conll2000": [(fetch_conll2000, {"subset": s}) for s in _CONLL2000_FILES],
    "conll2002": [(fetch_conll2002, {"subset": s}) for s in _CONLL2002_FILES["esp"]],
    "ud": [(fetch_ud, {"subset": s}) for s in _UD_FILES["en_ewt"][2]],
}


def _main(argv=None):
    """``python -m skcrf.datasets CORPUS...``: download corpora into the data home."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m skcrf.datasets",
        description="Download benchmark corpora into the data home ($SKCRF_DATA, "
                    "else ~/skcrf_data), verifying their checksums.")
    parser.add_argument("corpora", nargs="+", choices=sorted(_CORPORA),
                        help="conll2000, conll2002 (Spanish), ud (UD English EWT)")
    parser.add_argument("--data-home", default=None, help="where to store them")
    args = parser.parse_args(argv)
    for corpus in args.corpora:
        for fetch, kwargs in _CORPORA[corpus]:
            try:
                X, _ = fetch(**kwargs, data_home=args.data_home)
            except OSError as exc:
                print(exc, file=sys.stderr)
                return 1
            print(f"{corpus} {kwargs['subset']}: {len(X)} sentences "
                  f"in {get_data_home(args.data_home) / corpus}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
