"""CRFsuite 0.12's model file format (``crf1d``), read and written in Python.

A CRFsuite model file is, all integers little-endian 32-bit:

- a 48-byte header: ``b"lCRF"``, the file size, ``b"FOMC"``, the version
  (100), the numbers of features, labels and attributes, and the offsets of
  the feature chunk, the label and attribute string databases and the label
  and attribute reference chunks;
- the feature chunk ``b"FEAT"`` (chunk size, count), then 20 bytes a
  feature: its type (0 state, 1 transition), source (attribute id or label
  id), destination (label id) and weight (a little-endian double);
- two CQDB string databases (labels, then attributes), each a 24-byte header
  (``b"CQDB"``, size, flag, byte-order mark ``0x62445371``, number and
  offset of the id-to-string array), 256 hash-table references, the
  records (id, key size, key with its NUL) and the tables; offsets inside a
  database count from its start;
- the reference chunks ``b"LFRF"`` (per label, the transition features
  leaving it) and ``b"AFRF"`` (per attribute, its state features), each a
  header, one file offset per item, and at each offset a count and the
  feature ids; both start on a 4-byte boundary.

CRFsuite's tagger reads the weights through the reference chunks: the state
score of label ``l`` sums ``weight * value`` of the features the token's
attributes reference; the transition ``(i, j)`` is the weight of the feature
label ``i`` references with destination ``j``. The reader rebuilds the same
weights and checks every count and offset against the bytes actually present
before it reads (or allocates) anything.
"""

import struct
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

_HEADER = struct.Struct("<4sI4sIIIIIIIII")
_CHUNK = struct.Struct("<4sII")
_CQDB_HEADER = struct.Struct("<4sIIIII")
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
_MAGIC, _MODEL_TYPE, _VERSION = b"lCRF", b"FOMC", 100
_BYTE_ORDER = 0x62445371
_N_TABLES = 256
_CQDB_DATA = _CQDB_HEADER.size + 8 * _N_TABLES
_STATE, _TRANSITION = 0, 1
_MASK = 0xFFFFFFFF
#: What a label pair costs, in weights: skcrf.compat.CRF's transition_features_ (a dict
#: entry of a tuple and a float for every pair, as sklearn-crfsuite's) takes ~250 bytes.
_PAIR_COST = 32
#: Weights a file may make by default (labels x weighted attributes, plus _PAIR_COST a
#: pair of labels): at least this many (32 MB),
_DENSE_CELLS = 1 << 22
#: or this many per byte of the file. A weighted attribute takes at least ~70 bytes of
#: a file (its name's record, hash slots, reference list and a 20-byte feature), and
#: ~24 more a label it weighs: 4 per byte admits the sparsest models (one label an
#: attribute) of up to ~280 labels, models of 3 labels an attribute up to ~500; a real
#: model of 9 labels makes well under 1 per byte.
_DENSE_PER_BYTE = 4


class CRFsuiteFormatError(ValueError):
    """A file that is not a well-formed CRFsuite model, with what is wrong and where."""


@dataclass(frozen=True)
class CRFsuiteWeights:
    """The weights of a CRFsuite model, by CRFsuite's label and attribute ids.

    Attributes
    ----------
    labels : list of str
        Label ``l``'s name at ``labels[l]``.
    attributes : list of str
        Attribute ``a``'s name at ``attributes[a]``.
    state : ndarray or scipy.sparse matrix of shape (n_attributes, n_labels)
        ``state[a, l]``: the weight of attribute ``a`` for label ``l``
        (:func:`read_crfsuite` gives a CSR matrix of the file's features:
        memory in proportion to the file, whatever its counts claim).
    transitions : ndarray of shape (n_labels, n_labels)
        ``transitions[i, j]``: the weight of label ``j`` after label ``i``.
    """

    labels: list
    attributes: list
    state: np.ndarray
    transitions: np.ndarray


# --- Bob Jenkins' lookup3 hashlittle, which CQDB's hash tables use -------------------

def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & _MASK


