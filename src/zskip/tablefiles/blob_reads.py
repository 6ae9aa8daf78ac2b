"""Reading index blobs and footer copies from index files: what a plan reads of each entry (whole, its
head, the rest after a cached head, a dictionary's blocks), neighbours in one index file in one
request (the gaps below), several requests at a time, decoded on the reading threads and kept in the
planning cache by Puffin path and offset (index files never change).  ``zskip.tablefiles.index_blobs``
answers predicates from what this reads.

A kind whose blob starts with a head that loads alone (``IndexKind.head_length``: a bitmap's
dictionary and non-null rows; the manifest's ``head`` column) is read head first
(``index_blobs.decided``): an index loaded from its head raises ``RestNotRead`` where it needs its
bit slices, and only those files' rests are read, in one more round (what a round reads is decoded
on the reading threads, several blobs at a time). A bitmap dictionary of whole numbers, dates or
timestamps larger than 256 KiB (a nearly unique column in a large file) is stored in blocks of 2,048
values after the head (format 3, ``bitmap_blocks.DictionaryBlocks``: the head keeps each block's first
value and the last value), so between the two rounds the blocks that would hold an equality's, an IN
list's or a join key set's values are read (``read_parts``, ``IndexKind.parts_for`` /
``with_parts``): a few kilobytes a file where the whole dictionary is hundreds. A smaller dictionary
stays in the head when it is written: a block is one more request per file. When index files are
merged (``build.copy_blobs``), a dictionary past 16 KiB goes in blocks too
(``IndexKind.merged_form``, ``bitmap.in_blocks``: the non-null rows and slices kept as stored), and
every blob's blocks of one column are copied once more, side by side in one Puffin blob, ordered by
each block's first value (``IndexKind.stored_parts``; the manifest's ``part_offsets`` says where
each block's copy is): the blocks that would hold one value, of every candidate file, lie close
together and come in one request (``COPIED_PART_GAP``). A blob read whole keeps its blocks as stored
(checked) and decodes only those a condition looks in (``DictionaryBlocks.keys_in``). A head that
got its blocks between the rounds needs of its rest only the bit slices after the blocks
(``IndexKind.parts_span`` / ``with_rest_after_parts``); a block no condition asked for then is read
when one looks in it (``DictionaryBlocks.fetch``; a failed read says the index is damaged, and a
damaged index says nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import pyarrow as pa

from zskip.fileindex.answers import RestNotRead
from zskip.fileindex.build import read_stored
from zskip.fileindex.entries import BlobEntry, Stored
from zskip.fileindex.kinds import kind_named
from zskip.fileindex.manifest import IndexManifest
from zskip.fileindex.puffin import CorruptIndexError, decode_blob
from zskip.retries import kept_failing
from zskip.storage import FileAccess, at_once

__all__ = [
    "APART_HEAD_GAP",
    "BLOB_GAP",
    "COPIED_PART_GAP",
    "COPY_GAP",
    "HEAD_GAP",
    "PART_GAP",
    "BlobCache",
    "footer_copies",
    "footer_copy_rest",
    "load_many",
    "read_parts",
    "unread_bytes",
]

log = logging.getLogger(__name__)


class BlobCache(Protocol):
    def get_or_load(self, key: Hashable, load: Callable[[], Any]) -> Any: ...

    def put(self, key: Hashable, value: Any) -> None: ...

    def __contains__(self, key: Hashable) -> bool: ...


# Blobs of one index file closer than this are read in one request with what lies between them.  A
# request to an object store costs about what some hundred kilobytes of transfer do once sixteen run
# at a time (``zskip.storage.at_once``); a merged index file holds every column's blobs of many data
# files, so a wider gap reads the blobs the index stage chose not to (other columns', other files').
BLOB_GAP = 256 << 10
BLOB_RUN = 16 << 20  # at most this many bytes in one request
# Heads are read to avoid reading the rest of their blobs, so a run of heads bridges only small gaps
# (a merged index file holds one column's blobs of many data files one after another: with the
# gap above, a run of heads would read the whole file).
HEAD_GAP = 64 << 10
# Between heads stored apart from their rests (a merged index file's) lie only other heads, each a
# fraction of its blob: a run of them bridges a few.
APART_HEAD_GAP = 256 << 10
# Parts of rests (a dictionary's blocks, a few kilobytes each) lie in blobs of other files' rests
# apart: a run bridges only small gaps.
PART_GAP = 16 << 10
# A merged index file keeps a copy of a column's parts of every data file side by side, ordered by
# their first values: the parts one value needs are a few among their neighbours, and a run reads
# through the neighbours rather than making another request.
COPIED_PART_GAP = 128 << 10
# A merged index file holds its footer copies first (the heads of format 2 copies, a few kilobytes
# each, one after another): a run bridges the copies of the files a plan does not ask for.
COPY_GAP = 256 << 10


@dataclass(frozen=True)
class _Piece:
    """Bytes ``[start, end)`` of one index file to read for one manifest entry, and what they give:
    the blob whole, its head, or the rest after a cached head."""

    row: Stored
    part: str  # "whole", "head", "rest", "rest after parts", "stored rest" or "part <n>"
    start: int
    end: int

    @property
    def key(self) -> Hashable:
        if self.part == "stored rest" or self.part.startswith("part "):
            return (*_key(self.row), self.part)  # type: ignore[misc]
        return _key(self.row, "head" if self.part == "head" else "whole")


def load_many(rows: Sequence[BlobEntry], cache: BlobCache | None, access: FileAccess, *, heads: bool) -> list[Any]:
    """Each entry's decoded blob (or the error that kept it from loading); on a cold plan the missing
    ones are read first, neighbours in one index file together, several requests at a time.  A blob
    wanted whole whose head and rest are stored apart has both read in that same round."""
    wanted = [_wanted(row, cache, heads) for row in rows]
    rests: dict[Hashable, bytes] = {}  # rests of blobs stored apart, read in this round beside their heads
    if cache is not None:
        missing = []
        for piece in wanted:
            if piece.key in cache:
                continue
            if piece.part == "whole" and _apart(piece.row):
                head, rest = _parts(piece.row)
                missing.extend([rest] if head.key in cache else [head, rest])
            else:
                missing.append(piece)
        if len(missing) > 1:
            read = at_once([partial(_read_run, run, access=access) for run in _runs(missing)])
            parts = [part for outcome in read if not isinstance(outcome, Exception) for part in outcome]
            rests.update((piece.key, data) for piece, data in parts if piece.part == "stored rest")
            # decoded several at a time too: a head's dictionary is a small Parquet file, whose reading
            # lets go of Python's lock
            blobs = [(piece, data) for piece, data in parts if piece.part != "stored rest"]
            at_once([partial(_cache_decoded, piece, data, cache, access) for piece, data in blobs])
    return [_one(piece, cache, access, rests) for piece in wanted]


def unread_bytes(manifest: IndexManifest, data_file: str, field_ids: set[int], cache: BlobCache | None) -> int:
    """The bytes of index files still to read for ``data_file``'s blobs on ``field_ids`` whole (a blob
    ``cache`` holds costs nothing; one whose head it holds costs its rest)."""
    total = 0
    for row in manifest.entries_by_file.get(data_file, ()):
        if row.field_id in field_ids:
            piece = _wanted(row, cache, heads=False)  # what the index stage would read of it
            total += 0 if cache is not None and piece.key in cache else piece.end - piece.start
    return total


def _rest_start(row: Stored) -> int:
    """Where the rest after a blob's (or footer copy's) head is: apart (``rest_offset``), or right after it."""
    if row.rest_offset is not None:
        return row.rest_offset
    return row.offset + _head(row)


def _head(row: Stored) -> int:
    """The length of ``row``'s head (asked only of a blob or copy that has one)."""
    assert row.head is not None, f"{row.puffin_path}@{row.offset} has no head"
    return row.head


