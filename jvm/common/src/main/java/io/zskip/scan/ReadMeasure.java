package io.zskip.scan;

import io.zskip.iceberg.Members;
import io.zskip.rule.Plans;
import io.zskip.spark.SparkLine;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.ContentScanTask;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ScanTask;
import org.apache.iceberg.ScanTaskGroup;
import org.apache.iceberg.io.FileIO;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;

/**
 * What the Iceberg scans of one run of a query read, measured from the run in one call: the rows they
 * produced (Spark's {@code numOutputRows}: after Iceberg's reader skipped row groups and applied deletes,
 * before Spark's filter), and the files, tasks and bytes of the tasks they ran (a task of part of a file
 * counts the bytes of its range), and the row groups their reader read ({@link RowGroupsRead}; -1 when
 * some could not be counted).
 */
public final class ReadMeasure {
  private ReadMeasure() {}

  /**
   * Runs {@code frame}'s query once (its rows counted in the JVM) and answers "rows files tasks bytes row-groups"
   * of its Iceberg scans, or only of the scans of {@code only} (a table's name, with or without its catalog;
   * {@code null}: every scan), so that a star query's fact is measured apart from its dimensions.
   */
  public static String of(Dataset<Row> frame, String only) throws ReflectiveOperationException {
    QueryExecution execution = SparkLine.execution(frame);
    execution.toRdd().count();
    long rows = 0;
    long tasks = 0;
    long bytes = 0;
    long rowGroups = 0;
    RowGroupsRead counter = new RowGroupsRead();
    Set<String> files = new HashSet<>();
    List<SparkPlan> pending = new ArrayList<>(List.of(execution.executedPlan()));
    while (!pending.isEmpty()) {
      SparkPlan node = pending.remove(pending.size() - 1);
      if (node instanceof AdaptiveSparkPlanExec adaptive) {
        pending.add(adaptive.executedPlan());
      } else if (node instanceof QueryStageExec stage) {
        pending.add(stage.plan());
      } else if (node instanceof BatchScanExec scan) {
        org.apache.iceberg.Table table = (org.apache.iceberg.Table) Members.call(ScanView.unwrap(scan.scan()), "table");
        if (!named(table.name(), only)) {
          continue;
        }
        rows += scan.metrics().apply("numOutputRows").value();
        FileIO io = table.io();
        for (InputPartition partition : Plans.javaList(scan.inputPartitions())) {
          for (ScanTask task : Members.taskGroup(partition).tasks()) {
            if (task instanceof ContentScanTask<?> content) {
              tasks++;
              files.add(content.file().location());
              bytes += content.length();
              long read = task instanceof FileScanTask file ? counter.of(file, io) : -1;
              rowGroups = rowGroups < 0 || read < 0 ? -1 : rowGroups + read;
            }
          }
        }
      } else {
        pending.addAll(Plans.javaList(node.children()));
      }
    }
    counter.close();
    return rows + " " + files.size() + " " + tasks + " " + bytes + " " + rowGroups;
  }

  /** Whether a scanned table's name ({@code catalog.namespace.table}) is {@code only}'s (any when it is null). */
  static boolean named(String name, String only) {
    if (only == null) {
      return true;
    }
    String scanned = name.toLowerCase(java.util.Locale.ROOT);
    String wanted = only.toLowerCase(java.util.Locale.ROOT);
    return scanned.equals(wanted) || scanned.endsWith("." + wanted);
  }
}
