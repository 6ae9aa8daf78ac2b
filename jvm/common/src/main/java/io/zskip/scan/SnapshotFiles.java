package io.zskip.scan;

import io.zskip.settings.ZskipSettings;
import io.zskip.bridge.Bridge;
import io.zskip.iceberg.Members;
import io.zskip.rule.Plans;
import io.zskip.spark.SparkLine;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.BatchScan;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.InclusiveMetricsEvaluator;
import org.apache.iceberg.expressions.Projections;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Sample;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * Iceberg's file planning for a query, answered from a per-snapshot list of live data files kept in memory.
 *
 * <p>Spark's optimizer asks an Iceberg scan for its partitioning and statistics, and the scan plans its
 * files to answer: it reads the snapshot's manifests and evaluates every entry, 12-16 ms for one lineorder
 * filter on zskip's benchmarks, on every query.  A snapshot's live files never change, so zskip reads them
 * once per snapshot (stats included) and, for each query, keeps the files Iceberg itself would keep: the
 * same partition projection, the same inclusive metrics evaluation, the same residuals, one task per file.
 * The scan is handed those tasks before the optimizer asks, through the hook Iceberg uses for runtime
 * filtering ({@code resetTasks}), so it never reads a manifest.
 *
 * <p>Only plain reads of a table's current state go this way (on the Spark lines whose tables allow it,
 * {@link SparkLine#listed}), and only snapshots without delete files (a task's deletes come from Iceberg's
 * delete index, which this list does not keep); anything else, and any error, leaves the scan to plan
 * itself as usual.
 */
public final class SnapshotFiles {
  static final int MAX_SNAPSHOTS = 32;
  static final long MAX_FILES = 2_000_000L; // files held over all snapshots (each about 1-3 KB with its stats)
  private static final DeleteFile[] NO_DELETES = new DeleteFile[0];

  /** A live file, with its stats (to evaluate filters) and without (what a task carries to executors). */
  record Listed(DataFile withStats, DataFile withoutStats) {}

  // "location@snapshot id" -> the snapshot's live files, or an empty Optional for one this list cannot stand in for
  private static final LinkedHashMap<String, java.util.Optional<List<Listed>>> CACHE =
      new LinkedHashMap<>(16, 0.75f, true);
  private static long cachedFiles = 0;
  private static long seeded = 0; // scans given their tasks from the list (what tests and benchmarks read)

  private SnapshotFiles() {}