def _mix(a, b, c):
    a = (a - c) & _MASK; a ^= _rot(c, 4); c = (c + b) & _MASK  # noqa: E702
    b = (b - a) & _MASK; b ^= _rot(a, 6); a = (a + c) & _MASK  # noqa: E702
    c = (c - b) & _MASK; c ^= _rot(b, 8); b = (b + a) & _MASK  # noqa: E702
    a = (a - c) & _MASK; a ^= _rot(c, 16); c = (c + b) & _MASK  # noqa: E702
    b = (b - a) & _MASK; b ^= _rot(a, 19); a = (a + c) & _MASK  # noqa: E702
    c = (c - b) & _MASK; c ^= _rot(b, 4); b = (b + a) & _MASK  # noqa: E702
    return a, b, c


def _final(a, b, c):
    c ^= b; c = (c - _rot(b, 14)) & _MASK  # noqa: E702
    a ^= c; a = (a - _rot(c, 11)) & _MASK  # noqa: E702
    b ^= a; b = (b - _rot(a, 25)) & _MASK  # noqa: E702
    c ^= b; c = (c - _rot(b, 16)) & _MASK  # noqa: E702
    a ^= c; a = (a - _rot(c, 4)) & _MASK  # noqa: E702
    b ^= a; b = (b - _rot(a, 14)) & _MASK  # noqa: E702
    c ^= b; c = (c - _rot(b, 24)) & _MASK  # noqa: E702
    return c


def hashlittle(key, initval=0):
    """lookup3's ``hashlittle`` of the bytes ``key`` (as CQDB hashes a key with its NUL)."""
    length = len(key)
    a = b = c = (0xDEADBEEF + length + initval) & _MASK
    if length == 0:
        return c
    # the last block, of 1 to 12 bytes, is zero-padded: lookup3 adds its bytes alone
    padded = key + b"\0" * (-length % 12)
    words = struct.unpack(f"<{len(padded) // 4}I", padded)
    for block in range(0, len(words) - 3, 3):
        a, b, c = _mix((a + words[block]) & _MASK, (b + words[block + 1]) & _MASK,
                       (c + words[block + 2]) & _MASK)
    a, b, c = ((a + words[-3]) & _MASK, (b + words[-2]) & _MASK, (c + words[-1]) & _MASK)
    return _final(a, b, c)


# --- reading ------------------------------------------------------------------------

def _span(data, offset, size, what):
    """``data[offset:offset + size]``, or an error naming ``what`` if the file is shorter."""
    if offset < 0 or size < 0 or offset + size > len(data):
        raise CRFsuiteFormatError(
            f"{what} lies at bytes {offset}-{offset + size}, past the end of the "
            f"{len(data)}-byte file: the file is truncated or damaged.")
    return data[offset:offset + size]


def _uint32s(data, offset, count, what):
    return np.frombuffer(_span(data, offset, 4 * count, what), dtype="<u4")


def _read_strings(data, offset, count, what):
    """The ``count`` strings of the CQDB database at ``offset``, by id."""
    chunk_id, size, _, byte_order, n_ids, ids_offset = _CQDB_HEADER.unpack(
        _span(data, offset, _CQDB_HEADER.size, f"the {what} database's header"))
    if chunk_id != b"CQDB" or byte_order != _BYTE_ORDER:
        raise CRFsuiteFormatError(f"the {what} database at byte {offset} is not a CQDB "
                                  f"database of this byte order (header {chunk_id!r}).")
    db = _span(data, offset, size, f"the {what} database")
    if n_ids != count:
        raise CRFsuiteFormatError(f"the {what} database holds {n_ids} names; the header "
                                  f"counts {count} {what}s.")
    positions = _uint32s(db, ids_offset, count, f"the {what} database's id array")
    names = []
    for ident, position in enumerate(positions.tolist()):
        record = f"{what} {ident}'s name"
        stored_id, key_size = struct.unpack("<II", _span(db, position, 8, record))
        key = _span(db, position + 8, key_size, record)
        if stored_id != ident or key_size == 0 or key[-1:] != b"\0":
            raise CRFsuiteFormatError(f"{record} (byte {offset + position}) is not a "
                                      f"well-formed record of id {ident}.")
        try:
            names.append(key[:-1].decode("utf-8"))
        except UnicodeDecodeError as error:
            raise CRFsuiteFormatError(f"{record} is not UTF-8: {error}.") from None
    if len(set(names)) != len(names):
        raise CRFsuiteFormatError(f"the {what} database names two {what}s alike.")
    return names


