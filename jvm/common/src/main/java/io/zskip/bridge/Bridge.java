package io.zskip.bridge;

import com.fasterxml.jackson.core.JsonGenerator;
import io.zskip.iceberg.StorageSettings;
import io.zskip.rule.PlanHook;
import io.zskip.rule.Plans;
import io.zskip.rule.Statements;
import io.zskip.scan.ReadMeasure;
import io.zskip.scan.Scans;
import io.zskip.scan.SnapshotFiles;
import io.zskip.spark.SparkLine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.iceberg.BaseMetadataTable;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.ScanTaskSetManager;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * zskip's entry point in the JVM: what the Python planner asks the JVM, each question answered in one
 * py4j call (py4j costs a fraction of a millisecond per call, and a query touches over a hundred Java
 * objects).  Answers are JSON ({@link Answers}).
 */
public final class Bridge {
  // set while zskip plans on this thread: zskip's optimizer rule (PlanHook) lets the plans of the
  // queries zskip itself plans (zskip.sql, zskip.read) or runs to plan (a dimension's keys) pass untouched
  public static final ThreadLocal<Boolean> PLANNING = new ThreadLocal<>();
  private static final Map<String, Table> STAGED = new HashMap<>(); // staged set id -> its table, until released

  /** Whether {@code table} (a Spark catalog table) is an Iceberg table's data, not one of its metadata tables. */
  public static boolean dataTable(Object table) {
    return table instanceof SparkTable spark && !(spark.table() instanceof BaseMetadataTable);
  }

  /** {@code work} with zskip's rule standing aside on this thread. */
  public static <T> T planning(Callable<T> work) throws Exception {
    Boolean outer = PLANNING.get();
    PLANNING.set(Boolean.TRUE);
    try {
      return work.call();
    } finally {
      if (outer == null) {
        PLANNING.remove();
      }
    }
  }

  /** Parse {@code text} with the session's parser (nothing runs): statement kind, relations, time travel. */
  public String parse(SparkSession session, String text) throws Exception {
    return Statements.parse(session, text);
  }

  /** {@code text} analysed when it is one query of current table states, else {@code null} (see {@link Statements#query}). */
  public Dataset<Row> query(SparkSession session, String text) {
    return Statements.query(session, text);
  }

  /** The Iceberg scans of {@code frame}'s physical plan (planning it, as execution would). */
  public Scans scans(Dataset<Row> frame, String properties) throws Exception {
    return planning(() -> new Scans(frame, split(properties)));
  }

  /**
   * The Iceberg tables {@code frame}'s analysed plan reads, each once, as JSON (name, location, storage,
   * current snapshot and the table {@code properties} asked for): planning reads their zskip files while
   * {@link #scans} plans the query.  Tables only subqueries read are not among them.
   */
  public String tables(Dataset<Row> frame, String properties) throws Exception {
    String[] wanted = split(properties);
    return Answers.json(json -> {
      json.writeStartArray();
      Set<String> seen = new HashSet<>();
      List<LogicalPlan> pending = new ArrayList<>(List.of(SparkLine.execution(frame).analyzed()));
      while (!pending.isEmpty()) {
        LogicalPlan node = pending.remove(pending.size() - 1);
        if (node instanceof DataSourceV2Relation relation && dataTable(relation.table())) {
          Table table = ((SparkTable) relation.table()).table();
          if (seen.add(table.name())) {
            json.writeStartObject();
            writeTableState(json, table, wanted);
            json.writeEndObject();
          }
        }
        pending.addAll(Plans.children(node));
      }
      json.writeEndArray();
    });
  }

  /** How {@code table}'s files are reached, as JSON (see {@link StorageSettings}). */
  public String storage(Table table) throws Exception {
    return StorageSettings.of(table);
  }

  /** A table's name, location, storage, current snapshot and those of {@code properties} it has. */
  public static void writeTableState(JsonGenerator json, Table table, String[] properties) throws Exception {
    json.writeStringField("table", table.name());
    json.writeStringField("location", table.location());
    json.writeFieldName("storage");
    json.writeRawValue(StorageSettings.of(table));
    Snapshot snapshot = table.currentSnapshot();
    if (snapshot == null) {
      json.writeNullField("snapshot");
    } else {
      json.writeNumberField("snapshot", snapshot.snapshotId());
    }
    json.writeObjectFieldStart("properties");
    Map<String, String> tableProperties = table.properties();
    for (String name : properties) {
      String value = tableProperties.get(name);
      if (value != null) {
        json.writeStringField(name, value);
      }
    }
    json.writeEndObject();
  }

  /** The tasks {@code frame}'s Iceberg scans will read, one line each (see {@link SnapshotFiles#plannedTasks}). */
  public String plannedTasks(Dataset<Row> frame) throws Exception {
    return Answers.answer(SnapshotFiles.plannedTasks(frame));
  }

  /**
   * Runs {@code frame}'s query once and answers what its Iceberg scans read, or only the scans of {@code table}
   * (its name as a query names it; {@code null}: every scan): "rows files tasks bytes row-groups" ({@link ReadMeasure}).
   */
  public String measuredRead(Dataset<Row> frame, String table) throws ReflectiveOperationException {
    return ReadMeasure.of(frame, table);
  }

  /**
   * {@code frame}'s rows as one Arrow IPC stream, collected in this JVM first ({@link ArrowCollect}), in Base64: Py4J
   * hands a {@code byte[]} to Python one byte at a time in Python code (7 s for an advisor's sample of 29 MB), a string
   * in bulk.
   */
  public String arrowStreamBase64(Dataset<Row> frame) throws java.io.IOException {
    return java.util.Base64.getEncoder().encodeToString(ArrowCollect.stream(frame));
  }

  /** Forget every snapshot's file list (the next query of each table reads its manifests again). */
  public void forgetListedFiles() {
    SnapshotFiles.clear();
  }

  /** How many scans took their tasks from a snapshot's file list in this JVM. */
  public long listedScans() {
    return SnapshotFiles.seededScans();
  }

  public static void staged(String setId, Table table) {
    synchronized (STAGED) {
      STAGED.put(setId, table);
    }
  }

  /** Release staged task sets ({@code setIds} joined by '\u0001'); unknown ids are ignored. */
  public void release(String setIds) {
    for (String id : setIds.split("\u0001")) {
      Table table;
      synchronized (STAGED) {
        table = STAGED.remove(id);
      }
      if (table != null) {
        ScanTaskSetManager.get().removeTasks(table, id);
      }
    }
  }

  public static String[] split(String joined) {
    return joined.isEmpty() ? new String[0] : joined.split("\u0001");
  }
}