  /**
   * {@code frame} with each Iceberg relation of a table's current state reading through the list (its
   * scans plan from the snapshot's file list in memory), unless the session sets
   * {@code spark.zskip.planning.listedFiles} to false; the same rows, columns and plan.
   */
  static Dataset<Row> listed(Dataset<Row> frame) {
    SparkSession session = frame.sparkSession();
    if (!ZskipSettings.flag(session.conf().get(ZskipSettings.LISTED_FILES.key(), null), true)) {
      return frame;
    }
    LogicalPlan analysed = SparkLine.execution(frame).analyzed();
    Map<LogicalPlan, LogicalPlan> replacements = Plans.identityMap();
    List<LogicalPlan> pending = new ArrayList<>(List.of(analysed));
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      if (node instanceof Sample) {
        continue; // a sample draws from the scan's splits: Iceberg's own planning keeps its rows Spark's
      }
      if (node instanceof DataSourceV2Relation relation && Bridge.dataTable(relation.table())) {
        SparkTable table = SparkLine.listed((SparkTable) relation.table());
        if (table != null) {
          replacements.put(relation, SparkLine.withTable(relation, table));
        }
      }
      pending.addAll(Plans.children(node));
    }
    if (replacements.isEmpty()) {
      return frame;
    }
    return SparkLine.withExecution(frame, SparkLine.analysed(session, Plans.replace(analysed, replacements)));
  }

  /** How many scans were given their tasks from the list in this JVM. */
  public static synchronized long seededScans() {
    return seeded;
  }

  /**
   * Every task of the Iceberg batch scans of {@code frame}'s physical plan, one "file, start, length,
   * residual" line each, sorted: what a query will read, to compare plans (diagnostics and tests).
   */
  public static String plannedTasks(Dataset<Row> frame) throws ReflectiveOperationException {
    List<String> lines = new ArrayList<>();
    for (SparkPlan leaf : Plans.javaList(SparkLine.execution(frame).sparkPlan().collectLeaves())) {
      if (leaf instanceof BatchScanExec batch && Members.isBatchQueryScan(batch.scan())) {
        for (FileScanTask task : Members.tasks(batch.scan())) {
          lines.add(task.file().location() + "\t" + task.start() + "\t" + task.length() + "\t" + task.residual());
        }
      }
    }
    Collections.sort(lines);
    return String.join("\n", lines);
  }

  /** Forget every listed snapshot (tests; a snapshot's files never change, so nothing else needs this). */
  public static synchronized void clear() {
    CACHE.clear();
    cachedFiles = 0;
  }

  /** Hands a batch scan of a table's snapshot the tasks Iceberg would plan, from the list; else leaves it. */
  public static void seed(Scan scan) {
    if (!Members.isBatchQueryScan(scan)) {
      return;
    }
    try {
      if (!(Members.icebergScan(scan) instanceof BatchScan batch) || batch.snapshot() == null) {
        return; // not one snapshot's scan, or an empty table: nothing to plan
      }
      List<Listed> files = liveFiles(batch.table(), batch.snapshot());
      if (files == null) {
        return;
      }
      Members.resetTasks(scan, matching(batch.table(), files, batch.filter(), batch.isCaseSensitive()));
      synchronized (SnapshotFiles.class) {
        seeded++;
      }
    } catch (ReflectiveOperationException | java.io.IOException | RuntimeException e) {
      // the scan plans its own files, as it would without zskip
    }
  }

  /** How one partition spec's files are judged, as Iceberg's planning judges them. */
  private record Judges(Evaluator partitions, InclusiveMetricsEvaluator metrics, ResidualEvaluator residuals,
      String schema, String spec) {}

  /** One task per file Iceberg's planning keeps under {@code filter}: partitions, then metrics. */
  static List<FileScanTask> matching(Table table, List<Listed> files, Expression filter, boolean caseSensitive) {
    Map<Integer, Judges> bySpec = new HashMap<>();
    Map<Integer, PartitionSpec> specs = table.specs();
    List<FileScanTask> tasks = new ArrayList<>();
    for (Listed listed : files) {
      DataFile file = listed.withStats();
      Judges judges = bySpec.computeIfAbsent(file.specId(), id -> {
        PartitionSpec spec = specs.get(id);
        return new Judges(
            new Evaluator(spec.partitionType(), Projections.inclusive(spec, caseSensitive).project(filter), caseSensitive),
            new InclusiveMetricsEvaluator(spec.schema(), filter, caseSensitive),
            ResidualEvaluator.of(spec, filter, caseSensitive),
            SchemaParser.toJson(spec.schema()),
            PartitionSpecParser.toJson(spec));
      });
      if (judges.partitions().eval(file.partition()) && judges.metrics().eval(file)) {
        tasks.add(new BaseFileScanTask(listed.withoutStats(), NO_DELETES, judges.schema(), judges.spec(), judges.residuals()));
      }
    }
    return tasks;
  }

  /** The live data files of {@code snapshot}, read once (with stats), or {@code null} when it has deletes. */
  static List<Listed> liveFiles(Table table, Snapshot snapshot) throws java.io.IOException {
    String key = table.location() + "@" + snapshot.snapshotId();
    synchronized (SnapshotFiles.class) {
      var known = CACHE.get(key);
      if (known != null) {
        return known.orElse(null);
      }
    }
    Map<String, String> summary = snapshot.summary();
    List<Listed> files = null;
    if (summary != null && "0".equals(summary.get("total-delete-files"))) {
      files = new ArrayList<>();
      TableScan scan = table.newScan().useSnapshot(snapshot.snapshotId()).includeColumnStats();
      try (CloseableIterable<FileScanTask> planned = scan.planFiles()) {
        for (FileScanTask task : planned) {
          if (!task.deletes().isEmpty()) {
            files = null;
            break;
          }
          files.add(new Listed(task.file(), task.file().copyWithoutStats()));
        }
      }
    }
    synchronized (SnapshotFiles.class) {
      CACHE.put(key, java.util.Optional.ofNullable(files));
      cachedFiles += files == null ? 0 : files.size();
      Iterator<java.util.Optional<List<Listed>>> eldest = CACHE.values().iterator();
      while ((CACHE.size() > MAX_SNAPSHOTS || cachedFiles > MAX_FILES) && eldest.hasNext()) {
        cachedFiles -= eldest.next().map(List::size).orElse(0);
        eldest.remove();
      }
    }
    return files;
  }
}
