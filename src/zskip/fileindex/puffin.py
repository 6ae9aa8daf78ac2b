"""Puffin files (Iceberg's container for statistics and indexes), read and written in pure Python.

Layout (Iceberg Puffin spec): ``PFA1``, the blobs back to back, then the footer: ``PFA1``, a JSON
payload describing every blob (type, fields, snapshot id, sequence number, offset, length,
optional compression codec, properties), the payload length (4 bytes little-endian), 4 flag bytes
and ``PFA1`` again.  zskip adds a CRC-32 of each blob's stored bytes to its properties
(``zskip.crc32``) so a damaged blob is detected and treated as absent.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pyarrow as pa

from zskip.errors import CorruptIndexError

__all__ = ["BlobMetadata", "CorruptIndexError", "PuffinReader", "PuffinWriter", "decode_blob", "read_puffin"]

MAGIC = b"PFA1"
CHECKSUM = "zskip.crc32"
_FOOTER_TAIL = 4 + 4 + 4  # payload size, flags, magic


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec:
            data["compression-codec"] = self.compression_codec
        if self.properties:
            data["properties"] = dict(self.properties)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BlobMetadata:
        return cls(
            type=str(data["type"]),
            fields=tuple(int(f) for f in data.get("fields", ())),
            snapshot_id=int(data.get("snapshot-id", -1)),
            sequence_number=int(data.get("sequence-number", -1)),
            offset=int(data["offset"]),
            length=int(data["length"]),
            compression_codec=data.get("compression-codec"),
            properties=dict(data.get("properties", {})),
        )


class PuffinWriter:
    """Writes blobs to a binary stream, then the footer on :meth:`finish`."""

    def __init__(self, out: BinaryIO, *, properties: Mapping[str, str] | None = None) -> None:
        self._out = out
        self._blobs: list[BlobMetadata] = []
        self._properties = dict(properties or {})
        self._position = 0
        self._write(MAGIC)

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._position += len(data)

    def add(
        self,
        blob_type: str,
        data: bytes,
        *,
        fields: Sequence[int] = (),
        snapshot_id: int = -1,
        sequence_number: int = -1,
        compress: bool = True,
        properties: Mapping[str, str] | None = None,
    ) -> BlobMetadata:
        codec = None
        stored = data
        if compress and len(data) > 64:
            stored = pa.Codec("zstd").compress(data, asbytes=True)
            codec = "zstd"
        return self.add_stored(
            blob_type,
            stored,
            codec=codec,
            fields=fields,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            properties=properties,
        )

    def add_stored(
        self,
        blob_type: str,
        stored: bytes,
        *,
        codec: str | None,
        fields: Sequence[int] = (),
        snapshot_id: int = -1,
        sequence_number: int = -1,
        properties: Mapping[str, str] | None = None,
    ) -> BlobMetadata:
        """Add a blob already in its stored form (compressed with ``codec``), e.g. copied from another file."""
        props = dict(properties or {})
        props[CHECKSUM] = str(zlib.crc32(stored))
        meta = BlobMetadata(
            type=blob_type,
            fields=tuple(fields),
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            offset=self._position,
            length=len(stored),
            compression_codec=codec,
            properties=props,
        )
        self._write(stored)
        self._blobs.append(meta)
        return meta

    def finish(self) -> list[BlobMetadata]:
        payload = {"blobs": [b.to_json() for b in self._blobs]}
        if self._properties:
            payload["properties"] = self._properties  # type: ignore[assignment]
        encoded = json.dumps(payload, separators=(",", ":")).encode()
        self._write(MAGIC + encoded + struct.pack("<i", len(encoded)) + bytes(4) + MAGIC)
        return list(self._blobs)


class PuffinReader:
    """Reads the footer of a Puffin file held in memory or by a seekable stream, then blobs on demand."""

    def __init__(self, source: BinaryIO, *, size: int, name: str = "puffin file") -> None:
        self._source = source
        self._name = name
        if size < len(MAGIC) + len(MAGIC) + _FOOTER_TAIL:
            raise CorruptIndexError(f"{name} is too short to be a Puffin file ({size} bytes)")
        source.seek(0)
        if source.read(4) != MAGIC:
            raise CorruptIndexError(f"{name} does not start with the Puffin magic PFA1")
        source.seek(size - _FOOTER_TAIL)
        tail = source.read(_FOOTER_TAIL)
        payload_size, flags, magic = struct.unpack("<ii4s", tail)
        if magic != MAGIC or payload_size < 0 or payload_size > size - 12 - _FOOTER_TAIL:
            raise CorruptIndexError(f"{name} has a damaged Puffin footer")
        footer_start = size - _FOOTER_TAIL - payload_size - 4
        source.seek(footer_start)
        if source.read(4) != MAGIC:
            raise CorruptIndexError(f"{name} has a damaged Puffin footer")
        payload = source.read(payload_size)
        if flags & 1:
            payload = _lz4_frame_decompress(payload, f"the Puffin footer of {name}")
        try:
            footer = json.loads(payload)
            self.blobs = [BlobMetadata.from_json(b) for b in footer.get("blobs", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptIndexError(f"{name} has an unreadable Puffin footer: {exc}") from None
        self.properties: dict[str, str] = dict(footer.get("properties", {}))

    def read(self, blob: BlobMetadata) -> bytes:
        """The blob's bytes, decompressed; :class:`CorruptIndexError` when its checksum fails."""
        self._source.seek(blob.offset)
        stored = self._source.read(blob.length)
        if len(stored) != blob.length:
            raise CorruptIndexError(f"blob {blob.type} at offset {blob.offset} of {self._name} is cut short")
        return decode_blob(
            stored,
            codec=blob.compression_codec,
            checksum=blob.properties.get(CHECKSUM),
            name=f"blob {blob.type} at offset {blob.offset} of {self._name}",
        )


