"""A column file's text encoding: decided per file, and where it breaks, named.

Without ``--encoding`` a file is UTF-8 if all of it decodes as UTF-8. A file
with bytes that do not, and no UTF-8 character of two bytes or more, is
8-bit text from before UTF-8 (the original CoNLL-2002 release is Latin-1):
Latin-1, which every byte string is. But a file with both is UTF-8 with a
stray byte: reading all of it as Latin-1 would turn every accented letter
into two characters, so that is an error naming the byte's line and offset.
UTF-16 is never guessed: its NUL bytes would be read as part of the words.
"""

import codecs
import re

from ._errors import CommandError

_BLOCK = 1 << 20

# what errors="surrogateescape" makes of a byte that does not decode
_ESCAPED = re.compile("[\udc80-\udcff]")
# a character of two UTF-8 bytes or more that did decode
_MULTIBYTE = re.compile("[^\x00-\x7f\udc80-\udcff]")


def guess_encoding(path):
    """``"utf-8"`` or ``"latin-1"`` for the file ``path`` (see the module docstring).

    Raises
    ------
    CommandError
        If the file is UTF-16 (a byte-order mark, or NUL bytes), or UTF-8
        with a byte that is not; the message names the line and byte offset.
    """
    scan = _Utf8Scan()
    try:
        with open(path, "rb") as handle:
            block = handle.read(_BLOCK)
            _refuse_utf16(path, block)
            while block and not (scan.invalid and scan.multibyte):
                scan.feed(block)
                block = handle.read(_BLOCK)
            if not block:
                scan.feed(b"", final=True)
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    if scan.invalid is None:
        return "utf-8"
    if not scan.multibyte:
        return "latin-1"
    line, offset, byte = scan.invalid
    raise CommandError(
        f"{path}: line {line} has the byte 0x{byte:02x} (at byte offset {offset}), which is "
        f"not UTF-8, though the file's other characters are: fix that byte, or give the "
        f"file's encoding with --encoding (reading it all as Latin-1 would garble its "
        f"UTF-8 characters)")


def _refuse_utf16(path, start):
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        why = "it starts with a UTF-16 byte-order mark"
    elif start.count(b"\x00") > len(start) // 8:
        why = "it holds NUL bytes between its characters"
    else:
        return
    raise CommandError(
        f"{path} is UTF-16 text ({why}): convert it to UTF-8 (e.g. iconv -f UTF-16 -t "
        f"UTF-8), or pass --encoding utf-16")


class _Utf8Scan:
    """Decodes a file's blocks as UTF-8, noting its first undecodable byte and whether
    any character of several bytes decoded."""

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.consumed = 0  # bytes decoded so far
        self.lines = 0  # newlines among them
        self.invalid = None  # (line, byte offset, byte) of the first undecodable byte
        self.multibyte = False

    def feed(self, block, final=False):
        text = self.decoder.decode(block, final)
        if self.invalid is None:
            found = _ESCAPED.search(text)
            if found is not None:
                i = found.start()
                self.invalid = (self.lines + text.count("\n", 0, i) + 1,
                                self.consumed + len(text[:i].encode("utf-8",
                                                                    "surrogateescape")),
                                ord(text[i]) - 0xDC00)
        self.multibyte = self.multibyte or _MULTIBYTE.search(text) is not None
        self.consumed += len(text.encode("utf-8", "surrogateescape"))
        self.lines += text.count("\n")


def undecodable_at(path, encoding):
    """``(line, byte offset, byte)`` of the first byte of ``path`` that ``encoding``
    cannot decode, or None."""
    decoder = codecs.getincrementaldecoder(encoding)()
    consumed = lines = 0
    with open(path, "rb") as handle:
        for block in [*iter(lambda: handle.read(_BLOCK), b""), None]:
            try:
                pending = decoder.getstate()[0]
            except (AttributeError, TypeError, IndexError):
                pending = b""
            try:
                decoder.decode(b"" if block is None else block, final=block is None)
            except UnicodeDecodeError as error:
                data = bytes(error.object)
                offset = consumed - len(pending) + error.start
                before = data[:error.start]
                line = lines - pending.count(b"\n") + before.count(b"\n") + 1
                return line, offset, data[error.start]
            if block is not None:
                consumed += len(block)
                lines += block.count(b"\n")
    return None
