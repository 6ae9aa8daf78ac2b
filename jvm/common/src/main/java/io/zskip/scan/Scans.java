package io.zskip.scan;

import io.zskip.settings.ZskipSettings;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.aggregate.AggregateShape;
import io.zskip.bridge.Answers;
import io.zskip.bridge.Bridge;
import io.zskip.filter.ExpressionJson;
import io.zskip.iceberg.Members;
import io.zskip.join.JoinFinder;
import io.zskip.join.JoinKeys;
import io.zskip.join.JoinSide;
import io.zskip.rule.PlanHook;
import io.zskip.rule.Plans;
import io.zskip.rule.TaskChoice;
import io.zskip.spark.SparkLine;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.iceberg.BatchScan;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.spark.ScanTaskSetManager;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SampleExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;

/**
 * One query's Iceberg scans, their tasks and the relations they read, kept while the Python planner
 * plans: it asks for them in one call ({@link #describe}), and hands its answer back in one call
 * ({@link #staged} for zskip.sql and zskip.read, {@link #hooked} for zskip's optimizer rule).
 */
public final class Scans {
  static final Answers.RecentDigests SENT_FILES = new Answers.RecentDigests(256);

  private final Dataset<Row> frame; // null for the scans of an optimized plan (zskip's rule, PlanHook)
  private final SparkSession session;
  private final LogicalPlan root; // the optimized plan of those scans, or null
  private final String[] properties;
  private final List<ScanEntry> scans = new ArrayList<>();
  private final List<DataSourceV2Relation> relations = new ArrayList<>(); // of Iceberg tables, main plan only
  private final List<JoinSide> joins;
  private volatile String recordWork = "{}"; // for the workload recorder, when the rule decided alone

  /** The Iceberg batch scans {@code scanRelations} of {@code plan}, an optimized plan (zskip's rule). */
  public Scans(SparkSession session, LogicalPlan plan, List<DataSourceV2ScanRelation> scanRelations, String[] properties)
      throws ReflectiveOperationException {
    this.frame = null;
    this.session = session;
    this.root = plan;
    this.properties = properties;
    Map<DataSourceV2ScanRelation, AggregateShape> aggregates =
        ZskipSettings.flag(SparkLine.conf(session).getConfString(ZskipSettings.AGGREGATES.key(), null), true)
            ? AggregateShape.find(plan, scanRelations)
            : Map.of();
    for (DataSourceV2ScanRelation relation : scanRelations) {
      Scan scan = relation.scan();
      scans.add(new ScanEntry(
          scan, Members.table(scan), Members.tasks(scan), Plans.exprIds(relation.output()), relation, aggregates.get(relation)));
    }
    this.joins = JoinFinder.find(plan, scans);
  }

  /** The session these scans were planned in: their planning (its catalogs, settings, jobs) runs there. */
  public SparkSession session() {
    return session;
  }

  /**
   * Spark's id of that session (one py4j call tells a planner whether it knows the session already);
   * {@code sessionUUID} is the classic session's on Spark 4, not the API class's.
   */
  public String sessionId() throws ReflectiveOperationException {
    return (String) session.getClass().getMethod("sessionUUID").invoke(session);
  }