def _entry(row: Stored) -> BlobEntry:
    """``row`` as an index's entry (asked only where a footer copy never reaches)."""
    assert isinstance(row, BlobEntry), row
    return row


def _apart(row: Stored) -> bool:
    return row.rest_offset is not None


def _parts(row: Stored) -> tuple[_Piece, _Piece]:
    """A blob stored apart as its head and its rest's bytes (``"stored rest"``: kept as read, undecoded)."""
    start, head, rest = row.offset, _head(row), row.rest_offset
    assert rest is not None
    return _Piece(row, "head", start, start + head), _Piece(row, "stored rest", rest, rest + row.length - head)


def footer_copies(rows: Sequence[Stored], access: FileAccess) -> list[bytes | Exception]:
    """The footer copies the manifest's ``rows`` (its ``footers``) point at, or the error that kept each
    from loading: of a copy with a head (format 2), the head alone (its own checksum is inside; the
    rest is read where a column needs the footer itself, ``footer_copy_rest``), else the copy whole,
    decoded.  Neighbours in one index file come in one request, several requests at a time (a
    merged index file holds its copies' heads one after another)."""
    pieces = [
        _Piece(row, "whole", int(row.offset), _end(row))
        if row.head is None
        else _Piece(row, "head", int(row.offset), int(row.offset) + int(row.head))
        for row in rows
    ]
    found: dict[Hashable, bytes | Exception] = {}

    def read_run(run: list[_Piece]) -> None:
        start = run[0].start
        try:
            data = access.read(run[0].row.puffin_path, offset=start, length=run[-1].end - start)
        except OSError as exc:
            found.update((piece.key, exc) for piece in run)
            return
        for piece in run:
            row, part = piece.row, data[piece.start - start : piece.end - start]
            if piece.part == "head":
                found[piece.key] = part
                continue
            try:
                found[piece.key] = decode_blob(
                    part, codec=row.codec, checksum=row.checksum, name=f"the footer copy of {row.data_file}"
                )
            except CorruptIndexError as exc:
                found[piece.key] = exc

    at_once([partial(read_run, run) for run in _runs(pieces, gap=COPY_GAP)])
    return [found[piece.key] for piece in pieces]


