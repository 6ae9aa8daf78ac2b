package io.zskip.scan;

import java.util.List;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.Expression;

/**
 * The row groups of one data file that lie in bytes [start, start + length), read as a task of their
 * own.  Iceberg's readers read a task's byte range of its file (Parquet keeps the row groups whose
 * middle lies in it), as they do for the splits Iceberg makes of a large file; everything else (the
 * data file entry, its delete files and deletion vectors, residual, schema and spec) is the task
 * Iceberg planned for the whole file.  The data file entry is never altered, so every FileIO reads
 * the file at its own length.  A range does not split again: it is what zskip's planner chose.
 */
public final class RowGroupRange implements FileScanTask {
  private static final long serialVersionUID = 1L;

  private final FileScanTask whole;
  private final long start;
  private final long length;

  public RowGroupRange(FileScanTask whole, long start, long end) {
    if (start < 0 || end <= start || end > whole.file().fileSizeInBytes()) {
      throw new IllegalArgumentException(
          "byte range [" + start + ", " + end + ") is not inside " + whole.file().location() + " ("
              + whole.file().fileSizeInBytes() + " bytes)");
    }
    this.whole = whole;
    this.start = start;
    this.length = end - start;
  }

  @Override
  public DataFile file() {
    return whole.file();
  }

  @Override
  public List<DeleteFile> deletes() {
    return whole.deletes();
  }

  @Override
  public Schema schema() {
    return whole.schema();
  }

  @Override
  public PartitionSpec spec() {
    return whole.spec();
  }

  @Override
  public long start() {
    return start;
  }

  @Override
  public long length() {
    return length;
  }

  @Override
  public Expression residual() {
    return whole.residual();
  }

  @Override
  public Iterable<FileScanTask> split(long targetSplitSize) {
    return List.of(this);
  }

  @Override
  public String toString() {
    return "RowGroupRange(" + file().location() + ", start=" + start + ", length=" + length + ")";
  }
}