  /** The Iceberg scans of {@code query}'s physical plan (planning it, as its execution will reuse). */
  public Scans(Dataset<Row> query, String[] properties) throws ReflectiveOperationException {
    this.frame = SnapshotFiles.listed(query);
    this.session = frame.sparkSession();
    this.root = null;
    this.properties = properties;
    QueryExecution execution = SparkLine.execution(frame);
    for (SparkPlan leaf : leaves(execution.sparkPlan())) {
      if (!(leaf instanceof BatchScanExec batch) || !Members.isBatchQueryScan(batch.scan())) {
        continue;
      }
      Table table = Members.table(batch.scan());
      if (table instanceof org.apache.iceberg.BaseMetadataTable) {
        continue; // t.files, t.snapshots, ...: their tasks read metadata, not data files zskip knows
      }
      scans.add(new ScanEntry(batch.scan(), table, Members.tasks(batch.scan()), Plans.exprIds(batch.output()), null, null));
    }
    List<LogicalPlan> pending = new ArrayList<>(List.of(execution.analyzed()));
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      if (node instanceof DataSourceV2Relation relation && Bridge.dataTable(relation.table())) {
        relations.add(relation);
      }
      pending.addAll(Plans.children(node));
    }
    this.joins = JoinFinder.find(execution.optimizedPlan(), scans);
  }

  /** The leaves of a physical plan, left to right, leaving out what a sample draws from. */
  private static List<SparkPlan> leaves(SparkPlan plan) {
    List<SparkPlan> leaves = new ArrayList<>();
    List<SparkPlan> pending = new ArrayList<>(List.of(plan));
    while (!pending.isEmpty()) {
      SparkPlan node = pending.remove(pending.size() - 1);
      if (node instanceof SampleExec) {
        continue; // TABLESAMPLE draws from the scan's partitions as Spark splits them: fewer files, other rows
      }
      if (node.children().isEmpty()) {
        leaves.add(0, node);
      }
      pending.addAll(Plans.javaList(node.children()));
    }
    return leaves;
  }

  /** The query as planned: its current-state Iceberg relations read through {@link SnapshotFiles}. */
  public Dataset<Row> frame() {
    return frame;
  }

  /** The keys the dimension side of join {@code index} yields (see {@link JoinKeys}). */
  public String joinKeys(int index, int cap) throws Exception {
    return Bridge.planning(() -> JoinKeys.of(session, joins.get(index), cap));
  }

  /** Everything planning needs about each scan, relation and join, as JSON. */
  public String describe() throws Exception {
    return Answers.json(json -> {
      json.writeStartObject();
      json.writeArrayFieldStart("output");
      ExpressionJson.writeLongs(json, Plans.exprIds(frame != null ? SparkLine.execution(frame).analyzed().output() : root.output()));
      json.writeEndArray();
      // the session's zskip settings, so planning needs no py4j call of its own to read them
      json.writeObjectFieldStart("settings");
      for (Map.Entry<String, String> entry : settings().entrySet()) {
        json.writeStringField(entry.getKey(), entry.getValue());
      }
      json.writeEndObject();
      json.writeArrayFieldStart("scans");
      for (ScanEntry entry : scans) {
        describeScan(json, entry);
      }
      json.writeEndArray();
      json.writeArrayFieldStart("relations");
      for (DataSourceV2Relation relation : relations) {
        json.writeStartObject();
        json.writeStringField("table", ((SparkTable) relation.table()).table().name());
        json.writeArrayFieldStart("output");
        ExpressionJson.writeLongs(json, Plans.exprIds(relation.output()));
        json.writeEndArray();
        json.writeEndObject();
      }
      json.writeEndArray();
      json.writeArrayFieldStart("joins");
      for (int i = 0; i < joins.size(); i++) {
        describeJoin(json, i, joins.get(i));
      }
      json.writeEndArray();
      json.writeEndObject();
    });
  }

  private void describeJoin(JsonGenerator json, int position, JoinSide join) throws Exception {
    Table dimension = Members.table(join.dimensionScan());
    Object planned = Members.icebergScan(join.dimensionScan());
    boolean ofSnapshot = planned instanceof BatchScan;
    // the snapshot the side reads (its time travel, branch or tag), not merely the table's current one
    Snapshot snapshot = ofSnapshot ? ((BatchScan) planned).snapshot() : dimension.currentSnapshot();
    Table fact = scans.get(join.scan()).table();
    Types.NestedField field = ExpressionJson.resolveField(fact.schema(), join.column());
    if (field == null) {
      return; // not a column of the table itself
    }
    String keyName = join.key().name();
    json.writeStartObject();
    json.writeNumberField("position", position);
    json.writeNumberField("scan", join.scan());
    json.writeStringField("column", fact.schema().findColumnName(field.fieldId()));
    json.writeNumberField("field_id", field.fieldId());
    json.writeStringField("field_type", field.type().toString());
    json.writeStringField("dimension", dimension.name());
    if (snapshot == null) {
      json.writeNullField("snapshot");
    } else {
      json.writeNumberField("snapshot", snapshot.snapshotId());
    }
    json.writeStringField("key", keyName);
    json.writeStringField("filter", join.filter());
    json.writeArrayFieldStart("filter_columns");
    for (String name : join.named()) {
      json.writeString(name);
    }
    json.writeEndArray();
    writeDimensionFilter(json, dimension, join);
    json.writeStringField("signature", signature(join));
    json.writeEndObject();
  }

  /**
   * What the keys of {@code join}'s dimension side depend on, as a digest: the snapshot the side reads,
   * its key, and every condition of its Filters and of its scan (a side is Projects and Filters over one
   * scan, so nothing else drops a row); a scan of no one snapshot (an incremental read) is told apart by
   * the whole plan of its side.
   */
  public static String signature(JoinSide join) throws ReflectiveOperationException {
    Table dimension = Members.table(join.dimensionScan());
    Object planned = Members.icebergScan(join.dimensionScan());
    boolean ofSnapshot = planned instanceof BatchScan;
    Snapshot snapshot = ofSnapshot ? ((BatchScan) planned).snapshot() : dimension.currentSnapshot();
    return Answers.sha256(
        dimension.name() + "\u0001" + (snapshot == null ? "" : String.valueOf(snapshot.snapshotId())) + "\u0001"
            + join.key().name() + "\u0001" + join.conditions()
            + (ofSnapshot ? "" : "\u0001" + join.side().canonicalized().toString()));
  }

  /** The session's {@code spark.zskip.*} settings, by name. */
  Map<String, String> settings() {
    Map<String, String> out = new java.util.TreeMap<>();
    org.apache.spark.sql.internal.SQLConf conf = SparkLine.conf(session);
    Map<?, ?> set = setConfs(conf);
    if (set != null) {
      synchronized (set) { // a synchronized map: iterating it takes its lock
        for (Map.Entry<?, ?> entry : set.entrySet()) {
          if (entry.getKey() instanceof String name && name.startsWith(ZskipSettings.PREFIX)) {
            out.put(name, String.valueOf(entry.getValue()));
          }
        }
      }
      return out;
    }
    scala.collection.Iterator<scala.Tuple2<String, String>> confs = conf.getAllConfs().iterator();
    while (confs.hasNext()) {
      scala.Tuple2<String, String> entry = confs.next();
      if (entry._1().startsWith(ZskipSettings.PREFIX)) {
        out.put(entry._1(), entry._2());
      }
    }
    return out;
  }

  /**
   * The map of a session's set configuration ({@code SQLConf.settings}): read in place, where {@code
   * getAllConfs} copies every entry into a Scala map first (a tenth of a millisecond per query); {@code
   * null} when this Spark has no such field.
   */
  private static Map<?, ?> setConfs(org.apache.spark.sql.internal.SQLConf conf) {
    try {
      return Members.field(conf, "settings") instanceof Map<?, ?> map ? map : null;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** {@link #settings} as one line of text (what a remembered answer depends on). */
  public String settingsText() {
    return settings().toString();
  }

  public List<ScanEntry> entries() {
    return scans;
  }

  public List<JoinSide> joins() {
    return joins;
  }

  /** What the workload recorder is to do for these scans, decided without the planner: see {@link PlanHook}. */
  public String recordWork() {
    return recordWork;
  }

  public void recordWork(String work) {
    this.recordWork = work;
  }

  /**
   * The dimension side's key and filter by the dimension's field ids, for a record that outlives its
   * column names: the key's field id, those of the columns its conditions name (-1: not a column of the
   * table), the filters pushed to its scan with the fields they name, and whether they are every
   * condition of the side.
   */
  private static void writeDimensionFilter(JsonGenerator json, Table dimension, JoinSide join) throws IOException {
    Types.NestedField keyField = ExpressionJson.resolveField(dimension.schema(), join.key().name());
    if (keyField == null) {
      json.writeNullField("key_field_id");
    } else {
      json.writeNumberField("key_field_id", keyField.fieldId());
    }
    json.writeArrayFieldStart("filter_column_ids");
    for (String name : join.named()) {
      Types.NestedField field = ExpressionJson.resolveField(dimension.schema(), name);
      json.writeNumber(field == null ? -1 : field.fieldId());
    }
    json.writeEndArray();
    json.writeBooleanField("all_pushed", join.allPushed());
    Set<String> referenced = new LinkedHashSet<>();
    json.writeArrayFieldStart("pushed");
    for (Expression expression : join.pushed()) {
      ExpressionJson.write(json, expression, referenced);
    }
    json.writeEndArray();
    ExpressionJson.writeFields(json, "dimension_fields", dimension, referenced);
  }

  private void describeScan(JsonGenerator json, ScanEntry entry) throws Exception {
    Table table = entry.table();
    json.writeStartObject();
    Bridge.writeTableState(json, table, properties);
    json.writeArrayFieldStart("output");
    ExpressionJson.writeLongs(json, entry.output());
    json.writeEndArray();
    Set<String> referenced = new LinkedHashSet<>();
    json.writeArrayFieldStart("filters");
    for (Expression expression : Members.filters(entry.scan())) {
      ExpressionJson.write(json, expression, referenced);
    }
    json.writeEndArray();
    ExpressionJson.writeFields(json, "fields", table, referenced);
    // the table's top-level columns the scan reads (what a skipped row group saves reading)
    json.writeArrayFieldStart("read_fields");
    for (String name : entry.scan().readSchema().fieldNames()) {
      Types.NestedField field = ExpressionJson.resolveField(table.schema(), name);
      if (field != null && table.schema().asStruct().field(field.fieldId()) != null) {
        json.writeNumber(field.fieldId());
      }
    }
    json.writeEndArray();
    // the files of the scan's tasks, by digest; whole only the first time this JVM sends them (a query
    // asked again names the same files, and the answer stays short enough to cross py4j directly)
    if (entry.aggregate() != null && entry.aggregate().filterWhole()) {
      entry.aggregate().write(json, table, entry.tasks());
    }
    String digest = filesDigest(table, entry.tasks());
    json.writeStringField("files_digest", digest);
    if (!SENT_FILES.sent(digest)) {
      writeFiles(json, table, entry.tasks());
    }
    json.writeEndObject();
  }

  /** The files of scan {@code index}'s tasks, as {@link #describe} writes them the first time. */
  public String scanFiles(int index) throws Exception {
    ScanEntry entry = scans.get(index);
    return Answers.json(json -> {
      json.writeStartObject();
      writeFiles(json, entry.table(), entry.tasks());
      json.writeEndObject();
    });
  }

  /** The files of {@code tasks}: paths without the table location they share, counts, sizes. */
  private static void writeFiles(JsonGenerator json, Table table, List<FileScanTask> tasks) throws IOException {
    String prefix = table.location() + "/";
    json.writeStringField("prefix", prefix);
    json.writeArrayFieldStart("files");
    for (FileScanTask task : tasks) {
      String path = task.file().location();
      json.writeString(path.startsWith(prefix) ? path.substring(prefix.length()) : "\u0000" + path);
    }
    json.writeEndArray();
    json.writeArrayFieldStart("records");
    for (FileScanTask task : tasks) {
      json.writeNumber(task.file().recordCount());
    }
    json.writeEndArray();
    json.writeArrayFieldStart("sizes");
    for (FileScanTask task : tasks) {
      json.writeNumber(task.file().fileSizeInBytes());
    }
    json.writeEndArray();
  }

  /** A digest of what {@code writeFiles} writes for {@code tasks}: equal digests, equal files. */
  private static String filesDigest(Table table, List<FileScanTask> tasks) {
    StringBuilder text = new StringBuilder(table.location());
    for (FileScanTask task : tasks) {
      text.append('\u0000').append(task.file().location()).append('\u0001').append(task.file().recordCount())
          .append('\u0001').append(task.file().fileSizeInBytes());
    }
    return Answers.sha256(text.toString());
  }

  /**
   * A DataFrame of the same analysed plan with some relations reading staged tasks instead.
   * {@code plan} (JSON): a list of {"relation": i, "scan": j, "files": [[task, [start, end, ...]] or
   * [task]]} (the scan's own tasks, whole or cut to byte ranges), or {"relation": i, "union":
   * [[scan, task], ...]} (whole files without any scan's residual, for a table several scans read).
   * Returns {@code null} when nothing was replaced.
   */
  public Dataset<Row> staged(String plan, SparkSession session) throws Exception {
    JsonNode root = Answers.MAPPER.readTree(plan);
    Map<LogicalPlan, LogicalPlan> replacements = Plans.identityMap();
    TaskChoice choice = new TaskChoice();
    List<Reset> resets = new ArrayList<>(); // what the planned query may read instead
    boolean union = false;
    for (JsonNode item : root) {
      DataSourceV2Relation relation = relations.get(item.get("relation").asInt());
      Table table = ((SparkTable) relation.table()).table();
      List<FileScanTask> chosen = new ArrayList<>();
      if (item.has("union")) {
        union = true;
        for (JsonNode file : item.get("union")) {
          chosen.add(choice.withoutResidual(scans.get(file.get(0).asInt()).tasks().get(file.get(1).asInt())));
        }
      } else {
        ScanEntry entry = scans.get(item.get("scan").asInt());
        chosen = choice.chosen(entry.tasks(), item.get("files"));
        resets.add(new Reset(entry.scan(), chosen));
      }
      if (chosen.isEmpty()) { // no file can hold a matching row: the relation reads nothing
        replacements.put(relation, SparkLine.empty(relation));
        continue;
      }
      // the caller names each set, so it knows what it staged without asking again
      String setId = item.has("set_id") ? item.get("set_id").asText() : "zskip-read-" + UUID.randomUUID();
      ScanTaskSetManager.get().stageTasks(table, setId, chosen);
      Bridge.staged(setId, table);
      replacements.put(relation, SparkLine.staged(relation, table, setId));
    }
    if (replacements.isEmpty()) {
      return null;
    }
    QueryExecution original = SparkLine.execution(frame);
    LogicalPlan replaced = Plans.replace(original.analyzed(), replacements);
    if (!union) {
      try {
        for (Reset reset : resets) {
          Members.resetTasks(reset.scan(), reset.tasks());
        }
        // the query's columns are the original's: its row encoder serves (building one costs 0.4 ms)
        return SparkLine.withExecution(frame, SparkLine.planned(session, replaced, original));
      } catch (ReflectiveOperationException | RuntimeException e) {
        // an Iceberg runtime without the hook, or one refusing these tasks: Spark optimizes and plans
        // the staged query instead
      }
    }
    return SparkLine.ofRows(session, replaced);
  }

  /**
   * The optimized plan these scans came from, with each scan {@code answer} names reading only the tasks
   * it kept.  {@code answer} (JSON): {"scans": a list of {"scan": j, "note": text} (keep every task) or
   * {"scan": j, "files": [...] as {@link TaskChoice#chosen} takes them, "note": text}}, or {"error": why
   * planning failed} (thrown).  Every scan named is put behind {@link ScanView} (its explain line says
   * what zskip kept; it equals only a scan that keeps the same).  Nothing is changed until every answer
   * is read.
   */
  public LogicalPlan hooked(String answer) throws Exception {
    return hooked(Answers.MAPPER.readTree(answer));
  }

  public LogicalPlan hooked(JsonNode top) throws Exception {
    if (top.has("error")) {
      throw new IllegalStateException(top.get("error").asText());
    }
    TaskChoice choice = new TaskChoice();
    Map<LogicalPlan, LogicalPlan> replacements = Plans.identityMap();
    List<Reset> resets = new ArrayList<>();
    for (JsonNode item : top.get("scans")) {
      ScanEntry entry = scans.get(item.get("scan").asInt());
      DataSourceV2ScanRelation relation = entry.relation();
      String kept = "all";
      if (item.has("files")) {
        resets.add(new Reset(entry.scan(), choice.chosen(entry.tasks(), item.get("files"))));
        kept = Answers.sha256(item.get("files").toString());
      }
      Scan view = ScanView.of(entry.scan(), item.get("note").asText(), kept);
      DataSourceV2ScanRelation viewed = new DataSourceV2ScanRelation(
          relation.relation(), view, relation.output(), relation.keyGroupedPartitioning(), relation.ordering());
      replacements.put(relation, viewed);
      if (item.has("aggregate") && entry.aggregate() != null && entry.aggregate().filterWhole()) {
        // the aggregate over the scan merges the row groups the planner answered with what the scan reads
        Map<LogicalPlan, LogicalPlan> scan = Plans.identityMap();
        scan.put(relation, viewed);
        LogicalPlan child = Plans.replace(entry.aggregate().aggregate().child(), scan);
        replacements.put(entry.aggregate().aggregate(), entry.aggregate().rewrite(item.get("aggregate"), child));
      }
    }
    for (Reset reset : resets) {
      Members.resetTasks(reset.scan(), reset.tasks());
    }
    return replacements.isEmpty() ? root : Plans.replace(root, replacements);
  }

  /** A scan, and the tasks it reads instead of those it planned. */
  private record Reset(Scan scan, List<FileScanTask> tasks) {}
}