def footer_copy_rest(row: Stored, access: FileAccess) -> bytes:
    """The stored rest (after its head) of the footer copy the manifest's footers ``row`` points at."""
    return access.read(row.puffin_path, offset=_rest_start(row), length=row.length - _head(row))


def _wanted(row: BlobEntry, cache: BlobCache | None, heads: bool) -> _Piece:
    """What to load of ``row``'s blob: whole if it is cached whole or has no head; else its head (with
    ``heads``), or the rest after its cached head."""
    start, end, head = int(row.offset), _end(row), row.head
    if head is None or cache is None or _key(row, "whole") in cache:
        return _Piece(row, "whole", start, end)
    if heads:
        return _Piece(row, "head", start, start + int(head))
    if _key(row, "head") in cache:
        rest = _rest_start(row)
        try:
            skip = kind_named(row.kind).parts_span(cache.get_or_load(_key(row, "head"), partial(_missing_head, row)))
        except RestNotRead:  # the head left the cache since
            return _Piece(row, "whole", start, end)
        return _Piece(row, "rest after parts" if skip else "rest", rest + skip, rest + int(row.length) - int(head))
    return _Piece(row, "whole", start, end)


def _one(piece: _Piece, cache: BlobCache | None, access: FileAccess, rests: dict[Hashable, bytes]) -> Any:
    def load() -> Any:
        row = _entry(piece.row)
        if piece.part == "whole" and _apart(row):
            head, rest = _parts(row)
            if cache is not None and rest.key in rests and head.key in cache:
                return kind_named(row.kind).with_rest(
                    cache.get_or_load(head.key, partial(_missing_head, row)), rests[rest.key]
                )
            return _decoded(piece, read_stored(row, access), cache, access)  # head and rest, one after another
        data = access.read(row.puffin_path, offset=piece.start, length=piece.end - piece.start)
        return _decoded(piece, data, cache, access)

    try:
        return load() if cache is None else cache.get_or_load(piece.key, load)
    except (CorruptIndexError, RestNotRead, ValueError, OSError) as exc:
        return exc


def _read_run(run: list[_Piece], *, access: FileAccess) -> list[tuple[_Piece, bytes]]:
    """Read one run of pieces in one request: each piece with its bytes.  A run that fails is read
    again piece by piece by ``_load_many``, which reports the error for that blob."""
    start = run[0].start
    data = access.read(run[0].row.puffin_path, offset=start, length=run[-1].end - start)
    return [(piece, data[piece.start - start : piece.end - start]) for piece in run]


def _cache_decoded(piece: _Piece, data: bytes, cache: BlobCache, access: FileAccess) -> None:
    """Cache the blob ``data`` (the bytes of ``piece``) decodes to; one that does not decode is left
    for ``_load_many`` to read again and report."""
    try:
        decoded = _decoded(piece, data, cache, access)
    except (CorruptIndexError, RestNotRead, ValueError):
        return
    cache.get_or_load(piece.key, partial(_given, decoded))


def _given(value: Any) -> Any:
    return value


def _key(row: Stored, part: str = "whole") -> Hashable:
    if part == "head":
        return ("blob", row.puffin_path, row.offset, "head")
    return ("blob", row.puffin_path, row.offset)


def _end(row: Stored) -> int:
    return int(row.offset) + int(row.length)


def _runs(pieces: list[_Piece], *, gap: int | None = None) -> list[list[_Piece]]:
    """``pieces`` in runs: of one index file, in order, with gaps under ``BLOB_GAP`` (``HEAD_GAP`` next
    to a head, ``APART_HEAD_GAP`` between heads stored apart, ``PART_GAP`` next to a part of a rest,
    ``COPIED_PART_GAP`` between copied parts; ``gap`` if given) and under ``BLOB_RUN`` bytes a run."""
    runs: list[list[_Piece]] = []
    ordered = sorted({p.key: p for p in pieces}.values(), key=lambda p: (p.row.puffin_path, p.start))
    for piece in ordered:
        last = runs[-1] if runs else None
        if (
            last is not None
            and last[-1].row.puffin_path == piece.row.puffin_path
            and piece.start - last[-1].end <= (_gap(last[-1], piece) if gap is None else gap)
            and piece.end - last[0].start <= BLOB_RUN
        ):
            last.append(piece)
        else:
            runs.append([piece])
    return runs


