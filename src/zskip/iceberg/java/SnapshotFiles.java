// Iceberg's file planning for a query, answered from a per-snapshot list of live data files kept in memory.
//
// Spark's optimizer asks an Iceberg scan for its partitioning and statistics, and the scan plans its
// files to answer: it reads the snapshot's manifests and evaluates every entry, 12-16 ms for one
// lineorder filter on this project's benchmarks, on every query.  A snapshot's live files never change,
// so zskip reads them once per snapshot (stats included) and, for each query, keeps the files Iceberg
// itself would keep: the same partition projection, the same inclusive metrics evaluation, the same
// residuals, one task per file.  The scan is handed those tasks before the optimizer asks, through
// the hook Iceberg uses for runtime filtering (``resetTasks``), so it never reads a manifest.
//
// Only plain reads of a table's current state go this way, and only snapshots without delete files
// (a task's deletes come from Iceberg's delete index, which this list does not keep); anything else,
// and any error, leaves the scan to plan itself as usual.
//
// Compiled by Janino (see Bridge.java): raw collections and explicit casts are deliberate.
package zskip.bridge;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
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
import org.apache.iceberg.spark.source.SparkScanBuilder;
import org.apache.iceberg.spark.source.SparkTable;
//#if spark3
import org.apache.spark.sql.Dataset;
//#else
import org.apache.spark.sql.classic.Dataset;
//#endif
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public class SnapshotFiles {
  static final int MAX_SNAPSHOTS = 32;
  static final long MAX_FILES = 2000000L; // files held over all snapshots (each about 1-3 KB with its stats)
  static final String BATCH_SCAN = "org.apache.iceberg.spark.source.SparkBatchQueryScan";
  static final DeleteFile[] NO_DELETES = new DeleteFile[0];
  static final Object NOT_LISTED = new Object(); // a snapshot whose tasks this list cannot stand in for

  // "location@snapshot id" -> Object[] {DataFile with stats, the same without stats} per file, or NOT_LISTED
  static final LinkedHashMap CACHE = new LinkedHashMap(16, 0.75f, true);
  static long cachedFiles = 0;
  static long seeded = 0; // scans given their tasks from the list (what tests and benchmarks read)

  /**
   * {@code original} reading through the list, or {@code null}: a table at another snapshot or branch,
   * or one being rewritten, keeps Iceberg's own planning.
   */
  public static SparkTable reading(SparkTable original) {
    if (original.getClass() != SparkTable.class || original.branch() != null) {
      return null;
    }
    try {
//#if spark3
      if (original.snapshotId() != null || ((Boolean) field(original, "isTableRewrite")).booleanValue()) {
        return null;
      }
      return new ListedTable(original.table(), ((Boolean) field(original, "refreshEagerly")).booleanValue());
//#else
      // Spark 4.1 plans the scans of the table its catalog loads again, not of the table put in the
      // analysed plan here, so a listed table would never be asked for a scan: Iceberg plans its own files
      return null;
//#endif
    } catch (Exception e) {
      return null;
    }
  }

  /** How many scans were given their tasks from the list in this JVM. */
  public static synchronized long seededScans() {
    return seeded;
  }

  /**
   * Every task of the Iceberg batch scans of {@code frame}'s physical plan, one "file, start, length,
   * residual" line each, sorted: what a query will read, to compare plans (diagnostics and tests).
   */
  public static String plannedTasks(Dataset frame) throws Exception {
    List lines = new ArrayList();
    scala.collection.Iterator leaves = frame.queryExecution().sparkPlan().collectLeaves().iterator();
    while (leaves.hasNext()) {
      Object leaf = leaves.next();
      if (!(leaf instanceof BatchScanExec) || !((BatchScanExec) leaf).scan().getClass().getName().equals(BATCH_SCAN)) {
        continue;
      }
      List tasks = (List) invoke(((BatchScanExec) leaf).scan(), "tasks", new Class[0], new Object[0]);
      for (int i = 0; i < tasks.size(); i++) {
        FileScanTask task = (FileScanTask) tasks.get(i);
        lines.add(task.file().location() + "\t" + task.start() + "\t" + task.length() + "\t" + task.residual());
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

  static Object field(Object target, String name) throws Exception {
    for (Class cls = target.getClass(); cls != null; cls = cls.getSuperclass()) {
      try {
        Field found = cls.getDeclaredField(name);
        found.setAccessible(true);
        return found.get(target);
      } catch (NoSuchFieldException e) {
        // declared further up
      }
    }
    throw new NoSuchFieldException(name);
  }

  /** Calls the method {@code name(types)} that {@code target} has or inherits, protected or not. */
  public static Object invoke(Object target, String name, Class[] types, Object[] arguments) throws Exception {
    for (Class cls = target.getClass(); cls != null; cls = cls.getSuperclass()) {
      try {
        Method method = cls.getDeclaredMethod(name, types);
        method.setAccessible(true);
        return method.invoke(target, arguments);
      } catch (NoSuchMethodException e) {
        // declared further up
      }
    }
    throw new NoSuchMethodException(name);
  }

  /** Hands a batch scan of a table's snapshot the tasks Iceberg would plan, from the list; else leaves it. */
  static void seed(Scan scan) {
    if (!scan.getClass().getName().equals(BATCH_SCAN)) {
      return;
    }
    try {
      Object inner = invoke(scan, "scan", new Class[0], new Object[0]);
      if (!(inner instanceof BatchScan)) {
        return;
      }
      BatchScan batch = (BatchScan) inner;
      Snapshot snapshot = batch.snapshot();
      if (snapshot == null) {
        return; // an empty table: nothing to plan
      }
      List files = liveFiles(batch.table(), snapshot);
      if (files == null) {
        return;
      }
      List tasks = matching(batch.table(), files, batch.filter(), batch.isCaseSensitive());
      invoke(scan, "resetTasks", new Class[] {List.class}, new Object[] {tasks});
      synchronized (SnapshotFiles.class) {
        seeded++;
      }
    } catch (Exception e) {
      // the scan plans its own files, as it would without zskip
    }
  }

  /** One task per file Iceberg's planning keeps under {@code filter}: partitions, then metrics. */
  static List matching(Table table, List files, Expression filter, boolean caseSensitive) {
    Map bySpec = new HashMap(); // spec id -> Object[] {partition evaluator, metrics evaluator, residuals, schema, spec}
    Map specs = table.specs();
    List tasks = new ArrayList();
    for (int i = 0; i < files.size(); i++) {
      Object[] pair = (Object[]) files.get(i);
      DataFile file = (DataFile) pair[0];
      Integer specId = Integer.valueOf(file.specId());
      Object[] judges = (Object[]) bySpec.get(specId);
      if (judges == null) {
        PartitionSpec spec = (PartitionSpec) specs.get(specId);
        judges = new Object[] {
          new Evaluator(spec.partitionType(), Projections.inclusive(spec, caseSensitive).project(filter), caseSensitive),
          new InclusiveMetricsEvaluator(spec.schema(), filter, caseSensitive),
          ResidualEvaluator.of(spec, filter, caseSensitive),
          SchemaParser.toJson(spec.schema()),
          PartitionSpecParser.toJson(spec)
        };
        bySpec.put(specId, judges);
      }
      if (((Evaluator) judges[0]).eval(file.partition()) && ((InclusiveMetricsEvaluator) judges[1]).eval(file)) {
        tasks.add(new BaseFileScanTask(
            (DataFile) pair[1], NO_DELETES, (String) judges[3], (String) judges[4], (ResidualEvaluator) judges[2]));
      }
    }
    return tasks;
  }

  /** The live data files of {@code snapshot}, read once (with stats), or {@code null} when it has deletes. */
  static List liveFiles(Table table, Snapshot snapshot) throws Exception {
    String key = table.location() + "@" + snapshot.snapshotId();
    synchronized (SnapshotFiles.class) {
      Object known = CACHE.get(key);
      if (known != null) {
        return known == NOT_LISTED ? null : (List) known;
      }
    }
    Map summary = snapshot.summary();
    Object deletes = summary == null ? null : summary.get("total-delete-files");
    List files = new ArrayList();
    if (deletes == null || !deletes.equals("0")) {
      files = null;
    } else {
      // Janino erases Scan's self type: the casts say what each step returns
      TableScan scan = (TableScan) ((TableScan) table.newScan().useSnapshot(snapshot.snapshotId())).includeColumnStats();
      CloseableIterable planned = scan.planFiles();
      try {
        Iterator it = planned.iterator();
        while (it.hasNext() && files != null) {
          FileScanTask task = (FileScanTask) it.next();
          if (!task.deletes().isEmpty()) {
            files = null;
          } else {
            DataFile file = (DataFile) task.file();
            files.add(new Object[] {file, file.copyWithoutStats()});
          }
        }
      } finally {
        planned.close();
      }
    }
    synchronized (SnapshotFiles.class) {
      CACHE.put(key, files == null ? NOT_LISTED : (Object) files);
      cachedFiles += files == null ? 0 : files.size();
      Iterator eldest = CACHE.entrySet().iterator();
      while ((CACHE.size() > MAX_SNAPSHOTS || cachedFiles > MAX_FILES) && eldest.hasNext()) {
        Object value = ((Map.Entry) eldest.next()).getValue();
        cachedFiles -= value instanceof List ? ((List) value).size() : 0;
        eldest.remove();
      }
    }
    return files;
  }

  /** An Iceberg table whose batch scans take their tasks from the list. */
  public static class ListedTable extends SparkTable {
    ListedTable(Table table, boolean refreshEagerly) {
//#if spark3
      super(table, (Long) null, refreshEagerly, false);
//#else
      super(table); // Iceberg's Spark 4 tables hold the snapshot they were loaded at
//#endif
    }

    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      ScanBuilder builder = super.newScanBuilder(options);
      return builder instanceof SparkScanBuilder ? new ListedScanBuilder((SparkScanBuilder) builder) : builder;
    }
  }

  /** Iceberg's scan builder, unchanged but for the tasks its batch scans start with. */
  public static class ListedScanBuilder
//#if spark3
      implements ScanBuilder, SupportsPushDownAggregates, SupportsPushDownV2Filters, SupportsPushDownRequiredColumns,
          SupportsReportStatistics {
//#else
      implements ScanBuilder, SupportsPushDownAggregates, SupportsPushDownV2Filters, SupportsPushDownRequiredColumns {
//#endif
    final SparkScanBuilder iceberg;

    ListedScanBuilder(SparkScanBuilder iceberg) {
      this.iceberg = iceberg;
    }

    public Scan build() {
      Scan scan = iceberg.build();
      seed(scan);
      return scan;
    }

    public Predicate[] pushPredicates(Predicate[] predicates) {
      return iceberg.pushPredicates(predicates);
    }

    public Predicate[] pushedPredicates() {
      return iceberg.pushedPredicates();
    }

    public boolean pushAggregation(Aggregation aggregation) {
      return iceberg.pushAggregation(aggregation);
    }

//#if spark3
    public boolean supportCompletePushDown(Aggregation aggregation) {
      return iceberg.supportCompletePushDown(aggregation);
    }
//#endif

    public void pruneColumns(StructType requiredSchema) {
      iceberg.pruneColumns(requiredSchema);
    }

//#if spark3
    public Statistics estimateStatistics() {
      Scan scan = build();
      return scan instanceof SupportsReportStatistics
          ? ((SupportsReportStatistics) scan).estimateStatistics()
          : iceberg.estimateStatistics();
    }

    public StructType readSchema() {
      return iceberg.readSchema();
    }
//#endif
  }
}