def decode_blob(stored: bytes, *, codec: str | None, checksum: str | None, name: str) -> bytes:
    """A blob's bytes from its stored bytes: checksum verified, then decompressed."""
    if checksum is not None and str(zlib.crc32(stored)) != checksum:
        raise CorruptIndexError(f"{name} is damaged (checksum mismatch)")
    if codec is None:
        return stored
    if codec != "zstd":
        raise CorruptIndexError(f"{name}: compression codec {codec!r} is not supported")
    try:
        return _zstd_decompress(stored, name)
    except CorruptIndexError:
        raise
    except Exception as exc:
        raise CorruptIndexError(f"{name} does not decompress: {exc}") from None


def read_puffin(data: bytes, *, name: str = "puffin file") -> PuffinReader:
    import io

    return PuffinReader(io.BytesIO(data), size=len(data), name=name)


# What a blob may decompress to: at most MAX_EXPANSION times its stored size (zstd reaches a few hundred
# on zskip's blobs; a bitmap of runs, the most compressible, stays under 1,000) plus a page, and never
# more than MAX_DECOMPRESSED.  A blob declaring more is damaged, not a reason to allocate what it says:
# the size comes from the file, which anyone who can write the table's folder could have written.
MAX_EXPANSION = 4_096
MAX_DECOMPRESSED = 512 * 1024 * 1024


def checked_size(declared: int, stored: int, name: str) -> int:
    """``declared`` (the decompressed size a blob says it has) when it is plausible for ``stored`` bytes;
    ``CorruptIndexError`` otherwise, before anything is allocated."""
    if declared < 0 or declared > min(MAX_DECOMPRESSED, stored * MAX_EXPANSION + 4_096):
        raise CorruptIndexError(
            f"{name} declares {declared:,} bytes once decompressed from {stored:,}: more than zskip ever "
            "writes, so it is damaged (its index is not used: rebuild it with refresh_indexes)"
        )
    return declared


def _bounded_stream(data: bytes, codec: str, name: str) -> bytes:
    """``data`` decompressed as a stream whose size is not declared, read no further than its bound."""
    import io

    bound = min(MAX_DECOMPRESSED, len(data) * MAX_EXPANSION + 4_096)
    out = pa.CompressedInputStream(io.BytesIO(data), codec).read(bound + 1)
    checked_size(len(out), len(data), name)
    return out


def _zstd_decompress(data: bytes, name: str = "a blob") -> bytes:
    # the frame header holds the content size when the writer knew it (zskip's and Java's do)
    size = _zstd_content_size(data)
    codec = pa.Codec("zstd")
    if size is not None:
        return codec.decompress(data, decompressed_size=checked_size(size, len(data), name), asbytes=True)
    return _bounded_stream(data, "zstd", name)


def _zstd_content_size(frame: bytes) -> int | None:
    if len(frame) < 6 or frame[:4] != b"\x28\xb5\x2f\xfd":
        raise ValueError("not a zstd frame")
    descriptor = frame[4]
    size_flag = descriptor >> 6
    single_segment = (descriptor >> 5) & 1
    dict_flag = descriptor & 3
    position = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0:
        return None
    value = int.from_bytes(frame[position : position + width], "little")
    return value + 256 if width == 2 else value


def _lz4_frame_decompress(data: bytes, name: str = "a Puffin footer") -> bytes:
    return _bounded_stream(data, "lz4", name)