def _gap(before: _Piece, after: _Piece) -> int:
    """The most bytes a run bridges between ``before`` and ``after``."""
    parts = [p for p in (before, after) if p.part.startswith("part ")]
    if parts:
        copied = len(parts) == 2 and all(_entry(p.row).part_offsets for p in parts)
        return COPIED_PART_GAP if copied else PART_GAP
    heads = [p for p in (before, after) if p.part == "head"]
    if not heads:
        return BLOB_GAP
    return APART_HEAD_GAP if all(_apart(p.row) for p in heads) else HEAD_GAP


def _decoded(piece: _Piece, data: bytes, cache: BlobCache | None, access: FileAccess) -> Any:
    """The index ``data`` (the bytes of ``piece``) loads as."""
    row = _entry(piece.row)
    kind = kind_named(row.kind)
    if piece.part == "head":
        return kind.load(data)  # a head is stored as it is written: its own checksum is inside
    if piece.part in ("rest", "rest after parts"):
        assert cache is not None
        head = cache.get_or_load(_key(row, "head"), partial(_missing_head, row))
        if piece.part == "rest after parts":
            return kind.with_rest_after_parts(head, data, partial(_read_part, row, access))
        return kind.with_rest(head, data)
    name = f"{row.kind} index of {row.column} for {row.data_file}"
    return kind.load(decode_blob(data, codec=row.codec, checksum=row.checksum, name=name))


def _read_part(row: BlobEntry, access: FileAccess, part: int, at: int, length: int) -> bytes:
    """Part ``part`` of ``row``'s rest (``at`` bytes into it, ``length`` long): its copy beside other
    files' parts where the index file keeps one, else in the rest.  A failed read says the part is
    damaged (``ValueError``): the index then says nothing of the condition that looked in it."""
    copies = row.part_offsets
    begin = int(copies[part]) if copies else _rest_start(row) + at
    try:
        return access.read(row.puffin_path, offset=begin, length=length)
    except OSError as exc:
        if kept_failing(exc):
            raise  # the store kept failing, not the index: planning stops here (zskip.degraded.tolerate)
        raise ValueError(f"part {part} of the index of {row.column} for {row.data_file}: {exc}") from None


def _missing_head(row: BlobEntry) -> Any:
    raise RestNotRead(f"the head of the index of {row.column} for {row.data_file} left the cache")


def read_parts(
    manifest: IndexManifest,
    files: list[str],
    field_ids: set[int],
    probes: Mapping[int, Sequence[Any] | pa.Array],
    cache: BlobCache,
    access: FileAccess,
) -> bool:
    """Read, for the heads of ``files``' blobs on ``field_ids`` (cached by the round before), the parts
    of their rests each needs to tell which rows hold the values ``probes`` gives its field (a
    dictionary's block that would hold them: ``IndexKind.parts_for``), all at once, and cache each head
    with them; whether any was read.  A part that cannot be read or decoded is left out: its index
    then needs its whole rest, which the next round reads and reports."""
    pieces: list[_Piece] = []
    heads: dict[Hashable, tuple[BlobEntry, Any]] = {}
    for path in files:
        for row in manifest.entries_by_file.get(path, ()):
            key = _key(row, "head")
            if row.field_id not in field_ids or row.field_id not in probes or key not in cache:
                continue
            if _key(row) in cache:
                continue  # read whole already: it reads any block it lacks when a condition looks in it
            kind = kind_named(row.kind)
            head = cache.get_or_load(key, partial(_missing_head, row))
            parts = kind.parts_for(head, probes[row.field_id])
            if not parts:
                continue
            heads[key] = (row, head)
            start, copies = _rest_start(row), row.part_offsets
            for n, (at, length) in parts.items():
                begin = int(copies[n]) if copies else start + at  # a copy beside other files' parts, else in the rest
                pieces.append(_Piece(row, f"part {n}", begin, begin + length))
    if not pieces:
        return False
    found: dict[Hashable, dict[int, bytes]] = {}
    for outcome in at_once([partial(_read_run, run, access=access) for run in _runs(pieces)]):
        if isinstance(outcome, Exception):
            continue
        for piece, data in outcome:
            found.setdefault(_key(piece.row, "head"), {})[int(piece.part.split()[1])] = data
    for key, read in found.items():
        row, head = heads[key]
        try:
            cache.put(key, kind_named(row.kind).with_parts(head, read))
        except ValueError as exc:
            log.debug("the index of %s for %s: %s", row.column, row.data_file, exc)
    return bool(found)
