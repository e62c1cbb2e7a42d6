"""The corpus fetchers against a local HTTP server on 127.0.0.1: no internet needed."""

import gzip
import hashlib
import http.server
import io
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from skcrf.datasets import (fetch_conll2000, fetch_conll2002, fetch_ud, get_data_home,
                            load_conll2000, load_conll2002)
from skcrf.datasets import _fetch
from skcrf.datasets.__main__ import main as _main
from skcrf.datasets._fetch import (
    REMOTE_FILES,
    CorpusNotFoundError,
    RemoteFile,
    Source,
    partial_path,
)
from tests._corpora import record_files
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


def _handler(root, requests, ranges, cuts, pace, endless):
    """A GET-only handler serving ``root``, with ``bytes=a-`` ranges if ``ranges``.

    Each response takes the next item of ``cuts`` (None once they run out): an
    int sends that many bytes of the body, after a Content-Length announcing
    all of it, then closes the connection, as a dropped download does. With
    ``pace``, the body goes out 256 bytes at a time, that many seconds apart;
    with ``endless``, it is sent over and over, with no Content-Length, until
    the client hangs up.
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
            self.close_connection = True
            if endless:
                self.end_headers()
                try:
                    while True:
                        self.wfile.write(body)
                except OSError:  # the client hung up
                    return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            cut = cuts.pop(0) if cuts else None
            body = body if cut is None else body[:cut]
            for at in range(0, len(body), 256 if pace else len(body) or 1):
                time.sleep(pace)
                self.wfile.write(body[at:at + (256 if pace else len(body))])

    return Handler


@pytest.fixture
def serve():
    """serve(folder, ranges=True, cuts=(), pace=0, endless=False) -> (base URL, Requests).

    The server stops at teardown.
    """
    servers = []

    def start(root, *, ranges=True, cuts=(), pace=0.0, endless=False):
        requests = Requests()
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), _handler(Path(root), requests, ranges, list(cuts), pace, endless))
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


def remote_for(data, *sources):
    """A table entry recording ``data`` as the stored file, downloaded from ``sources``."""
    return RemoteFile(sha256(data), len(data), sources or (Source("https://example.invalid/x"),))


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A small mirror in the data-home layout; the table's records made to match it."""
    root = tmp_path / "mirror"
    files = {("conll2000", "test.txt"): CONLL2000.encode(),
             ("conll2002", "esp.testa"): CONLL2002.encode(),
             ("ud_english_ewt", "en_ewt-ud-dev.conllu"): CONLLU.encode()}
    for (corpus, name), data in files.items():
        (root / corpus).mkdir(parents=True, exist_ok=True)
        (root / corpus / name).write_bytes(data)
        monkeypatch.setitem(REMOTE_FILES, (corpus, name),
                            remote_for(data, *REMOTE_FILES[corpus, name].sources))
    return root


@pytest.fixture
def offline(monkeypatch):
    """Fail the test if anything opens a URL."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access: {args}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _partial_file(home, content):
    """The partial download of CoNLL-2000's test.txt in ``home``, holding ``content``."""
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    (part.write_bytes if isinstance(content, bytes) else part.write_text)(content)
    return part


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _assert_holds_the_whole_file(home):
    """The data home holds CoNLL-2000's whole test.txt and nothing else (no partial file)."""
    assert (home / "conll2000" / "test.txt").read_text() == LONG
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


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
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), remote_for(
        CONLL2000.encode(), Source(f"{url}/test.txt.gz", archive="gzip")))
    X, _ = fetch_conll2000("test", data_home=tmp_path / "home")
    assert len(X) == 2 and requests == ["/test.txt.gz"]
    assert (tmp_path / "home" / "conll2000" / "test.txt").read_text() == CONLL2000


def test_checksum_mismatch_names_the_url_and_both_checksums_and_keeps_nothing(
        serve, mirror, tmp_path, monkeypatch):
    (mirror / "conll2000" / "test.txt").write_text(CONLL2000.replace("ran", "run"))
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
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), remote_for(LONG.encode()))
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
    _assert_holds_the_whole_file(home)


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
    _assert_holds_the_whole_file(home)


