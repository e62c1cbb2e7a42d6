"""Build and rewrite model files byte by byte, as a hostile or buggy writer would.

The helpers keep the file valid where the test does not change it: a
rewritten payload gets a matching size and checksum, so a test reaches the
part of the loader it means to test.
"""

import io
import json
import zipfile

from skcrf._persistence._file import _MAGIC, _checksum


def split(data):
    """The header (dict) and the payload (bytes) of a model file's bytes."""
    magic, header, payload = data.split(b"\n", 2)
    assert magic + b"\n" == _MAGIC
    return json.loads(header), payload


def members(payload):
    """The members of a payload archive: name -> bytes, in archive order."""
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def archive(contents, compression=zipfile.ZIP_STORED):
    """A zip archive of ``contents`` (name -> bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as out:
        for name, data in contents.items():
            out.writestr(name, data)
    return buffer.getvalue()


def model_file(header, payload):
    """A model file of ``header`` and ``payload``, with a matching size and checksum."""
    header = {**header, "payload": {**header["payload"], "size": len(payload)}}
    header["sha256"] = _checksum(header, payload)
    return _MAGIC + json.dumps(header).encode() + b"\n" + payload


def rewritten(data, edit_tree=None, **replace):
    """``data`` with its description edited by ``edit_tree(tree)`` and members replaced."""
    header, payload = split(data)
    contents = members(payload)
    if edit_tree is not None:
        tree = json.loads(contents["model.json"])
        edit_tree(tree)
        contents["model.json"] = json.dumps(tree).encode()
    for name, value in replace.items():
        contents[name.replace("__", ".")] = value
    return model_file(header, archive(contents))
