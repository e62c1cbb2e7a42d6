"""Where each corpus file comes from, and what it must be once stored in the data home.

Every URL names an immutable release: a git commit (UD English EWT's ``r2.16``
tag, NLTK's data, the GitHub copy of CoNLL-2002) or the CoNLL-2000 shared
task's own page, unchanged since 2000. A file lists its sources in the order
they are tried: the official one first, then the others. Each stored file has a
recorded size and SHA-256 (of the file as stored, after decompression), and each
source the size and SHA-256 of what it serves where they are known: a download
stops past the size, and a file is installed only if both match.

How the records were checked: UD English EWT's three files are byte for byte
the blobs of the ``r2.16`` tag (commit ``4c89b583``; git's blob ids and the
SHA-256 below agree); NLTK's ``conll2000.zip`` and ``conll2002.zip`` (commit
``5f09e470`` of nltk/nltk_data, the sizes its index lists) hold exactly the
CoNLL files below, as does commit ``f89bc5a1`` of teropa/nlp. The gzip files of
the CoNLL-2000 page were not checked against these records here (no network):
their decompressed bytes must match the same SHA-256, and what they serve is
bounded by :func:`served_limit`.
"""

from dataclasses import dataclass
from typing import Optional

__all__ = ["REMOTE_FILES", "RemoteFile", "Source", "served_limit"]


@dataclass(frozen=True)
class Source:
    """One place a corpus file can be downloaded from.

    Attributes
    ----------
    url : str
        The address of what is served.
    archive : {"", "gzip", "zip"}
        How the file is packed: ``""`` served as it is, ``"gzip"`` compressed,
        ``"zip"`` a member of a zip archive.
    member : str
        With ``archive="zip"``, the file's path inside the archive.
    size : int or None
        Bytes served, when recorded; None bounds them by :func:`served_limit`.
    sha256 : str or None
        Hex SHA-256 of the bytes served, when recorded.
    """

    url: str
    archive: str = ""
    member: str = ""
    size: Optional[int] = None
    sha256: Optional[str] = None


@dataclass(frozen=True)
class RemoteFile:
    """A corpus file as stored in the data home, and the sources it comes from.

    Attributes
    ----------
    sha256 : str
        Hex SHA-256 of the stored file (after decompression).
    size : int
        Its size in bytes.
    sources : tuple of Source
        Where to download it from, in the order they are tried.
    latin1_size : int or None
        The size of the same text in Latin-1, the encoding of CoNLL-2002's
        original release, which the loaders read too; None for other files.
    """

    sha256: str
    size: int
    sources: tuple
    latin1_size: Optional[int] = None

    def accepts_size(self, size):
        """Whether a stored file of ``size`` bytes can be this file."""
        return size in (self.size, self.latin1_size)


# A gzip member is at most its data plus 5 bytes per 64 KiB stored block, a
# header and a trailer (with a file name): this bounds an unrecorded download.
_GZIP_SLACK = 1024


def served_limit(remote, source):
    """The most bytes ``source`` may serve for ``remote``: its recorded size, else a bound."""
    if source.size is not None:
        return source.size
    if source.archive == "gzip":
        return remote.size + remote.size // 1000 + _GZIP_SLACK
    return remote.size


_CLIPS_2000 = "https://www.clips.uantwerpen.be/conll2000/chunking/"
# nltk/nltk_data at the commit that added conll2000.zip and conll2002.zip
# (unchanged in the gh-pages branch since)
_NLTK = ("https://raw.githubusercontent.com/nltk/nltk_data/"
         "5f09e470fe339e1a119dd174ca284129a3c7a5bb/packages/corpora/")
_NLTK_CONLL2000 = dict(url=_NLTK + "conll2000.zip", archive="zip", size=756607,
                       sha256="01e65164f268366e7caa0db92332a1955d081908c87016e2c7640c3c5279b7cd")
_NLTK_CONLL2002 = dict(url=_NLTK + "conll2002.zip", archive="zip", size=1867449,
                       sha256="64440e49236d0d393e08e0b266284966d68e2d2a82a50cc41b8e96d98c03b5c8")
_TEROPA = ("https://raw.githubusercontent.com/teropa/nlp/"
           "f89bc5a15b516208de1cfe2abe9692b7ed9a43e2/resources/corpora/conll2002/")
# the commit of UD English EWT's r2.16 tag (May 2025)
_UD_EWT = ("https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/"
           "4c89b5833a70aa5ed3a00bad2f23f57992cc7df8/")


def _conll2000(name, size, sha256):
    return RemoteFile(sha256, size, (
        Source(_CLIPS_2000 + name + ".gz", archive="gzip"),
        Source(**_NLTK_CONLL2000, member=f"conll2000/{name}"),
    ))


def _conll2002(name, size, sha256, latin1_size):
    return RemoteFile(sha256, size, (
        Source(**_NLTK_CONLL2002, member=f"conll2002/{name}"),
        Source(_TEROPA + name, size=size, sha256=sha256),
    ), latin1_size=latin1_size)


def _ud_ewt(name, size, sha256):
    return RemoteFile(sha256, size, (Source(_UD_EWT + name, size=size, sha256=sha256),))


#: (corpus folder, file name) -> RemoteFile.
REMOTE_FILES = {
    ("conll2000", "train.txt"): _conll2000(
        "train.txt", 2842164, "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea"),
    ("conll2000", "test.txt"): _conll2000(
        "test.txt", 639396, "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628"),
    ("conll2002", "esp.train"): _conll2002(
        "esp.train", 2970825,
        "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008", 2943263),
    ("conll2002", "esp.testa"): _conll2002(
        "esp.testa", 594058,
        "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87", 588809),
    ("conll2002", "esp.testb"): _conll2002(
        "esp.testb", 575807,
        "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016", 570469),
    ("ud_english_ewt", "en_ewt-ud-train.conllu"): _ud_ewt(
        "en_ewt-ud-train.conllu", 14203025,
        "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b"),
    ("ud_english_ewt", "en_ewt-ud-dev.conllu"): _ud_ewt(
        "en_ewt-ud-dev.conllu", 1805545,
        "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6"),
    ("ud_english_ewt", "en_ewt-ud-test.conllu"): _ud_ewt(
        "en_ewt-ud-test.conllu", 1804515,
        "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd"),
}