def test_a_corrupt_partial_file_is_discarded_and_the_file_fetched_anew(
        serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    _partial_file(home, b"garbage " * 20)  # not the first bytes of the file
    X, _ = fetch_conll2000("test", data_home=home, base_url=url)
    assert len(X) == 120
    assert requests.ranges == ["bytes=160-", None]  # resumed, failed the checksum, anew
    _assert_holds_the_whole_file(home)


def test_a_partial_file_that_is_already_whole_is_verified_not_fetched_again(
        serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    _partial_file(home, LONG)  # cut after the last byte arrived
    assert len(fetch_conll2000("test", data_home=home, base_url=url)[0]) == 120
    assert requests.ranges == [f"bytes={len(LONG)}-"]  # answered 416: nothing after it
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_still_wrong_after_discarding_a_partial_file_says_so_and_keeps_nothing(
        serve, long_mirror, tmp_path):
    (long_mirror / "conll2000" / "test.txt").write_text(LONG.replace("ran119 ", "run119 "))
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    _partial_file(home, LONG.encode()[:100])
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
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"), remote_for(
        LONG.encode(), Source(f"{url}/test.txt.gz", archive="gzip")))
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError, match="resumes"):
        fetch_conll2000("test", data_home=home)
    part = partial_path(home / "conll2000" / "test.txt", "gzip")
    assert part.read_bytes() == compressed[:len(compressed) // 2]
    assert len(fetch_conll2000("test", data_home=home)[0]) == 120
    assert requests.ranges == [None, f"bytes={len(compressed) // 2}-"]
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


def test_no_network_on_resume_keeps_the_partial_file(tmp_path):
    home = tmp_path / "home"
    part = _partial_file(home, b"He PRP B-NP\n")
    with pytest.raises(FileNotFoundError, match="unreachable"):
        fetch_conll2000("test", data_home=home, base_url="http://127.0.0.1:9")
    assert part.read_bytes() == b"He PRP B-NP\n"


def test_offline_raises_oserror_saying_what_is_missing_and_how_to_get_it(tmp_path, offline):
    with pytest.raises(OSError) as info:
        fetch_conll2002("esp", "train", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert isinstance(info.value, CorpusNotFoundError)
    assert str(tmp_path / "conll2002" / "esp.train") in message
    assert "download_if_missing=False" in message and "download_if_missing=True" in message
    assert f"copy esp.train into {tmp_path / 'conll2002'}" in message
    assert "SKCRF_DATA" in message and "\n" not in message
    with pytest.raises(FileNotFoundError, match="copy en_ewt-ud-train.conllu into"):
        fetch_ud(data_home=tmp_path, download_if_missing=False)
    assert listing(tmp_path) == []


def test_failed_download_says_how_to_get_the_data_and_keeps_nothing(serve, tmp_path):
    url, requests = serve(tmp_path / "empty-mirror")  # every file is a 404
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError) as info:
        fetch_conll2000("train", data_home=home, base_url=url)
    message = str(info.value)
    assert "404" in message and f"{url}/conll2000/train.txt" in message
    assert f"copy train.txt into {home / 'conll2000'}" in message and "\n" not in message
    assert requests == ["/conll2000/train.txt"] and not home.exists()


def test_nothing_touches_the_network_when_the_files_are_there(tmp_path, offline, monkeypatch):
    (tmp_path / "conll2002").mkdir()
    (tmp_path / "conll2002" / "esp.testb").write_text(CONLL2002)
    record_files(monkeypatch, tmp_path)
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


# an immutable release: a git commit, or the CoNLL-2000 page, unchanged since 2000
PINNED = re.compile(r"https://(raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/"
                    r"|www\.clips\.uantwerpen\.be/conll2000/chunking/)")


def test_the_table_records_every_file_with_its_size_checksum_and_pinned_sources():
    assert len(REMOTE_FILES) == 8
    for (corpus, name), remote in REMOTE_FILES.items():
        assert len(remote.sha256) == 64 and int(remote.sha256, 16) >= 0
        assert remote.size > 0 and remote.sources
        for source in remote.sources:
            assert PINNED.match(source.url), source.url
            if source.archive == "zip":
                # the archive is recorded too, and holds the file under its own name
                assert source.size > 0 and len(source.sha256) == 64
                assert source.member == f"{corpus}/{name}"
            else:
                assert source.url.rsplit("/", 1)[1] == name + {"": "", "gzip": ".gz"}[
                    source.archive]
    # the official or NLTK's source first, the other copies after it
    assert "nltk_data" in REMOTE_FILES["conll2002", "esp.train"].sources[0].url
    assert "clips" in REMOTE_FILES["conll2000", "train.txt"].sources[0].url


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
    assert f"{url}/conll2000/train.txt: HTTP 404" in capsys.readouterr().err
    (mirror / "conll2000" / "train.txt").write_text(CONLL2000)
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "train.txt"), remote_for(CONLL2000.encode()))
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
    assert "unreachable" in lines[0] and "SKCRF_DATA_URL" in lines[0]
    assert f"http://127.0.0.1:9/{corpus}/" in lines[0]
    assert not (tmp_path / "none").exists()