def _references(data, offset, chunk, count, what):
    """The reference lists of ``count`` items: (item of each entry, feature id of each).

    Every list lies inside the file, on a 4-byte boundary as CRFsuite writes
    them, and the lists together hold no more entries than the file has words
    (in a real file they never overlap): what is read is what is there.
    """
    chunk_id, _, n_items = _CHUNK.unpack(_span(data, offset, _CHUNK.size, f"the {what} "
                                               f"references' header"))
    if chunk_id != chunk or n_items < count:
        raise CRFsuiteFormatError(f"the {what} references at byte {offset} are not a "
                                  f"{chunk.decode()} chunk of at least {count} items.")
    starts = _uint32s(data, offset + _CHUNK.size, count,
                      f"the {what} reference offsets").astype(np.int64)
    words = np.frombuffer(data, dtype="<u4", count=len(data) // 4)
    bad = np.flatnonzero((starts % 4 != 0) | (starts // 4 >= words.shape[0]))
    if bad.size:
        raise CRFsuiteFormatError(f"{what} {bad[0]}'s references are at byte "
                                  f"{starts[bad[0]]}, not a word of the file.")
    first = starts // 4 + 1
    counts = words[first - 1].astype(np.int64)
    past = np.flatnonzero(first + counts > words.shape[0])
    if past.size:
        raise CRFsuiteFormatError(f"{what} {past[0]}'s {counts[past[0]]} references run "
                                  f"past the end of the {len(data)}-byte file.")
    total = int(counts.sum())
    if total > words.shape[0]:
        raise CRFsuiteFormatError(f"the {what} references claim {total} entries, more than "
                                  f"the file's {words.shape[0]} words.")
    items = np.repeat(np.arange(count), counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return items, words[first[items] + within]


def weight_limit(n_bytes, max_weights=None):
    """The most weights (see :func:`weight_count`) a model read from ``n_bytes`` bytes
    may make."""
    if max_weights is not None:
        return int(max_weights)
    return max(_DENSE_CELLS, _DENSE_PER_BYTE * n_bytes)


def weight_count(n_labels, n_attributes):
    """The memory a model of these counts takes in skcrf, in weights of 8 bytes: its
    dense state weights, and each pair of labels's weight and dict entry."""
    return n_labels * n_attributes + (1 + _PAIR_COST) * n_labels * n_labels


def check_weight_count(n_labels, n_attributes, n_bytes, max_weights=None):
    """Raise unless a model of ``n_labels`` labels and ``n_attributes`` weighted
    attributes is in proportion to a file of ``n_bytes`` bytes (or within
    ``max_weights``)."""
    cells = weight_count(n_labels, n_attributes)
    limit = weight_limit(n_bytes, max_weights)
    if cells > limit:
        raise CRFsuiteFormatError(
            f"{n_labels} labels and {n_attributes} weighted attributes make a model of "
            f"{cells} weights ({cells * 8 / 2 ** 20:.0f} MB), more than the {limit} allowed "
            f"for a {n_bytes}-byte file: refused rather than allocated. If the file is "
            f"trusted, pass a larger max_weights.")


def read_crfsuite(data, max_weights=None):
    """The :class:`CRFsuiteWeights` of the bytes of a CRFsuite model file.

    Every array read is in proportion to the bytes actually present: each
    count is checked against the records the file holds before anything is
    allocated; the state weights come as a sparse matrix of the file's
    features, and the dense transitions (labels x labels) only once the
    labels' names have been read and their count is within
    :func:`weight_limit`.

    Raises
    ------
    CRFsuiteFormatError
        If the bytes are not a CRFsuite 0.12 model, or are truncated or
        inconsistent (an offset or a count pointing past the bytes, an id out
        of range, a non-finite weight), or would make more dense weights than
        ``max_weights`` (default: :func:`weight_limit`).
    """
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise CRFsuiteFormatError(f"{len(data)} bytes are too few for a CRFsuite model "
                                  f"(its header alone has {_HEADER.size}).")
    (magic, size, model_type, version, _, n_labels, n_attributes, features_at,
     labels_at, attributes_at, label_refs_at, attribute_refs_at) = _HEADER.unpack_from(data)
    if magic != _MAGIC or model_type != _MODEL_TYPE:
        raise CRFsuiteFormatError(f"not a CRFsuite model file: it starts with {magic!r} "
                                  f"and names the model type {model_type!r} (expected "
                                  f"{_MAGIC!r} and {_MODEL_TYPE!r}).")
    if version != _VERSION:
        raise CRFsuiteFormatError(f"CRFsuite model format version {version}; this reader "
                                  f"knows version {_VERSION} (CRFsuite 0.12).")
    if size > len(data):
        raise CRFsuiteFormatError(f"the header says the file has {size} bytes; it has "
                                  f"{len(data)}: the file is truncated.")
    # CRFsuite leaves the header's feature count at 0: the chunk's own is the count
    chunk_id, _, n_features = _CHUNK.unpack(_span(data, features_at, _CHUNK.size,
                                                  "the feature chunk's header"))
    if chunk_id != b"FEAT":
        raise CRFsuiteFormatError(f"the feature chunk at byte {features_at} is not a FEAT "
                                  f"chunk (it starts with {chunk_id!r}).")
    features = np.frombuffer(_span(data, features_at + _CHUNK.size,
                                   _FEATURE.itemsize * n_features, "the features"),
                             dtype=_FEATURE)
    labels = _read_strings(data, labels_at, n_labels, "label")
    attributes = _read_strings(data, attributes_at, n_attributes, "attribute")
    # the counts are those of names actually stored; the dense transitions they make
    # must still be in proportion to the file (the state weights stay sparse here)
    check_weight_count(n_labels, 0, len(data), max_weights)
    state_parts = None
    transitions = np.zeros((n_labels, n_labels))
    # the weights as CRFsuite's tagger reads them: through the references
    for kind, at, chunk, count, what in (
            (_TRANSITION, label_refs_at, b"LFRF", n_labels, "label"),
            (_STATE, attribute_refs_at, b"AFRF", n_attributes, "attribute")):
        items, ids = _references(data, at, chunk, count, what)
        if ids.size and int(ids.max()) >= n_features:
            raise CRFsuiteFormatError(f"a {what} references feature {int(ids.max())} of "
                                      f"{n_features}.")
        referenced = features[ids]
        wrong = np.flatnonzero((referenced["type"] != kind) | (referenced["src"] != items))
        if wrong.size:
            raise CRFsuiteFormatError(f"{what} {items[wrong[0]]} references a feature that "
                                      f"is not one of its {('transition', 'state')[kind == 0]}"
                                      f" features.")
        destinations = referenced["dst"].astype(np.int64)
        if destinations.size and int(destinations.max()) >= n_labels:
            raise CRFsuiteFormatError(f"a feature of a {what} leads to label "
                                      f"{int(destinations.max())} of {n_labels}.")
        if not np.all(np.isfinite(referenced["weight"])):
            raise CRFsuiteFormatError(f"a feature of a {what} has a non-finite weight.")
        if kind == _STATE:
            state_parts = (referenced["weight"], (items, destinations))
        else:
            # CRFsuite's tagger assigns, so the last of two features of a pair wins
            transitions[items, destinations] = referenced["weight"]
    # duplicates add up, as CRFsuite's tagger sums the features an attribute references
    state = sp.csr_matrix(state_parts, shape=(n_attributes, n_labels), dtype=np.float64)
    state.sum_duplicates()
    state.eliminate_zeros()
    return CRFsuiteWeights(labels, attributes, state, transitions)


# --- writing ------------------------------------------------------------------------

def _c_string(name, what):
    key = name.encode("utf-8")
    if b"\0" in key:
        raise ValueError(f"the {what} {name!r} holds a NUL character, which CRFsuite's "
                         f"string databases cannot store.")
    return key + b"\0"


def _string_database(names, what):
    """The bytes of a CQDB database of ``names``, name ``i`` with id ``i``."""
    records, positions = bytearray(), []
    tables = [[] for _ in range(_N_TABLES)]
    for ident, name in enumerate(names):
        key = _c_string(name, what)
        position = _CQDB_DATA + len(records)
        positions.append(position)
        records += struct.pack("<II", ident, len(key)) + key
        hashed = hashlittle(key)
        tables[hashed % _N_TABLES].append((hashed, position))
    body, references = bytearray(), []
    end = _CQDB_DATA + len(records)
    for table in tables:
        # each table twice as long as its entries, filled by linear probing
        n = 2 * len(table)
        references.append((end + len(body) if table else 0, n))
        slots = [(0, 0)] * n
        for hashed, position in table:
            slot = (hashed >> 8) % n
            while slots[slot][1] != 0:
                slot = (slot + 1) % n
            slots[slot] = (hashed, position)
        body += b"".join(struct.pack("<II", *entry) for entry in slots)
    ids_at = end + len(body)
    body += struct.pack(f"<{len(positions)}I", *positions)
    size = _CQDB_DATA + len(records) + len(body)
    header = _CQDB_HEADER.pack(b"CQDB", size, 0, _BYTE_ORDER, len(names),
                               ids_at if names else 0)
    refs = b"".join(struct.pack("<II", *reference) for reference in references)
    return header + refs + bytes(records) + bytes(body)


def _align(out):
    out += b"\0" * (-len(out) % 4)


def _reference_chunk(out, chunk, lists, n_slots):
    """Append a reference chunk (``n_slots`` offsets, ``lists`` filled) to ``out``."""
    _align(out)
    begin = len(out)
    lists_at = begin + _CHUNK.size + 4 * n_slots
    offsets, body = [], bytearray()
    for ids in lists:
        offsets.append(lists_at + len(body))
        body += struct.pack(f"<I{len(ids)}I", len(ids), *ids)
    offsets += [0] * (n_slots - len(lists))
    out += _CHUNK.pack(chunk, _CHUNK.size + 4 * n_slots + len(body), n_slots)
    out += struct.pack(f"<{n_slots}I", *offsets) + body
    return begin


def write_crfsuite(weights):
    """The bytes of a CRFsuite model file of :class:`CRFsuiteWeights`.

    Only the non-zero weights become features, and only the attributes with
    one are stored, as CRFsuite stores its models.
    """
    state = sp.csr_matrix(weights.state, dtype=np.float64)
    state.sum_duplicates()  # sorted labels within each attribute, as CRFsuite writes them
    state.eliminate_zeros()
    transitions = np.asarray(weights.transitions, dtype=np.float64)
    n_labels = len(weights.labels)
    if not (np.all(np.isfinite(state.data)) and np.all(np.isfinite(transitions))):
        raise ValueError("CRFsuite stores finite weights only; these have an infinite or "
                         "NaN weight.")
    kept = np.flatnonzero(np.diff(state.indptr))
    features, attribute_lists, label_lists = [], [], []
    for new_id, attribute in enumerate(kept.tolist()):
        lo, hi = state.indptr[attribute], state.indptr[attribute + 1]
        labels, values = state.indices[lo:hi].tolist(), state.data[lo:hi].tolist()
        attribute_lists.append(range(len(features), len(features) + len(labels)))
        features += [(_STATE, new_id, label, value) for label, value in zip(labels, values)]
    for source in range(n_labels):
        targets = np.flatnonzero(transitions[source]).tolist()
        label_lists.append(range(len(features), len(features) + len(targets)))
        features += [(_TRANSITION, source, target, transitions[source, target])
                     for target in targets]
    attributes = [weights.attributes[a] for a in kept.tolist()]
    out = bytearray(_HEADER.size)
    features_at = len(out)
    out += _CHUNK.pack(b"FEAT", _CHUNK.size + _FEATURE.itemsize * len(features),
                       len(features))
    out += b"".join(struct.pack("<IIId", *feature) for feature in features)
    labels_at = len(out)
    out += _string_database(weights.labels, "label")
    attributes_at = len(out)
    out += _string_database(attributes, "attribute")
    # CRFsuite leaves two more label slots, empty, after the labels' own
    label_refs_at = _reference_chunk(out, b"LFRF", label_lists, n_labels + 2)
    attribute_refs_at = _reference_chunk(out, b"AFRF", attribute_lists, len(attributes))
    out[:_HEADER.size] = _HEADER.pack(
        _MAGIC, len(out), _MODEL_TYPE, _VERSION, 0, n_labels, len(attributes),
        features_at, labels_at, attributes_at, label_refs_at, attribute_refs_at)
    return bytes(out)
