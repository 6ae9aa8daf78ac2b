package io.zskip.scan;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.parquet.ParquetBloomRowGroupFilter;
import org.apache.iceberg.parquet.ParquetDictionaryRowGroupFilter;
import org.apache.iceberg.parquet.ParquetMetricsRowGroupFilter;
import org.apache.iceberg.shaded.org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.iceberg.shaded.org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.iceberg.shaded.org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.iceberg.shaded.org.apache.parquet.io.InputFile;
import org.apache.iceberg.shaded.org.apache.parquet.io.SeekableInputStream;
import org.apache.iceberg.shaded.org.apache.parquet.schema.MessageType;

/**
 * The row groups Iceberg's Parquet reader reads for a task, counted as its reader decides them: those
 * of the task's byte range (by their midpoint, as Parquet assigns a row group to a split) that the
 * task's residual filter cannot rule out by their statistics, dictionaries and bloom filters.  A
 * measurement, from the files themselves: what a benchmark or {@code explain --analyze} reports for
 * plain Spark and for zskip alike.
 *
 * <p>Compiled against the Parquet classes Iceberg's runtime shades (1.12 and later); with a runtime
 * that has none there, the count is unknown (-1).
 */
final class RowGroupsRead {
  private final Map<String, ParquetFileReader> open = new HashMap<>();

  /** The row groups {@code task} reads, or -1 when they cannot be counted (not Parquet, or not readable here). */
  long of(FileScanTask task, FileIO io) {
    if (task.file().format() != FileFormat.PARQUET) {
      return -1;
    }
    try {
      return count(task, io);
    } catch (IOException | RuntimeException | LinkageError e) {
      return -1;
    }
  }

  private long count(FileScanTask task, FileIO io) throws IOException {
    ParquetFileReader reader = open.get(task.file().location());
    if (reader == null) {
      reader = ParquetFileReader.open(new IcebergFile(io.newInputFile(task.file().location())));
      open.put(task.file().location(), reader);
    }
    MessageType schema = reader.getFileMetaData().getSchema();
    ParquetMetricsRowGroupFilter stats = new ParquetMetricsRowGroupFilter(task.schema(), task.residual(), true);
    ParquetDictionaryRowGroupFilter dictionaries =
        new ParquetDictionaryRowGroupFilter(task.schema(), task.residual(), true);
    ParquetBloomRowGroupFilter blooms = new ParquetBloomRowGroupFilter(task.schema(), task.residual(), true);
    long read = 0;
    long end = task.start() + task.length();
    for (BlockMetaData group : reader.getRowGroups()) {
      long midpoint = group.getStartingPos() + group.getCompressedSize() / 2;
      if (midpoint < task.start() || midpoint >= end) {
        continue;
      }
      if (stats.shouldRead(schema, group)
          && dictionaries.shouldRead(schema, group, reader.getDictionaryReader(group))
          && blooms.shouldRead(schema, group, reader.getBloomFilterDataReader(group))) {
        read++;
      }
    }
    return read;
  }

  /** Closes the files opened for counting. */
  void close() {
    for (ParquetFileReader reader : open.values()) {
      try {
        reader.close();
      } catch (IOException e) {
        // counting is over; nothing to do about a file that will not close
      }
    }
    open.clear();
  }

  /** A file of an Iceberg {@link FileIO} as Parquet reads files. */
  private record IcebergFile(org.apache.iceberg.io.InputFile file) implements InputFile {
    @Override
    public long getLength() {
      return file.getLength();
    }

    @Override
    public SeekableInputStream newStream() {
      org.apache.iceberg.io.SeekableInputStream stream = file.newStream();
      return new DelegatingSeekableInputStream(stream) {
        @Override
        public long getPos() throws IOException {
          return stream.getPos();
        }

        @Override
        public void seek(long position) throws IOException {
          stream.seek(position);
        }
      };
    }
  }
}