# Issue 32, fault 2: a planted partial file that is a link
@pytest.mark.parametrize("existing", [True, False], ids=["append-to-a-file", "create-a-file"])
def test_a_partial_file_planted_as_a_link_is_refused_and_its_target_untouched(
        serve, long_mirror, tmp_path, existing):
    url, requests = serve(long_mirror)
    home = tmp_path / "home"
    outside = tmp_path / "outside.txt"
    if existing:
        outside.write_text("keep me\n")
    part = partial_path(home / "conll2000" / "test.txt")
    part.parent.mkdir(parents=True)
    part.symlink_to(outside)
    with pytest.raises(OSError, match=r"\.test\.txt\.part is a symbolic link .* remove it"):
        fetch_conll2000("test", data_home=home, base_url=url)
    assert (outside.read_text() if existing else outside.exists()) == (
        "keep me\n" if existing else False)
    assert requests == []  # refused before anything was asked for
    assert part.is_symlink() and not (home / "conll2000" / "test.txt").exists()


def test_a_lock_file_planted_as_a_link_is_refused(serve, long_mirror, tmp_path):
    url, _ = serve(long_mirror)
    home = tmp_path / "home"
    (home / "conll2000").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    (home / "conll2000" / ".test.txt.lock").symlink_to(outside)
    with pytest.raises(OSError, match=r"\.test\.txt\.lock is a symbolic link"):
        fetch_conll2000("test", data_home=home, base_url=url)
    assert not outside.exists()


def test_a_lock_file_left_by_a_killed_fetch_does_not_block_the_next(serve, long_mirror,
                                                                      tmp_path):
    url, _ = serve(long_mirror)
    home = tmp_path / "home"
    (home / "conll2000").mkdir(parents=True)
    (home / "conll2000" / ".test.txt.lock").write_text("")  # no process holds it
    assert len(fetch_conll2000("test", data_home=home, base_url=url)[0]) == 120
    assert listing(home) == ["conll2000", "conll2000/test.txt"]


