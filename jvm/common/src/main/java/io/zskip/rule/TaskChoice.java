package io.zskip.rule;

import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.scan.RowGroupRange;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ResidualEvaluator;

/** The scan tasks a planner's answer keeps of those Iceberg planned. */
public final class TaskChoice {
  // schema and spec JSON, written once per answer (a scan's tasks share one schema and spec)
  private final Map<Object, String> texts = new IdentityHashMap<>();

  /**
   * The tasks to read of a scan's {@code tasks}: {@code files} lists {@code [task]} (the whole file) or
   * {@code [task, [start, end, ...]]} (the row groups in those byte ranges of the file, a task each).
   */
  public List<FileScanTask> chosen(List<FileScanTask> tasks, JsonNode files) {
    List<FileScanTask> chosen = new ArrayList<>();
    for (JsonNode file : files) {
      FileScanTask task = tasks.get(file.get(0).asInt());
      if (file.size() == 1) {
        chosen.add(task); // the whole file (Spark applies the filter again)
        continue;
      }
      JsonNode ranges = file.get(1);
      for (int r = 0; r + 1 < ranges.size(); r += 2) {
        chosen.add(new RowGroupRange(task, ranges.get(r).asLong(), ranges.get(r + 1).asLong()));
      }
    }
    return chosen;
  }

  /** {@code task}'s whole file, without its residual (for a table several scans read, each filtering for itself). */
  public FileScanTask withoutResidual(FileScanTask task) {
    return new BaseFileScanTask(
        task.file(), task.deletes().toArray(new DeleteFile[0]), schemaJson(task.schema()), specJson(task.spec()),
        ResidualEvaluator.unpartitioned(Expressions.alwaysTrue()));
  }

  private String schemaJson(Schema schema) {
    return texts.computeIfAbsent(schema, s -> SchemaParser.toJson(schema));
  }

  private String specJson(PartitionSpec spec) {
    return texts.computeIfAbsent(spec, s -> PartitionSpecParser.toJson(spec));
  }
}
