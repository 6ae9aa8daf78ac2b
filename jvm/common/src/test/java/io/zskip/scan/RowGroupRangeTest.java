package io.zskip.scan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.TableScanUtil;
import org.junit.jupiter.api.Test;

class RowGroupRangeTest {
  static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  static final PartitionSpec SPEC = PartitionSpec.unpartitioned();

  static DataFile file(long size) {
    return DataFiles.builder(SPEC)
        .withPath("/tmp/t/data/a.parquet")
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(size)
        .withRecordCount(1000)
        .withSplitOffsets(List.of(4L, 400L, 800L))
        .build();
  }

  static FileScanTask whole(DataFile file, DeleteFile... deletes) {
    return new BaseFileScanTask(file, deletes, SchemaParser.toJson(SCHEMA), PartitionSpecParser.toJson(SPEC),
        ResidualEvaluator.unpartitioned(Expressions.greaterThan("id", 5L)));
  }

  @Test
  void aRangeReadsItsBytesOfTheFileAsTheFileIs() {
    DataFile file = file(1200);
    DeleteFile deletes = FileMetadata.deleteFileBuilder(SPEC)
        .ofPositionDeletes()
        .withPath("/tmp/t/data/a-deletes.parquet")
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(90)
        .withRecordCount(3)
        .build();
    FileScanTask task = whole(file, deletes);
    RowGroupRange range = new RowGroupRange(task, 400, 800);
    assertEquals(400, range.start());
    assertEquals(400, range.length());
    // the data file entry, its deletes and the residual are the planned task's, never altered
    assertSame(task.file(), range.file());
    assertEquals(1200, range.file().fileSizeInBytes());
    assertEquals(task.deletes(), range.deletes());
    assertEquals(task.residual().toString(), range.residual().toString());
    assertEquals(SCHEMA.asStruct(), range.schema().asStruct());
    assertEquals(400 + 90, range.sizeBytes()); // Iceberg's grouping weighs the range, not the file
    assertEquals(2, range.filesCount());
  }

  @Test
  void aRangeIsNotSplitAgainByIcebergsPlanning() {
    FileScanTask task = whole(file(1200));
    List<FileScanTask> ranges = List.of(new RowGroupRange(task, 4, 400), new RowGroupRange(task, 800, 1200));
    // a tiny split size would cut a whole task at every split offset; the ranges stay as they are
    var groups = TableScanUtil.planTaskGroups(ranges, 16, 10, 0);
    List<FileScanTask> planned = groups.stream().flatMap(g -> g.tasks().stream()).toList();
    assertEquals(2, planned.size());
    assertTrue(planned.containsAll(ranges));
    int wholeSplits = 0;
    for (FileScanTask ignored : task.split(16)) {
      wholeSplits++;
    }
    assertEquals(3, wholeSplits);
  }

  @Test
  void aRangeOutsideTheFileIsRefused() {
    FileScanTask task = whole(file(1200));
    assertThrows(IllegalArgumentException.class, () -> new RowGroupRange(task, 400, 1300));
    assertThrows(IllegalArgumentException.class, () -> new RowGroupRange(task, 400, 400));
    assertThrows(IllegalArgumentException.class, () -> new RowGroupRange(task, -1, 10));
  }

  @Test
  void aRangeTravelsToExecutorsByJavaSerialization() throws Exception {
    RowGroupRange range = new RowGroupRange(whole(file(1200)), 400, 800);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(range);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      RowGroupRange copy = (RowGroupRange) in.readObject();
      assertEquals(range.start(), copy.start());
      assertEquals(range.length(), copy.length());
      assertEquals(range.file().location(), copy.file().location());
      assertEquals(SCHEMA.asStruct(), copy.schema().asStruct());
    }
  }
}