# Issue 32, fault 3: concurrent fetches of one file
def test_concurrent_fetches_of_one_file_download_it_once_and_install_it_whole(
        serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror, pace=0.01)  # about 0.15 s per download
    home = tmp_path / "home"
    results, errors = [], []

    def fetch():
        try:
            results.append(fetch_conll2000("test", data_home=home, base_url=url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert requests == ["/conll2000/test.txt"]  # the others waited, then found it
    assert all(len(X) == 120 for X, _ in results) and len(results) == 6
    _assert_holds_the_whole_file(home)


def test_concurrent_fetches_in_two_processes(serve, long_mirror, tmp_path):
    url, requests = serve(long_mirror, pace=0.02)
    home = tmp_path / "home"
    script = (
        "import sys\n"
        "from skcrf.datasets import fetch_conll2000\n"
        "from skcrf.datasets._remote import REMOTE_FILES, RemoteFile\n"
        f"REMOTE_FILES['conll2000', 'test.txt'] = RemoteFile({sha256(LONG.encode())!r}, "
        f"{len(LONG)}, ())\n"
        f"X, _ = fetch_conll2000('test', data_home={str(home)!r}, base_url={url!r})\n"
        "print(len(X))\n")
    env = dict(os.environ, no_proxy="*", NO_PROXY="*",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    children = [subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(2)]
    outputs = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["120", "120"]
    assert 1 <= len(requests) <= 2  # the second started after the first had finished, or waited
    _assert_holds_the_whole_file(home)


def test_a_file_of_the_wrong_size_in_the_data_home_is_refused_naming_it(tmp_path, offline,
                                                                         monkeypatch):
    (tmp_path / "conll2002").mkdir()
    path = tmp_path / "conll2002" / "esp.testb"
    path.write_text(CONLL2002)
    record_files(monkeypatch, tmp_path)
    path.write_text(CONLL2002 + CONLL2002)  # a second copy appended, as two fetches did
    for load in (lambda: load_conll2002("testb", data_home=tmp_path),
                 lambda: fetch_conll2002("esp", "testb", data_home=tmp_path)):
        with pytest.raises(OSError) as info:
            load()
        message = str(info.value)
        assert not isinstance(info.value, FileNotFoundError)
        assert f"{path} has {2 * len(CONLL2002.encode())} bytes where conll2002/esp.testb " \
               f"has {len(CONLL2002.encode())}" in message
        assert "delete it and fetch it again" in message


def test_the_latin1_original_of_conll2002_is_accepted_at_its_own_size(tmp_path, offline):
    """The original release is Latin-1; the table records the size of that encoding too."""
    remote = REMOTE_FILES["conll2002", "esp.testb"]
    assert remote.latin1_size < remote.size
    assert remote.accepts_size(remote.latin1_size) and not remote.accepts_size(remote.size + 1)


# Issue 32, fault 7: downloads without a size bound
def test_an_endless_download_stops_past_the_recorded_size_and_keeps_nothing(
        serve, mirror, tmp_path):
    url, _ = serve(mirror, endless=True)
    home = tmp_path / "home"
    size = len(CONLL2000.encode())
    with pytest.raises(OSError, match=f"served more than the {size} bytes recorded") as info:
        fetch_conll2000("test", data_home=home, base_url=url)
    assert not isinstance(info.value, FileNotFoundError)
    assert not home.exists()


def test_a_download_announcing_more_than_the_recorded_size_is_refused_unread(
        serve, mirror, tmp_path):
    (mirror / "conll2000" / "test.txt").write_bytes(b"x" * 10_000)
    url, _ = serve(mirror)
    with pytest.raises(OSError, match=f"announces 10000 bytes, more than the "
                                      f"{len(CONLL2000.encode())} recorded"):
        fetch_conll2000("test", data_home=tmp_path / "home", base_url=url)
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("recorded", [True, False], ids=["archive-size-recorded",
                                                          "archive-size-bounded"])
def test_a_gzip_bomb_stops_past_the_recorded_size(serve, tmp_path, monkeypatch, recorded):
    root = tmp_path / "site"
    root.mkdir()
    bomb = gzip.compress(b"x" * (20 << 20))  # 20 MiB in about 20 KB
    (root / "test.txt.gz").write_bytes(bomb)
    url, _ = serve(root)
    source = Source(f"{url}/test.txt.gz", archive="gzip", size=len(bomb) if recorded else None)
    monkeypatch.setitem(REMOTE_FILES, ("conll2000", "test.txt"),
                        remote_for(CONLL2000.encode(), source))
    home = tmp_path / "home"
    size = len(CONLL2000.encode())
    # unrecorded, the archive may hold the file, gzip's framing and a little slack
    message = (f"more than the {size} bytes recorded once unpacked" if recorded
               else rf"announces \d+ bytes, more than the {size + 1024} recorded")
    with pytest.raises(OSError, match=message):
        fetch_conll2000("test", data_home=home)
    assert not home.exists()


def zip_of(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_sources_are_tried_in_order_until_one_gives_the_recorded_file(
        serve, tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    good = zip_of({"conll2002/esp.testa": CONLL2002, "conll2002/README": "x"})
    (root / "conll2002.zip").write_bytes(good)
    (root / "other.zip").write_bytes(zip_of({"conll2002/esp.testa": CONLL2002 + "x O O\n"}))
    url, requests = serve(root)
    data = CONLL2002.encode()
    monkeypatch.setitem(REMOTE_FILES, ("conll2002", "esp.testa"), remote_for(
        data,
        Source(f"{url}/missing.zip", "zip", "conll2002/esp.testa"),
        # the wrong archive: its own checksum fails before it is opened
        Source(f"{url}/other.zip", "zip", "conll2002/esp.testa", sha256=sha256(good)),
        Source(f"{url}/conll2002.zip", "zip", "conll2002/esp.testa", len(good), sha256(good)),
        Source(f"{url}/never-asked"),
    ))
    home = tmp_path / "home"
    assert fetch_conll2002("esp", "testa", data_home=home) == (
        [[("España", "NP"), ("vence", "VMI")]], [["B-LOC", "O"]])
    assert requests == ["/missing.zip", "/other.zip", "/conll2002.zip"]
    assert listing(home) == ["conll2002", "conll2002/esp.testa"]


def test_when_no_source_gives_the_file_the_error_names_each(serve, tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    archive = zip_of({"conll2002/esp.train": "x O O\n"})
    (root / "a.zip").write_bytes(archive)
    (root / "b").write_text(CONLL2002.replace("vence", "gana!"))
    url, _ = serve(root)
    monkeypatch.setitem(REMOTE_FILES, ("conll2002", "esp.testa"), remote_for(
        CONLL2002.encode(), Source(f"{url}/a.zip", "zip", "conll2002/esp.testa", len(archive)),
        Source(f"{url}/b")))
    home = tmp_path / "home"
    with pytest.raises(OSError) as info:
        fetch_conll2002("esp", "testa", data_home=home)
    message = str(info.value)
    assert not isinstance(info.value, FileNotFoundError)
    assert f"{url}/a.zip: the archive has no member conll2002/esp.testa" in message
    assert f"{url}/b: SHA-256 " in message and "nothing was saved" in message
    assert not home.exists()


def test_an_unreachable_network_is_said_with_the_urls_the_mirror_variable_and_where_to_copy(
        tmp_path, monkeypatch):
    monkeypatch.setitem(REMOTE_FILES, ("conll2002", "esp.train"), remote_for(
        CONLL2002.encode(), Source("http://127.0.0.1:9/conll2002.zip", "zip", "x"),
        Source("http://127.0.0.1:9/esp.train")))
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError) as info:
        fetch_conll2002("esp", "train", data_home=home)
    message = str(info.value)
    assert message.startswith(
        f"{home / 'conll2002' / 'esp.train'} is missing and the network (or the server) is "
        f"unreachable (http://127.0.0.1:9/conll2002.zip: ")
    assert "; http://127.0.0.1:9/esp.train: " in message
    assert f"copy esp.train into {home / 'conll2002'}" in message
    assert "SKCRF_DATA_URL" in message and "SKCRF_DATA " in message
    assert "python -m skcrf.datasets" not in message  # not the command that just failed
    assert "\n" not in message and not home.exists()


# Issue 32, fault 18
def test_a_failed_fetch_leaves_no_empty_folders(serve, tmp_path):
    url, _ = serve(tmp_path / "empty-mirror")
    home = tmp_path / "a" / "b" / "c"
    with pytest.raises(FileNotFoundError):
        fetch_conll2000("test", data_home=home, base_url=url)
    assert listing(tmp_path) == []  # nor a, a/b, a/b/c or c/conll2000
    (tmp_path / "a").mkdir()
    with pytest.raises(FileNotFoundError):
        fetch_conll2000("test", data_home=home, base_url=url)
    assert listing(tmp_path) == ["a"]  # what was there before stays


def test_an_empty_data_home_is_refused_not_taken_for_the_current_directory(
        tmp_path, monkeypatch, offline):
    monkeypatch.chdir(tmp_path)
    for call in (lambda: get_data_home(""),
                 lambda: fetch_conll2000("test", data_home=""),
                 lambda: load_conll2000("test", data_home="")):
        with pytest.raises(ValueError, match="data_home is an empty string, which would be "
                                             "the current directory"):
            call()
    assert listing(tmp_path) == []
    monkeypatch.setenv("SKCRF_DATA", "")  # an empty variable is as if unset
    assert get_data_home() == Path.home() / "skcrf_data"
