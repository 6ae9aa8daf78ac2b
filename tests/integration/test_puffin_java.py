"""zskip's Puffin files and Iceberg's Java Puffin classes read each other's files."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest

from zskip.fileindex.bitmap import BitmapIndex
from zskip.fileindex.bloom import BloomIndex
from zskip.fileindex.puffin import PuffinWriter, read_puffin

pytestmark = pytest.mark.integration


def java_bytes(jvm, buffer) -> bytes:
    return bytes(jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(buffer))


def blobs() -> dict[str, bytes]:
    rng = np.random.default_rng(1)
    values = pa.array(rng.integers(0, 10_000, 20_000))
    return {
        "zskip-bloom-v1": BloomIndex.build([values.slice(0, 10_000), values.slice(10_000)]).to_bytes(),
        "zskip-bitmap-v1": BitmapIndex.build(values).to_bytes(),
        "tiny": b"abc",  # too small to compress: stored as is
    }


@pytest.mark.smoke
def test_java_reads_what_zskip_writes(spark, tmp_path) -> None:
    jvm = spark.sparkContext._jvm
    path = tmp_path / "zskip.puffin"
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip test"})
    for blob_type, data in blobs().items():
        writer.add(blob_type, data, fields=[3], snapshot_id=42, sequence_number=7, properties={"column": "c"})
    writer.finish()
    path.write_bytes(buffer.getvalue())

    reader = jvm.org.apache.iceberg.puffin.Puffin.read(jvm.org.apache.iceberg.Files.localInput(str(path))).build()
    try:
        metadata = reader.fileMetadata()
        assert dict(metadata.properties()) == {"created-by": "zskip test"}
        listed = list(metadata.blobs())
        assert [b.type() for b in listed] == list(blobs())
        assert [b.compressionCodec() for b in listed] == ["zstd", "zstd", None]
        assert all(list(b.inputFields()) == [3] and b.snapshotId() == 42 and b.sequenceNumber() == 7 for b in listed)
        assert all(b.properties()["column"] == "c" for b in listed)
        pairs = reader.readAll(metadata.blobs()).iterator()
        read = {}
        while pairs.hasNext():
            pair = pairs.next()
            read[pair.first().type()] = java_bytes(jvm, pair.second())
    finally:
        reader.close()
    assert read == blobs()


@pytest.mark.parametrize("codec", ["ZSTD", "NONE"])
@pytest.mark.smoke
def test_zskip_reads_what_java_writes(spark, tmp_path, codec: str) -> None:
    # (Iceberg 1.10 cannot compress the footer itself: compressFooter() fails with "Unsupported codec: LZ4".)
    jvm = spark.sparkContext._jvm
    puffin = jvm.org.apache.iceberg.puffin
    path = tmp_path / "java.puffin"
    builder = puffin.Puffin.write(jvm.org.apache.iceberg.Files.localOutput(str(path))).createdBy("iceberg java")
    writer = builder.compressBlobs(puffin.PuffinCompressionCodec.valueOf(codec)).build()
    fields = jvm.java.util.ArrayList()
    fields.add(5)
    properties = jvm.java.util.HashMap()
    properties.put("column", "d")
    for blob_type, data in blobs().items():
        payload = jvm.java.nio.ByteBuffer.wrap(bytearray(data))
        writer.add(puffin.Blob(blob_type, fields, 11, 3, payload, None, properties))
    writer.finish()
    writer.close()

    reader = read_puffin(path.read_bytes(), name=str(path))
    assert reader.properties["created-by"] == "iceberg java"
    assert [b.type for b in reader.blobs] == list(blobs())
    assert {b.compression_codec for b in reader.blobs} == ({"zstd"} if codec == "ZSTD" else {None})
    assert all(b.fields == (5,) and b.snapshot_id == 11 and b.properties["column"] == "d" for b in reader.blobs)
    assert {b.type: reader.read(b) for b in reader.blobs} == blobs()
    bloom = BloomIndex.from_bytes(reader.read(reader.blobs[0]))
    assert bloom.might_contain(pa.array([int(pa.array(np.random.default_rng(1).integers(0, 10_000, 1))[0].as_py())]))[0]
