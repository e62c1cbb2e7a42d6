"""The corpus fetchers against a local HTTP server on 127.0.0.1: no internet needed."""

import gzip
import hashlib
import http.server
import os
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from skcrf.datasets import (
    fetch_conll2000,
    fetch_conll2002,
    fetch_ud,
    get_data_home,
    load_conll2000,
    load_conll2002,
)
from skcrf.datasets import _fetch
from skcrf.datasets.__main__ import main as _main
from skcrf.datasets._fetch import REMOTE_FILES, CorpusNotFoundError, RemoteFile, partial_path
from tests.conftest import data_home as shared_data_home

REPO = Path(__file__).resolve().parents[1]

CONLL2000 = "He PRP B-NP\nran VBD B-VP\n\nIt PRP B-NP\n"
CONLL2002 = "España NP B-LOC\nvence VMI O\n"
CONLLU = ("# sent_id = 1\n1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_\n"
          "1\tde\tde\tADP\tIN\t_\t2\tcase\t_\t_\n2\tel\tel\tDET\tDT\t_\t0\troot\t_\t_\n"
          "2.1\tx\tx\tX\tX\t_\t_\t_\t_\t_\n\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class Requests(list):
    """The paths requested, in order; ``ranges`` holds each request's Range header or None."""

    def __init__(self):
        super().__init__()
        self.ranges = []


def _handler(root, requests, ranges, cuts):
    """A GET-only handler serving ``root``, with ``bytes=a-`` ranges if ``ranges``.

    Each response takes the next item of ``cuts`` (None once they run out): an
    int sends that many bytes of the body, after a Content-Length announcing
    all of it, then closes the connection, as a dropped download does.
    """

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

        def do_GET(self):
            header = self.headers.get("Range")
            requests.append(self.path)
            requests.ranges.append(header)
            file = root / self.path.lstrip("/")
            if not file.is_file():
                self.send_error(404, "File not found")
                return
            data = file.read_bytes()
            start = 0
            if ranges and header:
                start = int(re.fullmatch(r"bytes=(\d+)-", header).group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            cut = cuts.pop(0) if cuts else None
            self.wfile.write(body if cut is None else body[:cut])
            self.close_connection = True

    return Handler


@pytest.fixture
def serve():
    """serve(folder, ranges=True, cuts=()) -> (base URL, Requests); stopped at teardown."""
    servers = []

    def start(root, *, ranges=True, cuts=()):
        requests = Requests()
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), _handler(Path(root), requests, ranges, list(cuts)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", requests

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_proxy_no_env(monkeypatch):
    """Reach 127.0.0.1 directly, and ignore the caller's data home and mirror."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.delenv("SKCRF_DATA", raising=False)
    monkeypatch.delenv("SKCRF_DATA_URL", raising=False)


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A small mirror in the data-home layout; the table's checksums made to match it."""
    root = tmp_path / "mirror"
    files = {("conll2000", "test.txt"): CONLL2000.encode(),
             ("conll2002", "esp.testa"): CONLL2002.encode(),
             ("ud_english_ewt", "en_ewt-ud-dev.conllu"): CONLLU.encode()}
    for (corpus, name), data in files.items():
        (root / corpus).mkdir(parents=True, exist_ok=True)
        (root / corpus / name).write_bytes(data)
        remote = REMOTE_FILES[corpus, name]
        monkeypatch.setitem(REMOTE_FILES, (corpus, name),
                            RemoteFile(remote.url, sha256(data), remote.gzip))
    return root


@pytest.fixture
def offline(monkeypatch):
    """Fail the test if anything opens a URL."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access: {args}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_get_data_home_is_never_relative_to_the_working_directory(monkeypatch, tmp_path):
    assert get_data_home() == Path.home() / "skcrf_data"
    assert get_data_home().is_absolute()
    monkeypatch.setenv("SKCRF_DATA", str(tmp_path))
    assert get_data_home() == tmp_path
    assert get_data_home("~/elsewhere") == Path.home() / "elsewhere"


def test_download_then_reuse_without_a_second_request(serve, mirror, tmp_path, monkeypatch):
    url, requests = serve(mirror)
    home = tmp_path / "home"
    expected = ([[("He", "PRP"), ("ran", "VBD")], [("It", "PRP")]], [["B-NP", "B-VP"], ["B-NP"]])
    assert fetch_conll2000("test", data_home=home, base_url=url) == expected
    assert requests == ["/conll2000/test.txt"]
    assert listing(home) == ["conll2000", "conll2000/test.txt"]  # no temporary file left
    assert (home / "conll2000" / "test.txt").read_text() == CONLL2000
    # reused: no request, not even with the mirror gone; the loader reads it too
    assert fetch_conll2000("test", data_home=home, base_url=url) == expected
    assert fetch_conll2000("test", data_home=home, download_if_missing=False) == expected
    assert load_conll2000("test", data_home=home) == expected
    assert requests == ["/conll2000/test.txt"]


def test_mirror_and_data_home_from_the_environment(serve, mirror, tmp_path, monkeypatch):
    url, requests = serve(mirror)
    monkeypatch.setenv("SKCRF_DATA_URL", url + "/")
    monkeypatch.setenv("SKCRF_DATA", str(tmp_path / "env-home"))
    monkeypatch.chdir(tmp_path)
    assert fetch_conll2002("esp", "testa") == ([[("España", "NP"), ("vence", "VMI")]],
                                               [["B-LOC", "O"]])
    assert fetch_ud("en_ewt", "dev") == ([["de", "el"], ["Hi"]], [["ADP", "DET"], ["INTJ"]])
    assert fetch_ud(subset="dev", label="deprel")[1] == [["case", "root"], ["root"]]
    assert requests == ["/conll2002/esp.testa", "/ud_english_ewt/en_ewt-ud-dev.conllu"]
    assert (tmp_path / "env-home" / "conll2002" / "esp.testa").is_file()


def test_gzip_file_at_its_public_url_is_stored_decompressed(serve, tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    (root / "test.txt.gz").write_bytes(gzip.compress(CONLL2000.encode()))
    url, requests = serve(root)
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), RemoteFile(
        f"{url}/test.txt.gz", sha256(CONLL2000.encode()), gzip=True))
    X, _ = fetch_conll2000("test", data_home=tmp_path / "home")
    assert len(X) == 2 and requests == ["/test.txt.gz"]
    assert (tmp_path / "home" / "conll2000" / "test.txt").read_text() == CONLL2000


def test_checksum_mismatch_names_the_url_and_both_checksums_and_keeps_nothing(
        serve, mirror, tmp_path, monkeypatch):
    (mirror / "conll2000" / "test.txt").write_text(CONLL2000 + "tampered X O\n")
    url, _ = serve(mirror)
    home = tmp_path / "home"
    expected = REMOTE_FILES["conll2000", "test.txt"].sha256
    got = sha256((mirror / "conll2000" / "test.txt").read_bytes())
    with pytest.raises(OSError) as info:
        fetch_conll2000("test", data_home=home, base_url=url)
    message = str(info.value)
    assert f"{url}/conll2000/test.txt" in message
    assert expected in message and got in message
    assert not isinstance(info.value, FileNotFoundError)  # not mistaken for missing data
    assert not home.exists()  # neither the file, its temporary copy nor the folders
    # a data home that existed before is kept, empty
    home.mkdir()
    with pytest.raises(OSError, match="SHA-256"):
        fetch_conll2000("test", data_home=home, base_url=url)
    assert listing(home) == []


# a file long enough to be cut in the middle: 120 sentences of CoNLL-2000
LONG = "".join(f"He PRP B-NP\nran{i} VBD B-VP\n\n" for i in range(120))


@pytest.fixture
def long_mirror(mirror, monkeypatch):
    """The mirror with conll2000/test.txt made long; its checksum in the table."""
    (mirror / "conll2000" / "test.txt").write_text(LONG)
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), RemoteFile(
        "https://example.invalid/test.txt.gz", sha256(LONG.encode())))
    return mirror


def test_interrupted_download_keeps_its_bytes_and_the_next_call_resumes(
        serve, long_mirror, tmp_path):
    cut = len(LONG) // 3
    url, requests = serve(long_mirror, cuts=[cut])
    home = tmp_path / "home"
    part = partial_path(home / "conll2000" / "test.txt")
    with pytest.raises(FileNotFoundError) as info:
        fetch_conll2000("test", data_home=home, base_url=url)
    message = str(info.value)
    assert f"stopped after {cut} of {len(LONG)} bytes" in message and str(part) in message
    assert "resumes" in message and "\n" not in message
    assert listing(home) == ["conll2000", f"conll2000/{part.name}"]
    assert part.read_bytes() == LONG.encode()[:cut]

    X, y = fetch_conll2000("test", data_home=home, base_url=url)
    assert len(X) == 120 and y[0] == ["B-NP", "B-VP"]
    assert requests.ranges == [None, f"bytes={cut}-"]  # only the rest was asked for
    assert (home / "conll2000" / "test.txt").read_text() == LONG
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_a_server_without_range_support_sends_it_all_and_the_file_starts_over(
        serve, long_mirror, tmp_path):
    cut = len(LONG) // 2
    url, requests = serve(long_mirror, ranges=False, cuts=[cut])
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError, match="resumes"):
        fetch_conll2000("test", data_home=home, base_url=url)
    X, _ = fetch_conll2000("test", data_home=home, base_url=url)
    assert len(X) == 120
    # asked for the rest, got a 200 with the whole file: not appended to the kept half
    assert requests.ranges == [None, f"bytes={cut}-"]
    assert (home / "conll2000" / "test.txt").read_text() == LONG
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_a_corrupt_partial_file_is_discarded_and_the_file_fetched_anew(
        serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"garbage " * 20)  # not the first bytes of the file
    X, _ = fetch_conll2000("test", data_home=home, base_url=url)
    assert len(X) == 120
    assert requests.ranges == ["bytes=160-", None]  # resumed, failed the checksum, anew
    assert (home / "conll2000" / "test.txt").read_text() == LONG
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_a_partial_file_that_is_already_whole_is_verified_not_fetched_again(
        serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    part.write_text(LONG)  # cut after the last byte arrived
    assert len(fetch_conll2000("test", data_home=home, base_url=url)[0]) == 120
    assert requests.ranges == [f"bytes={len(LONG)}-"]  # answered 416: nothing after it
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_still_wrong_after_discarding_a_partial_file_says_so_and_keeps_nothing(
        serve, long_mirror, tmp_path):
    (long_mirror / "conll2000" / "test.txt").write_text(LONG + "tampered X O\n")
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    part.write_bytes(LONG.encode()[:100])
    with pytest.raises(OSError) as info:
        fetch_conll2000("test", data_home=home, base_url=url)
    message = str(info.value)
    assert not isinstance(info.value, FileNotFoundError)
    assert "also when downloaded anew after discarding a partial download" in message
    assert REMOTE_FILES["conll2000", "test.txt"].sha256 in message
    assert sha256((long_mirror / "conll2000" / "test.txt").read_bytes()) in message
    assert requests.ranges == ["bytes=100-", None]
    assert listing(home) == ["conll2000"]  # the folder was there before; no file is


def test_an_interrupted_gzip_download_resumes_on_the_compressed_bytes(serve, tmp_path,
                                                                      monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    compressed = gzip.compress(LONG.encode())
    (root / "test.txt.gz").write_bytes(compressed)
    url, requests = serve(root, cuts=[len(compressed) // 2])
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), RemoteFile(
        f"{url}/test.txt.gz", sha256(LONG.encode()), gzip=True))
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError, match="resumes"):
        fetch_conll2000("test", data_home=home)
    part = partial_path(home / "conll2000" / "test.txt", compressed=True)
    assert part.read_bytes() == compressed[:len(compressed) // 2]
    assert len(fetch_conll2000("test", data_home=home)[0]) == 120
    assert requests.ranges == [None, f"bytes={len(compressed) // 2}-"]
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_no_network_on_resume_keeps_the_partial_file(tmp_path):
    home = tmp_path / "home"
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"He PRP B-NP\n")
    with pytest.raises(FileNotFoundError, match="failed"):
        fetch_conll2000("test", data_home=home, base_url="http://127.0.0.1:9")
    assert part.read_bytes() == b"He PRP B-NP\n"


def test_offline_raises_oserror_saying_what_is_missing_and_how_to_get_it(tmp_path, offline):
    with pytest.raises(OSError) as info:
        fetch_conll2002("esp", "train", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert isinstance(info.value, CorpusNotFoundError)
    assert str(tmp_path / "conll2002" / "esp.train") in message
    assert "download_if_missing=False" in message
    assert "python -m skcrf.datasets conll2002" in message and "SKCRF_DATA" in message
    assert "\n" not in message
    with pytest.raises(FileNotFoundError, match="python -m skcrf.datasets ud"):
        fetch_ud(data_home=tmp_path, download_if_missing=False)
    assert listing(tmp_path) == []


def test_failed_download_says_how_to_get_the_data_and_keeps_nothing(serve, tmp_path):
    url, requests = serve(tmp_path / "empty-mirror")  # every file is a 404
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError) as info:
        fetch_conll2000("train", data_home=home, base_url=url)
    message = str(info.value)
    assert "404" in message and f"{url}/conll2000/train.txt" in message
    assert "python -m skcrf.datasets conll2000" in message and "\n" not in message
    assert requests == ["/conll2000/train.txt"] and not home.exists()


def test_nothing_touches_the_network_when_the_files_are_there(tmp_path, offline, monkeypatch):
    (tmp_path / "conll2002").mkdir()
    (tmp_path / "conll2002" / "esp.testb").write_text(CONLL2002)
    assert fetch_conll2002("esp", "testb", data_home=tmp_path)[1] == [["B-LOC", "O"]]
    # the loaders never download, even when the file is missing
    with pytest.raises(FileNotFoundError, match="python -m skcrf.datasets conll2002"):
        load_conll2002("train", data_home=tmp_path)


def test_bad_arguments(tmp_path, offline):
    with pytest.raises(ValueError, match=r"language must be one of \['esp'\]; got 'ned'"):
        fetch_conll2002("ned", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"subset must be one of \['testa', 'testb', 'train'\]"):
        fetch_conll2002("esp", "test", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"treebank must be one of \['en_ewt'\]"):
        fetch_ud("de_gsd", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"label must be one of \['deprel', 'upos', 'xpos'\]"):
        fetch_ud(label="lemma", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"subset must be one of \['test', 'train'\]"):
        fetch_conll2000("dev", data_home=tmp_path)


def test_the_table_lists_every_file_once_with_a_sha256():
    assert len(REMOTE_FILES) == 8
    for (corpus, name), remote in REMOTE_FILES.items():
        assert remote.url.startswith("https://")
        assert remote.url.rsplit("/", 1)[1] in (name, name + ".gz")
        assert len(remote.sha256) == 64 and int(remote.sha256, 16) >= 0


def test_the_real_corpora_verify_against_the_table(serve, tmp_path):
    """Served from the shared copies: the checksums in the table are theirs."""
    shared = shared_data_home()
    if not all((shared / corpus / name).is_file() for corpus, name in REMOTE_FILES):
        pytest.skip(f"the corpora are not in {shared}")
    url, requests = serve(shared)
    home = tmp_path / "home"
    assert len(fetch_conll2000("test", data_home=home, base_url=url)[0]) == 2012
    assert len(fetch_conll2002("esp", "testb", data_home=home, base_url=url)[0]) == 1517
    assert len(fetch_ud("en_ewt", "dev", data_home=home, base_url=url)[0]) == 2001
    for corpus, name in REMOTE_FILES:
        _fetch.fetch_file(corpus, name, data_home=home, base_url=url)
        assert (home / corpus / name).read_bytes() == (shared / corpus / name).read_bytes()
    assert len(requests) == 8


def test_command_line_downloads_into_the_data_home(serve, mirror, tmp_path, monkeypatch,
                                                   capsys):
    url, _ = serve(mirror)
    monkeypatch.setenv("SKCRF_DATA_URL", url)
    assert _main(["conll2000", "--data-home", str(tmp_path / "home")]) == 1  # train: 404
    assert "python -m skcrf.datasets conll2000" in capsys.readouterr().err
    (mirror / "conll2000" / "train.txt").write_text(CONLL2000)
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "train.txt"),
                        RemoteFile("https://example.invalid/x", sha256(CONLL2000.encode())))
    assert _main(["conll2000", "--data-home", str(tmp_path / "home")]) == 0
    assert "conll2000 test: 2 sentences" in capsys.readouterr().out


@pytest.mark.parametrize("script, corpus", [("conll2002_ner.py", "conll2002"),
                                            ("conll2000_chunking.py", "conll2000")])
def test_examples_without_data_or_network_print_one_line(tmp_path, script, corpus):
    env = dict(os.environ, SKCRF_DATA=str(tmp_path / "none"),
               SKCRF_DATA_URL="http://127.0.0.1:9", no_proxy="*", NO_PROXY="*")
    result = subprocess.run([sys.executable, str(REPO / "examples" / script)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"python -m skcrf.datasets {corpus}" in lines[0]
    assert not (tmp_path / "none").exists()
