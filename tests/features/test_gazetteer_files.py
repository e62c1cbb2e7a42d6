"""A gazetteer file: read at fit, carried by model files, never opened at load (issue 43,
items 6 and 12)."""

import builtins
import io
import os

import pytest

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer, load_model, save_model
from skcrf.features import _segments
from sklearn.pipeline import make_pipeline

SENTENCES = [["I", "live", "in", "Nueva", "York"], ["Madrid", "is", "big"]] * 6
TAGS = [["O", "O", "O", "B-LOC", "I-LOC"], ["B-LOC", "O", "O"]] * 6


def _write(path, text):
    path.write_text(text, encoding="utf-8")


def _forget_the_file_and_watch_opens(path, monkeypatch):
    """Delete ``path``, drop the gazetteers read so far; returns the list of files opened."""
    os.remove(path)
    _segments._GAZETTEERS.clear()
    opened = []
    real_open = builtins.open

    def watching_open(file, *args, **kwargs):
        opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", watching_open)
    monkeypatch.setattr(io, "open", watching_open)
    return opened


def _flags(featurizer, sentence):
    return {name for token in featurizer.transform_dicts([sentence])[0] for name in token
            if name.startswith("gaz:")}


def test_fit_carries_the_entries_and_uses_them_whatever_becomes_of_the_file(tmp_path):
    path = tmp_path / "places.tsv"
    _write(path, "Nueva York\tLOC\n")
    featurizer = TokenFeaturizer(gazetteer=str(path)).fit(SENTENCES)
    assert featurizer.gazetteer_entries_ == {"Nueva York": ("LOC",)}
    os.remove(path)
    assert _flags(featurizer, ["Nueva", "York"]) == {"gaz:B-LOC", "gaz:I-LOC"}


def test_a_changed_file_is_read_again(tmp_path):
    """Neither a fit nor an unfitted transform serves a file's old entries (item 12)."""
    path = tmp_path / "places.tsv"
    _write(path, "Nueva York\tLOC\n")
    unfitted = TokenFeaturizer(gazetteer=str(path))
    assert _flags(unfitted, ["Madrid"]) == set()
    fitted = TokenFeaturizer(gazetteer=str(path)).fit(SENTENCES)
    _write(path, "Madrid\tLOC\nNueva York\tLOC\nOther\tX\n")  # another size
    assert _flags(unfitted, ["Madrid"]) == {"gaz:B-LOC"}
    assert _flags(fitted, ["Madrid"]) == set()  # fitted: the entries it read
    assert _flags(fitted.fit(SENTENCES), ["Madrid"]) == {"gaz:B-LOC"}  # a refit reads again
    stat = os.stat(path)
    _write(path, "Bogota\tLOC\nNueva York\tLOC\nOther\tY\n")  # the same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _flags(unfitted, ["Bogota"]) == {"gaz:B-LOC"}


def test_a_model_file_carries_the_entries_and_load_opens_no_other_file(tmp_path, monkeypatch):
    path = tmp_path / "places.tsv"
    _write(path, "Nueva York\tLOC\nMadrid\tLOC\n")
    model = make_pipeline(TokenFeaturizer(gazetteer=str(path)), SequenceVectorizer(),
                          CRFClassifier(max_iter=20)).fit(SENTENCES, TAGS)
    buffer = io.BytesIO()
    save_model(model, buffer)
    opened = _forget_the_file_and_watch_opens(path, monkeypatch)
    buffer.seek(0)
    loaded = load_model(buffer)
    predicted = loaded.predict(SENTENCES[:2])
    assert not [f for f in opened if str(path) in str(f)]
    assert [list(map(str, seq)) for seq in predicted] == [
        list(map(str, seq)) for seq in model.predict(SENTENCES[:2])]


def test_a_model_naming_a_file_without_its_entries_is_refused_unopened(tmp_path, monkeypatch):
    """A hostile file naming /etc/passwd (or any path) as its gazetteer: refused, not read."""
    path = tmp_path / "secret.tsv"
    _write(path, "Nueva York\tLOC\n")
    featurizer = TokenFeaturizer(gazetteer=str(path)).fit(SENTENCES)
    del featurizer.gazetteer_entries_
    buffer = io.BytesIO()
    save_model(featurizer, buffer)
    _segments._GAZETTEERS.clear()
    read = []
    monkeypatch.setattr(_segments, "read_entries", lambda *a: read.append(a))
    monkeypatch.setattr("skcrf.features.gazetteer.read_entries", lambda *a: read.append(a))
    buffer.seek(0)
    with pytest.raises(ValueError, match="carries no gazetteer_entries_"):
        load_model(buffer)
    assert read == []


@pytest.mark.parametrize("entries, match", [
    ({"Nueva York": ["LOC"]}, r"gazetteer_entries_\['Nueva York'\] is a list"),
    ({"": ("LOC",)}, "phrases must be non-empty"),
    ({"a": ()}, "one or more non-empty str types"),
    ({"a": ("X", 3)}, "one or more non-empty str types"),
    (["a"], "expected a dict"),
])
def test_damaged_entries_in_a_model_file_are_named(tmp_path, entries, match):
    path = tmp_path / "places.tsv"
    _write(path, "Nueva York\tLOC\n")
    featurizer = TokenFeaturizer(gazetteer=str(path)).fit(SENTENCES)
    featurizer.gazetteer_entries_ = entries
    buffer = io.BytesIO()
    save_model(featurizer, buffer)
    buffer.seek(0)
    with pytest.raises(ValueError, match=match):
        load_model(buffer)


def test_random_edits_of_a_gazetteer_model_open_no_file(tmp_path, monkeypatch):
    """Hostile edits of a fitted featurizer with a gazetteer file (its path, its entries):
    each is refused at load or transforms as its entries say; no file is ever opened."""
    import numpy as np

    from tests import _hostile

    path = tmp_path / "places.tsv"
    _write(path, "Nueva York\tLOC\nMadrid\tLOC\nLa Paz\tLOC\nAna\tPER\n")
    buffer = io.BytesIO()
    save_model(TokenFeaturizer(gazetteer=str(path)).fit(SENTENCES), buffer)
    data = buffer.getvalue()
    opened = _forget_the_file_and_watch_opens(path, monkeypatch)
    loaded = refused = 0
    for what, edited in _hostile.edited_files(data, np.random.default_rng(43), 200):
        try:
            featurizer = load_model(io.BytesIO(edited))
        except ValueError:
            refused += 1
            continue
        loaded += 1
        try:
            featurizer.transform_dicts([["Madrid", "y", "La", "Paz"]])
        except ValueError:
            pass  # a clear refusal of the parameters the edit made
        assert not opened, (what, opened)
    assert loaded + refused >= 150 and refused > 0 and loaded > 0
