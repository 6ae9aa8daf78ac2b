// zskip's side of the JVM: the few things planning asks the JVM for, each answered in one py4j call.
//
// Compiled once per JVM by Janino (which Spark ships for its code generation), so nothing has to be
// built at install time and a Java runtime is enough.  Janino compiles Java without generics'
// inference or lambdas: raw collections and explicit casts below are deliberate.
//
// Answers are JSON text.  A py4j answer longer than the JVM side's 8 KiB buffer waits for a delayed
// TCP acknowledgement (about 40 ms), so a long answer is written to a local file and only its path
// crosses py4j: the Python driver and this JVM always share a machine.
package zskip.bridge;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.expressions.NamedReference;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.expressions.UnboundPredicate;
import org.apache.iceberg.spark.ScanTaskSetManager;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.iceberg.types.Types;
//#if spark3
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
//#else
import org.apache.spark.sql.classic.Dataset; // Spark 4: the classic (not Connect) implementations
import org.apache.spark.sql.classic.SparkSession;
//#endif
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ParsedStatement;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public class Bridge {

  /** Whether {@code table} (a Spark catalog table) is an Iceberg table's data, not one of its metadata tables. */
  public static boolean dataTable(Object table) {
    return table instanceof SparkTable
        && !(((SparkTable) table).table() instanceof org.apache.iceberg.BaseMetadataTable);
  }

  static final int DIRECT = 6000; // characters an answer may have and still cross py4j directly
  // a join's dimension side Spark estimates at most this big sends its keys without a distinct
  static final String SMALL_SIDE = "spark.zskip.planning.smallJoinSideBytes";
  static final long SMALL_SIDE_BYTES = 16L << 20;
  static final JsonFactory JSON = new JsonFactory();
  static final ObjectMapper MAPPER = new ObjectMapper();
  static final Map METHODS = new HashMap(); // "class#name" -> Method (or the class name when absent)
  static final Map STAGED = new HashMap(); // staged set id -> its table, until released
  // name suffixes with which Iceberg's Spark catalog reads another state of a table (as zskip.iceberg.table)
  static final java.util.regex.Pattern OTHER_STATE = java.util.regex.Pattern.compile(
      "(branch|tag)_.+|snapshot_id_\\d+|at_timestamp_\\d+", java.util.regex.Pattern.CASE_INSENSITIVE);

  // ---- answers ----------------------------------------------------------------------------------

  static String answer(String text) throws Exception {
    if (text.length() <= DIRECT) {
      return text;
    }
    File file = File.createTempFile("zskip-answer-", ".json");
    Writer out = new OutputStreamWriter(new FileOutputStream(file), StandardCharsets.UTF_8);
    try {
      out.write(text);
    } finally {
      out.close();
    }
    return "\u0000" + file.getAbsolutePath();
  }

  // ---- statements ------------------------------------------------------------------------------

  /** Parse {@code text} with the session's parser (nothing runs): statement kind, relations, time travel. */
  public String parse(SparkSession session, String text) throws Exception {
    LogicalPlan plan = session.sessionState().sqlParser().parsePlan(text);
    StringWriter buffer = new StringWriter();
    JsonGenerator json = JSON.createGenerator(buffer);
    json.writeStartObject();
    String statement = null;
    boolean timeTravel = false;
    json.writeArrayFieldStart("relations");
    List pending = new ArrayList();
    pending.add(plan);
    while (!pending.isEmpty() && statement == null) {
      LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
      String name = nodeName(node);
      if (isStatement(node)) {
        statement = name;
        break;
      }
      if (name.equals("RelationTimeTravel")) {
        timeTravel = true;
      }
      if (node instanceof UnresolvedRelation) {
        UnresolvedRelation relation = (UnresolvedRelation) node;
        scala.Option start = relation.origin().startIndex();
        scala.Option stop = relation.origin().stopIndex();
        if (start.isDefined() && stop.isDefined()) {
          json.writeStartObject();
          json.writeStringField("identifier", relation.multipartIdentifier().mkString("."));
          json.writeNumberField("start", ((Integer) start.get()).intValue());
          json.writeNumberField("stop", ((Integer) stop.get()).intValue());
          json.writeEndObject();
        }
      }
      scala.collection.Iterator children = node.children().iterator();
      while (children.hasNext()) {
        pending.add(children.next());
      }
    }
    json.writeEndArray();
    json.writeStringField("statement", statement);
    json.writeBooleanField("time_travel", timeTravel);
    json.writeEndObject();
    json.close();
    return answer(buffer.toString());
  }

  static String nodeName(LogicalPlan node) {
    String name = node.getClass().getSimpleName();
    return name.endsWith("$") ? name.substring(0, name.length() - 1) : name;
  }

  /** Whether a parsed plan node is a statement (DDL, DML, CALL, SET, ...) rather than part of a query. */
  static boolean isStatement(LogicalPlan node) {
    String name = nodeName(node);
    return node instanceof Command || node instanceof ParsedStatement || name.equals("InsertIntoDir")
        || name.equals("InsertIntoStatement") || name.equals("CallStatement")
        || name.equals("Call"); // Spark 4 parses CALL itself
  }

  /**
   * {@code text} parsed and analysed when it is a single query reading current table states (Spark's
   * {@code sql} without parsing the text twice), or {@code null}: a statement, time travel, or a text
   * this call does not judge; {@link #parse} then says which.  Analysis errors are thrown as Spark's.
   */
  public Dataset query(SparkSession session, String text) throws Exception {
    LogicalPlan plan;
    try {
      plan = session.sessionState().sqlParser().parsePlan(text);
    } catch (Exception e) {
      return null;
    }
    List pending = new ArrayList();
    pending.add(plan);
    while (!pending.isEmpty()) {
      LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
      if (isStatement(node) || nodeName(node).equals("RelationTimeTravel")) {
        return null;
      }
      if (node instanceof UnresolvedRelation
          && OTHER_STATE.matcher((String) ((UnresolvedRelation) node).multipartIdentifier().last()).matches()) {
        return null; // the name ends in a branch, tag, snapshot or timestamp (``t.branch_dev``)
      }
      scala.collection.Iterator children = node.children().iterator();
      while (children.hasNext()) {
        pending.add(children.next());
      }
    }
    return Dataset.ofRows(session, plan);
  }

  // ---- scans -----------------------------------------------------------------------------------

  // set while zskip plans on this thread: zskip's optimizer rule (PlanHook.java) lets the plans of the
  // queries zskip itself plans (zskip.sql, zskip.read) or runs to plan (a dimension's keys) pass untouched
  public static final ThreadLocal PLANNING = new ThreadLocal();

  /** The Iceberg scans of {@code frame}'s physical plan (planning it, as execution would). */
  public Scans scans(Dataset frame, String properties) throws Exception {
    Object outer = PLANNING.get();
    PLANNING.set(Boolean.TRUE);
    try {
      return new Scans(frame, properties.isEmpty() ? new String[0] : properties.split("\u0001"));
    } finally {
      if (outer == null) {
        PLANNING.remove();
      }
    }
  }

  /**
   * The Iceberg tables {@code frame}'s analysed plan reads, each once, as JSON (name, location, storage,
   * current snapshot and the table {@code properties} asked for): planning reads their zskip files while
   * {@link #scans} plans the query.  Tables only subqueries read are not among them.
   */
  public String tables(Dataset frame, String properties) throws Exception {
    String[] wanted = properties.isEmpty() ? new String[0] : properties.split("\u0001");
    StringWriter buffer = new StringWriter();
    JsonGenerator json = JSON.createGenerator(buffer);
    json.writeStartArray();
    java.util.Set seen = new java.util.HashSet();
    List pending = new ArrayList();
    pending.add(frame.queryExecution().analyzed());
    while (!pending.isEmpty()) {
      LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
      if (node instanceof DataSourceV2Relation && dataTable(((DataSourceV2Relation) node).table())) {
        SparkTable relation = (SparkTable) ((DataSourceV2Relation) node).table();
        if (seen.add(relation.table().name())) {
          json.writeStartObject();
          writeTableState(json, relation.table(), wanted);
          json.writeEndObject();
        }
      }
      scala.collection.Iterator children = node.children().iterator();
      while (children.hasNext()) {
        pending.add(children.next());
      }
    }
    json.writeEndArray();
    json.close();
    return answer(buffer.toString());
  }

  /** A table's name, location, storage, current snapshot and those of {@code properties} it has. */
  static void writeTableState(JsonGenerator json, Table table, String[] properties) throws Exception {
    json.writeStringField("table", table.name());
    json.writeStringField("location", table.location());
    json.writeFieldName("storage");
    json.writeRawValue(storage(table));
    Snapshot snapshot = table.currentSnapshot();
    if (snapshot == null) {
      json.writeNullField("snapshot");
    } else {
      json.writeNumberField("snapshot", snapshot.snapshotId());
    }
    json.writeObjectFieldStart("properties");
    Map tableProperties = table.properties();
    for (int i = 0; i < properties.length; i++) {
      Object value = tableProperties.get(properties[i]);
      if (value != null) {
        json.writeStringField(properties[i], (String) value);
      }
    }
    json.writeEndObject();
  }

  /** Calls the no-argument method {@code name} that {@code target} has or inherits, protected or not. */
  public static Object call(Object target, String name) throws Exception {
    String key = target.getClass().getName() + "#" + name;
    Object found;
    synchronized (METHODS) {
      found = METHODS.get(key);
      if (found == null) {
        found = key;
        for (Class cls = target.getClass(); cls != null && found == key; cls = cls.getSuperclass()) {
          Method[] methods = cls.getDeclaredMethods();
          for (int i = 0; i < methods.length; i++) {
            if (methods[i].getName().equals(name) && methods[i].getParameterCount() == 0) {
              methods[i].setAccessible(true);
              found = methods[i];
              break;
            }
          }
        }
        METHODS.put(key, found);
      }
    }
    if (!(found instanceof Method)) {
      throw new IllegalStateException("no method " + name + " on " + target.getClass().getName());
    }
    return ((Method) found).invoke(target, new Object[0]);
  }

  /** Calls the one-argument method {@code name(type)} that {@code target} has or inherits, protected or not. */
  static Object callWith(Object target, String name, Class type, Object argument) throws Exception {
    return SnapshotFiles.invoke(target, name, new Class[] {type}, new Object[] {argument});
  }

  /**
   * The execution of a staged query whose first plan is the one Spark already built for the original
   * query, its Iceberg scans reset to the kept tasks (Iceberg's own hook for runtime filtering): running
   * it costs no second optimization or physical planning.  Its analysed plan is the staged one, so
   * every DataFrame derived from it reads the staged tasks through its own plan.
   */
  public static class Planned extends org.apache.spark.sql.execution.QueryExecution {
    final org.apache.spark.sql.execution.QueryExecution original;

    Planned(SparkSession session, LogicalPlan staged, org.apache.spark.sql.execution.QueryExecution original) {
      super(
          session,
          staged,
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$3(),
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$4()
//#if spark4
          , org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$5(),
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$6()
//#endif
          );
      this.original = original;
      staged.setAnalyzed();
    }

    /** The staged plan as it is: the original's analysed plan with resolved relations swapped in. */
    public LogicalPlan analyzed() {
      return logical();
    }

    public LogicalPlan optimizedPlan() {
      return original.optimizedPlan();
    }

    public SparkPlan sparkPlan() {
      return original.sparkPlan();
    }

    public SparkPlan executedPlan() {
      return original.executedPlan();
    }

    public org.apache.spark.rdd.RDD toRdd() {
      return original.toRdd();
    }
  }

  /** An analysed plan taken as it is: Spark does not analyse it again. */
  public static class Analysed extends org.apache.spark.sql.execution.QueryExecution {
    Analysed(SparkSession session, LogicalPlan analysed) {
      super(
          session,
          analysed,
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$3(),
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$4()
//#if spark4
          , org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$5(),
          org.apache.spark.sql.execution.QueryExecution.$lessinit$greater$default$6()
//#endif
          );
      analysed.setAnalyzed();
    }

    public LogicalPlan analyzed() {
      return logical();
    }
  }

  /**
   * {@code frame} with each Iceberg relation of a table's current state reading through
   * {@link SnapshotFiles} (its scans plan from the snapshot's file list in memory), unless the
   * session sets {@code spark.zskip.planning.listedFiles} to false; the same rows, columns and plan.
   */
  static Dataset listed(Dataset frame) {
    SparkSession session = frame.sparkSession();
    if (session.conf().get("spark.zskip.planning.listedFiles", "true").equalsIgnoreCase("false")) {
      return frame;
    }
    LogicalPlan analysed = frame.queryExecution().analyzed();
    IdentityHashMap replacements = new IdentityHashMap();
    List pending = new ArrayList();
    pending.add(analysed);
    while (!pending.isEmpty()) {
      LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
      if (node instanceof org.apache.spark.sql.catalyst.plans.logical.Sample) {
        continue; // a sample draws from the scan's splits: Iceberg's own planning keeps its rows Spark's
      }
      if (node instanceof DataSourceV2Relation && dataTable(((DataSourceV2Relation) node).table())) {
        DataSourceV2Relation relation = (DataSourceV2Relation) node;
        SparkTable table = SnapshotFiles.reading((SparkTable) relation.table());
        if (table != null) {
          replacements.put(
              relation,
              new DataSourceV2Relation(
                  table, relation.output(), relation.catalog(), relation.identifier(), relation.options()
//#if spark4
                  , relation.timeTravelSpec()
//#endif
                  ));
        }
      }
      pending.addAll(javaList(node.children()));
    }
    if (replacements.isEmpty()) {
      return frame;
    }
    return new Dataset(new Analysed(session, replace(analysed, replacements)), frame.encoder());
  }

  // the name of Iceberg's protected accessor for a scan's pushed filters
//#if spark3
  public static final String FILTERS = "filterExpressions";
//#else
  public static final String FILTERS = "filters";
//#endif

  public static List javaList(Object iterableOrSeq) {
    List out = new ArrayList();
    if (iterableOrSeq instanceof scala.collection.Iterable) {
      scala.collection.Iterator it = ((scala.collection.Iterable) iterableOrSeq).iterator();
      while (it.hasNext()) {
        out.add(it.next());
      }
    } else {
      Iterator it = ((Iterable) iterableOrSeq).iterator();
      while (it.hasNext()) {
        out.add(it.next());
      }
    }
    return out;
  }

  static List exprIds(scala.collection.Seq attributes) {
    List ids = new ArrayList();
    scala.collection.Iterator it = attributes.iterator();
    while (it.hasNext()) {
      ids.add(Long.valueOf(((Attribute) it.next()).exprId().id()));
    }
    return ids;
  }

  /** One query's Iceberg scans, their tasks and the relations they read; kept while Python plans. */
  public static class Scans {
    final Dataset frame; // null for the scans of an optimized plan (zskip's rule, PlanHook.java)
    final SparkSession session;
    final LogicalPlan root; // the optimized plan of those scans, or null
    final String[] properties;
    // Object[] {scan, table, tasks (List), output ids (List), its DataSourceV2ScanRelation or null}
    final List scans = new ArrayList();
    final List relations = new ArrayList(); // DataSourceV2Relation of Iceberg tables, main plan only
    // Object[] {Integer scan, String column, LogicalPlan dimension side, Attribute key, dimension scan,
    // String filter, Boolean every condition pushed, String conditions and pushed filters, List of the
    // dimension columns the conditions name, List of the filters pushed to the dimension's scan}
    final List joins = new ArrayList();

    /** The Iceberg batch scans {@code scanRelations} (DataSourceV2ScanRelation) of {@code plan}, an optimized plan. */
    public Scans(SparkSession session, LogicalPlan plan, List scanRelations, String[] properties) throws Exception {
      this.frame = null;
      this.session = session;
      this.root = plan;
      this.properties = properties;
      for (int i = 0; i < scanRelations.size(); i++) {
        org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation relation =
            (org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) scanRelations.get(i);
        Object scan = relation.scan();
        scans.add(new Object[] {scan, call(scan, "table"), call(scan, "tasks"), exprIds(relation.output()), relation});
      }
      findJoins(plan);
    }

    Scans(Dataset frame, String[] properties) throws Exception {
      this.frame = listed(frame);
      this.session = this.frame.sparkSession();
      this.root = null;
      this.properties = properties;
      frame = this.frame;
      List leaves = new ArrayList();
      List physical = new ArrayList();
      physical.add(frame.queryExecution().sparkPlan());
      while (!physical.isEmpty()) {
        SparkPlan node = (SparkPlan) physical.remove(physical.size() - 1);
        if (node instanceof org.apache.spark.sql.execution.SampleExec) {
          continue; // TABLESAMPLE draws from the scan's partitions as Spark splits them: fewer files, other rows
        }
        if (node.children().isEmpty()) {
          leaves.add(0, node); // in the order of collectLeaves: left to right
        }
        physical.addAll(javaList(node.children()));
      }
      for (int l = 0; l < leaves.size(); l++) {
        Object leaf = leaves.get(l);
        if (!(leaf instanceof BatchScanExec)) {
          continue;
        }
        Object scan = ((BatchScanExec) leaf).scan();
        if (scan.getClass().getName().indexOf("SparkBatchQueryScan") < 0) {
          continue;
        }
        Table table = (Table) call(scan, "table");
        if (table instanceof org.apache.iceberg.BaseMetadataTable) {
          continue; // t.files, t.snapshots, ...: their tasks read metadata, not data files zskip knows
        }
        List tasks = (List) call(scan, "tasks");
        scans.add(new Object[] {scan, table, tasks, exprIds(((BatchScanExec) leaf).output()), null});
      }
      List pending = new ArrayList();
      pending.add(frame.queryExecution().analyzed());
      while (!pending.isEmpty()) {
        LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
        if (node instanceof DataSourceV2Relation && dataTable(((DataSourceV2Relation) node).table())) {
          relations.add(node);
        }
        scala.collection.Iterator children = node.children().iterator();
        while (children.hasNext()) {
          pending.add(children.next());
        }
      }
      findJoins(frame.queryExecution().optimizedPlan());
    }

    /** The query as planned: its current-state Iceberg relations read through {@link SnapshotFiles}. */
    public Dataset frame() {
      return frame;
    }

    /** The scan (index into {@code scans}) producing expression id {@code id}, or -1. */
    int scanOf(long id) {
      for (int i = 0; i < scans.size(); i++) {
        if (((List) ((Object[]) scans.get(i))[3]).contains(Long.valueOf(id))) {
          return i;
        }
      }
      return -1;
    }

    /**
     * Inner (and semi / outer where the scan is on the kept side) equi-joins of an Iceberg scan's column to
     * a key of a filtered Iceberg table: every row the join outputs has a fact key among the keys the
     * dimension side yields, so the fact scan may skip files holding none of them.
     */
    void findJoins(LogicalPlan root) {
      List pending = new ArrayList();
      pending.add(root);
      while (!pending.isEmpty()) {
        LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
        pending.addAll(javaList(node.children()));
        if (!(node instanceof org.apache.spark.sql.catalyst.plans.logical.Join)) {
          continue;
        }
        org.apache.spark.sql.catalyst.plans.logical.Join join = (org.apache.spark.sql.catalyst.plans.logical.Join) node;
        if (join.condition().isEmpty()) {
          continue;
        }
        String type = joinKind(join);
        List conjuncts = new ArrayList();
        splitAnd((org.apache.spark.sql.catalyst.expressions.Expression) join.condition().get(), conjuncts);
        for (int i = 0; i < conjuncts.size(); i++) {
          Object conjunct = conjuncts.get(i);
          if (!(conjunct instanceof org.apache.spark.sql.catalyst.expressions.EqualTo)) {
            continue;
          }
          org.apache.spark.sql.catalyst.expressions.EqualTo equal = (org.apache.spark.sql.catalyst.expressions.EqualTo) conjunct;
          Attribute a = keyAttribute(equal.left());
          Attribute b = keyAttribute(equal.right());
          if (a == null || b == null || !sameKind(a.dataType(), b.dataType())) {
            continue;
          }
          boolean aLeft = join.left().outputSet().contains(a);
          Attribute leftKey = aLeft ? a : b;
          Attribute rightKey = aLeft ? b : a;
          if (!join.left().outputSet().contains(leftKey) || !join.right().outputSet().contains(rightKey)) {
            continue;
          }
          // the fact side must be one whose rows the join keeps only when their key matches
          if (type.equals("INNER") || type.equals("LEFT SEMI") || type.equals("RIGHT OUTER")) {
            addJoin(join.left(), leftKey, join.right(), rightKey);
          }
          if (type.equals("INNER") || type.equals("LEFT OUTER")) {
            addJoin(join.right(), rightKey, join.left(), leftKey);
          }
        }
      }
    }

    void addJoin(LogicalPlan factSide, Attribute factKey, LogicalPlan dimensionSide, Attribute dimensionKey) {
      int scan = scanOf(factKey.exprId().id());
      if (scan < 0 || !rowWise(factSide, factKey.exprId().id())) {
        return;
      }
      StringBuilder pushed = new StringBuilder();
      StringBuilder conditions = new StringBuilder();
      List pushedFilters = new ArrayList();
      List conditionList = new ArrayList();
      Object dimensionScan = dimensionScan(
          dimensionSide, dimensionKey.exprId().id(), pushed, conditions, pushedFilters, conditionList);
      if (dimensionScan == null || (pushed.length() == 0 && conditions.length() == 0)) {
        return; // not a plain filtered Iceberg table: every key would do, or its keys are not ours to know
      }
      String filter = conditions.length() > 0 ? conditions.toString() : pushed.toString(); // Spark's SQL reads best
      // every condition of the side reached Iceberg when each one has a pushed counterpart (Spark pushes a
      // condition whole or not at all): then Iceberg's own reader yields exactly the side's keys
      boolean allPushed = pushedFilters.size() == conditionList.size();
      // the dimension's columns the side's conditions name (what the advisor clusters a fact table by)
      java.util.Set named = new java.util.TreeSet();
      for (int i = 0; i < conditionList.size(); i++) {
        scala.collection.Iterator references =
            ((org.apache.spark.sql.catalyst.expressions.Expression) conditionList.get(i)).references().iterator();
        while (references.hasNext()) {
          named.add(((Attribute) references.next()).name());
        }
      }
      joins.add(new Object[] {Integer.valueOf(scan), factKey.name(), dimensionSide, dimensionKey, dimensionScan,
          filter, Boolean.valueOf(allPushed), conditions.toString() + "\u0001" + pushed.toString(), new ArrayList(named),
          pushedFilters});
    }

    /**
     * The join's type as SQL spells it ("INNER", "LEFT SEMI", ...); "EXISTENCE" for the join Spark makes of
     * a subquery inside OR or NOT, which has no SQL of its own (asking throws) and keeps every left row.
     */
    static String joinKind(org.apache.spark.sql.catalyst.plans.logical.Join join) {
      if (join.joinType() instanceof org.apache.spark.sql.catalyst.plans.ExistenceJoin) {
        return "EXISTENCE";
      }
      return join.joinType().sql();
    }

    /** Whether every row {@code node} yields comes from one row of the scan producing {@code id}, key unchanged. */
    boolean rowWise(LogicalPlan node, long id) {
      if (node instanceof org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) {
        return true;
      }
      if (node instanceof org.apache.spark.sql.catalyst.plans.logical.Project
          || node instanceof org.apache.spark.sql.catalyst.plans.logical.Filter) {
        LogicalPlan child = (LogicalPlan) node.children().head();
        return node.expressions().forall(DETERMINISTIC) && carries(child, id) && rowWise(child, id);
      }
      if (node instanceof org.apache.spark.sql.catalyst.plans.logical.Join) {
        org.apache.spark.sql.catalyst.plans.logical.Join join = (org.apache.spark.sql.catalyst.plans.logical.Join) node;
        String type = joinKind(join);
        boolean left = carries(join.left(), id);
        if (type.equals("INNER") || type.equals("CROSS") || (left && (type.equals("LEFT SEMI")
            || type.equals("LEFT ANTI") || type.equals("LEFT OUTER"))) || (!left && type.equals("RIGHT OUTER"))) {
          return rowWise(left ? join.left() : join.right(), id);
        }
      }
      return false;
    }

    /**
     * The Iceberg scan under Projects and deterministic Filters yielding {@code id}; the filters pushed to it
     * into {@code pushed} (Iceberg's text), the Filters' conditions into {@code conditions} (Spark SQL).
     */
    Object dimensionScan(LogicalPlan node, long id, StringBuilder pushed, StringBuilder conditions,
        List pushedFilters, List conditionList) {
      if (node instanceof org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) {
        org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation relation =
            (org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) node;
        if (!dataTable(relation.relation().table()) || !carries(node, id)) {
          return null;
        }
        Object scan = relation.scan();
        if (scan.getClass().getName().indexOf("SparkBatchQueryScan") < 0) {
          return null;
        }
        try {
          List filters = javaList(call(scan, FILTERS));
          for (int i = 0; i < filters.size(); i++) {
            Expression expression = (Expression) filters.get(i);
            if (expression.op() != Expression.Operation.NOT_NULL) { // Spark infers these from the join itself
              pushed.append(pushed.length() == 0 ? "" : " AND ").append(expression.toString());
              pushedFilters.add(expression);
            }
          }
        } catch (Exception e) {
          return null;
        }
        return scan;
      }
      boolean project = node instanceof org.apache.spark.sql.catalyst.plans.logical.Project;
      boolean filtered = node instanceof org.apache.spark.sql.catalyst.plans.logical.Filter;
      if (!(project || filtered) || !node.expressions().forall(DETERMINISTIC) || node.toString().indexOf("PythonUDF") >= 0) {
        return null;
      }
      LogicalPlan child = (LogicalPlan) node.children().head();
      if (!carries(child, id)) {
        return null;
      }
      Object found = dimensionScan(child, id, pushed, conditions, pushedFilters, conditionList);
      if (found != null && filtered) {
        List conjuncts = new ArrayList();
        splitAnd(((org.apache.spark.sql.catalyst.plans.logical.Filter) node).condition(), conjuncts);
        for (int i = 0; i < conjuncts.size(); i++) {
          Object conjunct = conjuncts.get(i);
          if (!(conjunct instanceof org.apache.spark.sql.catalyst.expressions.IsNotNull)) {
            String condition = ((org.apache.spark.sql.catalyst.expressions.Expression) conjunct).sql();
            conditions.append(conditions.length() == 0 ? "" : " AND ").append(condition);
            conditionList.add(conjunct);
          }
        }
      }
      return found;
    }

    /** Spark's estimate of what {@code plan} yields, in bytes (Long.MAX_VALUE when it has none). */
    long estimatedBytes(LogicalPlan plan) {
      try {
        return ((Number) plan.stats().sizeInBytes()).longValue();
      } catch (Exception e) {
        return Long.MAX_VALUE;
      }
    }

    /** The keys the dimension side of join {@code index} yields, as 64-bit integers in a local file. */
    public String joinKeys(int index, int cap) throws Exception {
      Object outer = PLANNING.get();
      PLANNING.set(Boolean.TRUE);
      try {
        return keysOf(index, cap);
      } finally {
        if (outer == null) {
          PLANNING.remove();
        }
      }
    }

    /**
     * The distinct keys of join {@code index}'s dimension side, in a local file, as "L:path" (64-bit
     * integers: whole numbers, a date's days since 1970-01-01, a timestamp's microseconds since the
     * epoch) or "S:path" (text: strings, and decimals as Spark writes them); "" when more than {@code cap}.
     */
    String keysOf(int index, int cap) throws Exception {
      Object[] entry = (Object[]) joins.get(index);
      LogicalPlan side = (LogicalPlan) entry[2];
      Attribute key = (Attribute) entry[3];
      List columns = new ArrayList();
      columns.add(key);
      scala.collection.immutable.List projected = scalaList(columns);
      String name = "`" + key.name().replace("`", "``") + "`";
      String type = key.dataType().typeName();
      boolean text = type.equals("string") || type.startsWith("decimal");
      String value = integral(key.dataType()) ? "CAST(" + name + " AS BIGINT)"
          : type.equals("date") ? "unix_date(" + name + ")"
          : type.equals("timestamp") ? "unix_micros(" + name + ")"
          : "CAST(" + name + " AS STRING)";
      long small = Long.parseLong(session.conf().get(SMALL_SIDE, String.valueOf(SMALL_SIDE_BYTES)));
      boolean smallSide = estimatedBytes(side) <= small;
      java.util.Set distinct = smallSide && ((Boolean) entry[6]).booleanValue()
          ? keysOnDriver(entry[4], key, cap) : null;
      if (distinct == null) {
        Dataset keys = Dataset.ofRows(session, new org.apache.spark.sql.catalyst.plans.logical.Project(projected, side));
        Dataset selected = keys.where(name + " IS NOT NULL").selectExpr(value);
        // a small dimension side sends its keys to the driver in one stage, without the shuffle of a
        // distinct (which costs more than the rows it would save); the driver drops the repeats
        List rows = smallSide ? selected.collectAsList() : selected.distinct().limit(cap + 1).collectAsList();
        distinct = new java.util.HashSet();
        for (int i = 0; i < rows.size() && distinct.size() <= cap; i++) {
          org.apache.spark.sql.Row row = (org.apache.spark.sql.Row) rows.get(i);
          distinct.add(text ? (Object) row.getString(0) : (Object) Long.valueOf(((Number) row.get(0)).longValue()));
        }
      }
      if (distinct.size() > cap) {
        return "";
      }
      File file = File.createTempFile("zskip-keys-", ".bin");
      java.io.DataOutputStream out = new java.io.DataOutputStream(new java.io.BufferedOutputStream(new FileOutputStream(file)));
      try {
        if (text) { // the count, every length, then every key's UTF-8 bytes: Python reads them as one Arrow array
          List encoded = new ArrayList();
          Iterator values = distinct.iterator();
          while (values.hasNext()) {
            encoded.add(((String) values.next()).getBytes(StandardCharsets.UTF_8));
          }
          out.writeInt(encoded.size());
          for (int i = 0; i < encoded.size(); i++) {
            out.writeInt(((byte[]) encoded.get(i)).length);
          }
          for (int i = 0; i < encoded.size(); i++) {
            out.write((byte[]) encoded.get(i));
          }
        } else {
          Iterator values = distinct.iterator();
          while (values.hasNext()) {
            out.writeLong(((Long) values.next()).longValue());
          }
        }
      } finally {
        out.close();
      }
      return (text ? "S:" : "L:") + file.getAbsolutePath();
    }

    /**
     * The distinct non-NULL keys of a small dimension side whose every condition reached Iceberg, read in
     * the driver by Iceberg's own reader (the scan's snapshot, its filters evaluated row by row, delete
     * files applied): a few reads instead of a Spark job.  At most {@code cap + 1} keys; {@code null} when
     * the key's type is one whose values this reader and Spark's text of them could tell apart (only whole
     * numbers, dates and strings are read here).
     */
    java.util.Set keysOnDriver(Object scan, Attribute key, int cap) throws Exception {
      String type = key.dataType().typeName();
      boolean whole = integral(key.dataType());
      Object planned = call(scan, "scan");
      if ((!whole && !type.equals("date") && !type.equals("string")) || !(planned instanceof org.apache.iceberg.BatchScan)) {
        return null; // an incremental read, or a key type this reader and Spark might write apart
      }
      org.apache.iceberg.BatchScan iceberg = (org.apache.iceberg.BatchScan) planned;
      Snapshot snapshot = iceberg.snapshot(); // the query's own: its time travel, branch or tag
      java.util.Set distinct = new java.util.HashSet();
      if (snapshot == null) {
        return distinct; // a table without a snapshot has no rows
      }
      List columns = new ArrayList();
      columns.add(key.name());
      Table table = iceberg.table();
      org.apache.iceberg.data.IcebergGenerics.ScanBuilder read = org.apache.iceberg.data.IcebergGenerics.read(table)
          .where(nullsNeverMatch(Expressions.rewriteNot(iceberg.filter()))).select(columns);
      Snapshot current = table.currentSnapshot();
      if (current == null || current.snapshotId() != snapshot.snapshotId()) {
        read = read.useSnapshot(snapshot.snapshotId()); // the current one reads in the table's schema, as Spark does
      }
      org.apache.iceberg.io.CloseableIterable records = (iceberg.isCaseSensitive() ? read : read.caseInsensitive()).build();
      try {
        Iterator rows = records.iterator();
        while (rows.hasNext() && distinct.size() <= cap) {
          Object value = ((org.apache.iceberg.data.Record) rows.next()).getField(key.name());
          if (value == null) {
            continue;
          }
          distinct.add(whole ? (Object) Long.valueOf(((Number) value).longValue())
              : type.equals("date") ? (Object) Long.valueOf(((java.time.LocalDate) value).toEpochDay())
              : (Object) value.toString());
        }
      } catch (RuntimeException e) {
        // a column or filter this reader binds or evaluates differently: Spark's own job reads the keys
        return null;
      } finally {
        records.close();
      }
      return distinct;
    }

    /**
     * {@code filter} (its NOTs pushed to the predicates) as SQL's WHERE reads it: a comparison of a NULL
     * is never true.  Iceberg's row evaluator is two-valued and not made for NULLs (an IN of a NULL string
     * throws), where Spark leaves a row out of the join whenever its condition is NULL; with every NOT at a
     * predicate, AND and OR of predicates true only on values give exactly the rows SQL keeps.
     */
    static Expression nullsNeverMatch(Expression filter) {
      if (filter instanceof org.apache.iceberg.expressions.And) {
        org.apache.iceberg.expressions.And and = (org.apache.iceberg.expressions.And) filter;
        return Expressions.and(nullsNeverMatch(and.left()), nullsNeverMatch(and.right()));
      }
      if (filter instanceof org.apache.iceberg.expressions.Or) {
        org.apache.iceberg.expressions.Or or = (org.apache.iceberg.expressions.Or) filter;
        return Expressions.or(nullsNeverMatch(or.left()), nullsNeverMatch(or.right()));
      }
      if (!(filter instanceof UnboundPredicate)) {
        return filter; // true, false, or a bound predicate (left as it is; an error falls back to Spark's job)
      }
      UnboundPredicate predicate = (UnboundPredicate) filter;
      Expression.Operation op = predicate.op();
      if (op == Expression.Operation.IS_NULL || op == Expression.Operation.NOT_NULL
          || op == Expression.Operation.IS_NAN || op == Expression.Operation.NOT_NAN) {
        return predicate; // true or false on NULLs too, as in SQL
      }
      return Expressions.and(
          Expressions.notNull((org.apache.iceberg.expressions.UnboundTerm) predicate.term()), predicate);
    }

    /** Everything planning needs about each scan and relation, as JSON. */
    public String describe() throws Exception {
      StringWriter buffer = new StringWriter();
      JsonGenerator json = JSON.createGenerator(buffer);
      json.writeStartObject();
      json.writeArrayFieldStart("output");
      writeLongs(json, exprIds(frame != null ? frame.queryExecution().analyzed().output() : root.output()));
      json.writeEndArray();
      // the session's zskip settings, so planning needs no py4j call of its own to read them
      json.writeObjectFieldStart("settings");
      scala.collection.Iterator confs = session.sessionState().conf().getAllConfs().iterator();
      while (confs.hasNext()) {
        scala.Tuple2 entry = (scala.Tuple2) confs.next();
        String key = (String) entry._1();
        if (key.startsWith("spark.zskip.")) {
          json.writeStringField(key, (String) entry._2());
        }
      }
      json.writeEndObject();
      json.writeArrayFieldStart("scans");
      for (int i = 0; i < scans.size(); i++) {
        Object[] entry = (Object[]) scans.get(i);
        describeScan(json, entry[0], (Table) entry[1], (List) entry[2], (List) entry[3]);
      }
      json.writeEndArray();
      json.writeArrayFieldStart("relations");
      for (int i = 0; i < relations.size(); i++) {
        DataSourceV2Relation relation = (DataSourceV2Relation) relations.get(i);
        json.writeStartObject();
        json.writeStringField("table", ((SparkTable) relation.table()).table().name());
        json.writeArrayFieldStart("output");
        writeLongs(json, exprIds(relation.output()));
        json.writeEndArray();
        json.writeEndObject();
      }
      json.writeEndArray();
      json.writeArrayFieldStart("joins");
      for (int i = 0; i < joins.size(); i++) {
        Object[] entry = (Object[]) joins.get(i);
        Table dimension = (Table) call(entry[4], "table");
        Object planned = call(entry[4], "scan");
        boolean ofSnapshot = planned instanceof org.apache.iceberg.BatchScan;
        // the snapshot the side reads (its time travel, branch or tag), not merely the table's current one
        Snapshot snapshot = ofSnapshot ? ((org.apache.iceberg.BatchScan) planned).snapshot() : dimension.currentSnapshot();
        LogicalPlan side = (LogicalPlan) entry[2];
        Table fact = (Table) ((Object[]) scans.get(((Integer) entry[0]).intValue()))[1];
        Types.NestedField field = resolveField(fact.schema(), (String) entry[1]);
        if (field == null) {
          continue; // not a column of the table itself
        }
        json.writeStartObject();
        json.writeNumberField("position", i);
        json.writeNumberField("scan", ((Integer) entry[0]).intValue());
        json.writeStringField("column", fact.schema().findColumnName(field.fieldId()));
        json.writeNumberField("field_id", field.fieldId());
        json.writeStringField("field_type", field.type().toString());
        json.writeStringField("dimension", dimension.name());
        if (snapshot == null) {
          json.writeNullField("snapshot");
        } else {
          json.writeNumberField("snapshot", snapshot.snapshotId());
        }
        json.writeStringField("key", ((Attribute) entry[3]).name());
        json.writeStringField("filter", (String) entry[5]);
        json.writeArrayFieldStart("filter_columns");
        List named = (List) entry[8];
        for (int k = 0; k < named.size(); k++) {
          json.writeString((String) named.get(k));
        }
        json.writeEndArray();
        writeDimensionFilter(
            json, dimension, ((Attribute) entry[3]).name(), named, (List) entry[9], ((Boolean) entry[6]).booleanValue());
        // what the keys depend on: the snapshot the side reads, its key, and every condition of its Filters
        // and of its scan (a side is Projects and Filters over one scan, so nothing else drops a row);
        // a scan of no one snapshot (an incremental read) is told apart by the whole plan of its side
        json.writeStringField(
            "signature",
            sha256(dimension.name() + "\u0001" + (snapshot == null ? "" : String.valueOf(snapshot.snapshotId()))
                + "\u0001" + ((Attribute) entry[3]).name() + "\u0001" + entry[7]
                + (ofSnapshot ? "" : "\u0001" + side.canonicalized().toString())));
        json.writeEndObject();
      }
      json.writeEndArray();
      json.writeEndObject();
      json.close();
      return answer(buffer.toString());
    }

    /**
     * The dimension side's key and filter by the dimension's field ids, for a record that outlives its
     * column names: the key's field id, those of the columns its conditions name (-1: not a column of the
     * table), the filters pushed to its scan (as a scan's are written) with the fields they name, and
     * whether they are every condition of the side.
     */
    void writeDimensionFilter(JsonGenerator json, Table dimension, String key, List named, List pushedFilters,
        boolean allPushed) throws Exception {
      Types.NestedField keyField = resolveField(dimension.schema(), key);
      if (keyField == null) {
        json.writeNullField("key_field_id");
      } else {
        json.writeNumberField("key_field_id", keyField.fieldId());
      }
      json.writeArrayFieldStart("filter_column_ids"); // of the columns the side's conditions name
      for (int k = 0; k < named.size(); k++) {
        Types.NestedField field = resolveField(dimension.schema(), (String) named.get(k));
        json.writeNumber(field == null ? -1 : field.fieldId());
      }
      json.writeEndArray();
      json.writeBooleanField("all_pushed", allPushed);
      Map referenced = new HashMap();
      json.writeArrayFieldStart("pushed");
      for (int i = 0; i < pushedFilters.size(); i++) {
        writeExpression(json, (Expression) pushedFilters.get(i), referenced);
      }
      json.writeEndArray();
      writeFields(json, "dimension_fields", dimension, referenced);
    }

    void describeScan(JsonGenerator json, Object scan, Table table, List tasks, List output) throws Exception {
      json.writeStartObject();
      writeTableState(json, table, properties);
      json.writeArrayFieldStart("output");
      writeLongs(json, output);
      json.writeEndArray();
      Map referenced = new HashMap();
      json.writeArrayFieldStart("filters");
      List filters = javaList(call(scan, FILTERS));
      for (int i = 0; i < filters.size(); i++) {
        writeExpression(json, (Expression) filters.get(i), referenced);
      }
      json.writeEndArray();
      writeFields(json, "fields", table, referenced);
      // the table's top-level columns the scan reads (what a skipped row group saves reading)
      json.writeArrayFieldStart("read_fields");
      String[] names = ((org.apache.spark.sql.connector.read.Scan) scan).readSchema().fieldNames();
      for (int i = 0; i < names.length; i++) {
        Types.NestedField field = resolveField(table.schema(), names[i]);
        if (field != null && table.schema().asStruct().field(field.fieldId()) != null) {
          json.writeNumber(field.fieldId());
        }
      }
      json.writeEndArray();
      // the files of the scan's tasks, by digest; whole only the first time this JVM sends them (a query
      // asked again names the same files, and the answer stays short enough to cross py4j directly)
      String digest = filesDigest(table, tasks);
      json.writeStringField("files_digest", digest);
      if (!SENT_FILES.sent(digest)) {
        writeFiles(json, table, tasks);
      }
      json.writeEndObject();
    }

    /** The fields of {@code table} that the terms {@code referenced} name, as field {@code name}. */
    void writeFields(JsonGenerator json, String name, Table table, Map referenced) throws Exception {
      json.writeArrayFieldStart(name);
      Iterator terms = referenced.keySet().iterator();
      while (terms.hasNext()) {
        String term = (String) terms.next();
        Types.NestedField field = resolveField(table.schema(), term);
        if (field != null) {
          json.writeStartObject();
          json.writeStringField("term", term);
          json.writeStringField("name", table.schema().findColumnName(field.fieldId()));
          json.writeNumberField("id", field.fieldId());
          json.writeStringField("type", field.type().toString());
          json.writeEndObject();
        }
      }
      json.writeEndArray();
    }

    /** The files of scan {@code index}'s tasks, as {@code describe} writes them the first time. */
    public String scanFiles(int index) throws Exception {
      Object[] entry = (Object[]) scans.get(index);
      StringWriter buffer = new StringWriter();
      JsonGenerator json = JSON.createGenerator(buffer);
      json.writeStartObject();
      writeFiles(json, (Table) entry[1], (List) entry[2]);
      json.writeEndObject();
      json.close();
      return answer(buffer.toString());
    }

    /**
     * A DataFrame of the same analysed plan with some relations reading staged tasks instead.
     * {@code plan} (JSON): a list of {"relation": i, "scan": j, "files": [[task, [start, end, ...]] or
     * [task]]} (the scan's own tasks, whole or cut to byte ranges), or {"relation": i, "union":
     * [[scan, task], ...]} (whole files without any scan's residual, for a table several scans read).
     * Returns {@code null} when nothing was replaced.
     */
    public Dataset staged(String plan, Object sessionObject) throws Exception {
      SparkSession session = (SparkSession) sessionObject;
      JsonNode root = (JsonNode) MAPPER.readTree(plan);
      IdentityHashMap replacements = new IdentityHashMap();
      IdentityHashMap texts = new IdentityHashMap(); // schema and spec JSON, written once per call
      List resets = new ArrayList(); // Object[] {scan, its kept tasks}: what the planned query may read instead
      boolean union = false;
      for (int i = 0; i < root.size(); i++) {
        JsonNode item = at(root, i);
        DataSourceV2Relation relation = (DataSourceV2Relation) relations.get(at(item, "relation").asInt());
        Table table = ((SparkTable) relation.table()).table();
        List chosen = new ArrayList();
        if (item.has("union")) {
          union = true;
          JsonNode files = at(item, "union");
          for (int k = 0; k < files.size(); k++) {
            Object[] entry = (Object[]) scans.get(at(at(files, k), 0).asInt());
            FileScanTask task = (FileScanTask) ((List) entry[2]).get(at(at(files, k), 1).asInt());
            chosen.add(withoutResidual(task, texts));
          }
        } else {
          Object[] entry = (Object[]) scans.get(at(item, "scan").asInt());
          chosen = chosenTasks(table, (List) entry[2], at(item, "files"), texts);
          resets.add(new Object[] {entry[0], chosen});
        }
        if (chosen.isEmpty()) { // no file can hold a matching row: the relation reads nothing
          replacements.put(
              relation,
              new LocalRelation(
                  relation.output(), (scala.collection.immutable.List) scala.collection.immutable.Nil$.MODULE$, false
//#if spark4
                  , LocalRelation.$lessinit$greater$default$4()
//#endif
                  ));
          continue;
        }
        // the caller names each set, so it knows what it staged without asking again
        String setId = item.has("set_id") ? at(item, "set_id").asText() : "zskip-read-" + UUID.randomUUID();
        ScanTaskSetManager.get().stageTasks(table, setId, chosen);
        synchronized (STAGED) {
          STAGED.put(setId, table);
        }
//#if spark3
        Map options = new HashMap(relation.options().asCaseSensitiveMap());
        options.put("scan-task-set-id", setId); // Iceberg's Spark 3.5 tables read a staged set by option
        replacements.put(
            relation,
            new DataSourceV2Relation(
                relation.table(), relation.output(), relation.catalog(), relation.identifier(),
                new CaseInsensitiveStringMap(options)));
//#else
        // Iceberg's Spark 4 runtime reads a staged set through a table of its own
        replacements.put(
            relation,
            new DataSourceV2Relation(
                new org.apache.iceberg.spark.source.SparkRewriteTable(table, setId), relation.output(),
                relation.catalog(), relation.identifier(), relation.options(), relation.timeTravelSpec()));
//#endif
      }
      if (replacements.isEmpty()) {
        return null;
      }
      LogicalPlan replaced = replace(frame.queryExecution().analyzed(), replacements);
      if (!union) {
        try {
          for (int i = 0; i < resets.size(); i++) {
            Object[] reset = (Object[]) resets.get(i);
            callWith(reset[0], "resetTasks", List.class, reset[1]);
          }
          Planned execution = new Planned(session, replaced, frame.queryExecution());
          // the query's columns are the original's: its row encoder serves (building one costs 0.4 ms)
          return new Dataset(execution, frame.encoder());
        } catch (Exception e) {
          // an Iceberg runtime without the hook: Spark optimizes and plans the staged query instead
        }
      }
      return Dataset.ofRows(session, replaced);
    }

    /**
     * The optimized plan these scans came from, with each scan {@code answer} names reading only the tasks
     * it kept.  {@code answer} (JSON): {"scans": a list of {"scan": j, "note": text} (keep every task) or
     * {"scan": j, "files": [...] as {@link #chosenTasks} takes them, "note": text}}, or {"error": why
     * planning failed} (thrown).  Every scan named is put behind
     * {@link ScanView} (its explain line says what zskip kept; it equals only a scan that keeps the same).
     * Nothing is changed until every answer is read.
     */
    public LogicalPlan hooked(String answer) throws Exception {
      JsonNode top = (JsonNode) MAPPER.readTree(answer);
      if (top.has("error")) {
        throw new IllegalStateException(at(top, "error").asText());
      }
      JsonNode root = at(top, "scans");
      IdentityHashMap texts = new IdentityHashMap();
      IdentityHashMap replacements = new IdentityHashMap();
      List resets = new ArrayList();
      for (int i = 0; i < root.size(); i++) {
        JsonNode item = at(root, i);
        Object[] entry = (Object[]) scans.get(at(item, "scan").asInt());
        org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation relation =
            (org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) entry[4];
        String kept = "all";
        if (item.has("files")) {
          List chosen = chosenTasks((Table) entry[1], (List) entry[2], at(item, "files"), texts);
          resets.add(new Object[] {entry[0], chosen});
          kept = sha256(at(item, "files").toString());
        }
        Object view = ScanView.of(entry[0], at(item, "note").asText(), kept);
        replacements.put(
            relation,
            new org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation(
                relation.relation(), (org.apache.spark.sql.connector.read.Scan) view, relation.output(),
                relation.keyGroupedPartitioning(), relation.ordering()));
      }
      for (int i = 0; i < resets.size(); i++) {
        Object[] reset = (Object[]) resets.get(i);
        callWith(reset[0], "resetTasks", List.class, reset[1]);
      }
      return replacements.isEmpty() ? this.root : replace(this.root, replacements);
    }
  }

  /**
   * A scan zskip planned, seen through a proxy of every interface it has: its description (what explain
   * and the Spark UI print) ends with what zskip kept, and it (and its batch) equals only a view of an
   * equal scan that keeps the same tasks, so Spark never reuses the output of a scan that kept other
   * tasks (or all of them) in its place.  Everything else is the scan's own.
   */
  public static class ScanView implements java.lang.reflect.InvocationHandler {
    final Object target;
    final String note;
    final String kept; // "all", or a digest of the kept tasks

    ScanView(Object target, String note, String kept) {
      this.target = target;
      this.note = note;
      this.kept = kept;
    }

    static Object of(Object target, String note, String kept) {
      return proxy(target, new ScanView(target, note, kept));
    }

    static Object proxy(Object target, java.lang.reflect.InvocationHandler handler) {
      java.util.LinkedHashSet interfaces = new java.util.LinkedHashSet();
      for (Class cls = target.getClass(); cls != null; cls = cls.getSuperclass()) {
        interfaces.addAll(java.util.Arrays.asList(cls.getInterfaces()));
      }
      return java.lang.reflect.Proxy.newProxyInstance(
          target.getClass().getClassLoader(), (Class[]) interfaces.toArray(new Class[0]), handler);
    }

    static ScanView viewOf(Object other) {
      if (other != null && java.lang.reflect.Proxy.isProxyClass(other.getClass())) {
        Object handler = java.lang.reflect.Proxy.getInvocationHandler(other);
        if (handler instanceof ScanView) {
          return (ScanView) handler;
        }
      }
      return null;
    }

    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      int arity = args == null ? 0 : args.length;
      if (name.equals("equals") && arity == 1) {
        ScanView other = viewOf(args[0]);
        return Boolean.valueOf(other != null && kept.equals(other.kept) && target.equals(other.target));
      }
      if (name.equals("hashCode") && arity == 0) {
        return Integer.valueOf(target.hashCode() * 31 + kept.hashCode());
      }
      if (name.equals("description") && arity == 0) {
        return invoked(method, args) + " " + note;
      }
      if (name.equals("toString") && arity == 0) {
        return target.toString() + " " + note;
      }
      Object result = invoked(method, args);
      if (name.equals("toBatch") && arity == 0 && result != null) {
        return proxy(result, new ScanView(result, note, kept)); // its equality is the scan's
      }
      return result;
    }

    Object invoked(Method method, Object[] args) throws Throwable {
      try {
        return method.invoke(target, args);
      } catch (java.lang.reflect.InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }

  /**
   * The tasks to read of a scan's {@code tasks}: {@code files} lists [task] (the whole file) or [task,
   * [start, end, ...]] (the task cut to those byte ranges), as {@link Scans#staged} takes them.
   */
  static List chosenTasks(Table table, List tasks, JsonNode files, IdentityHashMap texts) {
    List chosen = new ArrayList();
    for (int k = 0; k < files.size(); k++) {
      JsonNode file = at(files, k);
      FileScanTask task = (FileScanTask) tasks.get(at(file, 0).asInt());
      if (file.size() == 1 || !readsByteRanges(table, task)) {
        chosen.add(task); // the whole file (Spark applies the filter again)
      } else {
        JsonNode ranges = at(file, 1);
        for (int r = 0; r + 1 < ranges.size(); r += 2) {
          chosen.add(byteRange(task, at(ranges, r).asLong(), at(ranges, r + 1).asLong(), texts));
        }
      }
    }
    return chosen;
  }

  // ---- joins -----------------------------------------------------------------------------------

  static final scala.Function1 DETERMINISTIC = new scala.runtime.AbstractFunction1() {
    public Object apply(Object expression) {
      return Boolean.valueOf(((org.apache.spark.sql.catalyst.expressions.Expression) expression).deterministic());
    }
  };

  static void splitAnd(org.apache.spark.sql.catalyst.expressions.Expression expression, List out) {
    if (expression instanceof org.apache.spark.sql.catalyst.expressions.And) {
      org.apache.spark.sql.catalyst.expressions.And and = (org.apache.spark.sql.catalyst.expressions.And) expression;
      splitAnd(and.left(), out);
      splitAnd(and.right(), out);
    } else {
      out.add(expression);
    }
  }

  /**
   * The column a join key compares: a whole-number column (possibly widened by a cast), or a string,
   * date, timestamp or decimal column compared as it is.
   */
  static Attribute keyAttribute(org.apache.spark.sql.catalyst.expressions.Expression expression) {
    org.apache.spark.sql.catalyst.expressions.Expression inner = expression;
    if (inner instanceof org.apache.spark.sql.catalyst.expressions.Cast && integral(inner.dataType())) {
      inner = ((org.apache.spark.sql.catalyst.expressions.Cast) inner).child();
      if (!integral(inner.dataType())) {
        return null;
      }
    }
    if (!(inner instanceof Attribute) || !joinable(inner.dataType())) {
      return null;
    }
    return (Attribute) inner;
  }

  /** Whether two join keys of these types compare their values as they are (whole numbers of any width). */
  static boolean sameKind(org.apache.spark.sql.types.DataType a, org.apache.spark.sql.types.DataType b) {
    return (integral(a) && integral(b)) || a.sameType(b);
  }

  static boolean joinable(org.apache.spark.sql.types.DataType type) {
    String name = type.typeName();
    return integral(type) || name.equals("string") || name.equals("date") || name.equals("timestamp")
        || name.startsWith("decimal");
  }

  static boolean integral(org.apache.spark.sql.types.DataType type) {
    String name = type.typeName();
    return name.equals("long") || name.equals("integer") || name.equals("short") || name.equals("byte");
  }

  static boolean carries(LogicalPlan node, long id) {
    scala.collection.Iterator it = node.output().iterator();
    while (it.hasNext()) {
      if (((Attribute) it.next()).exprId().id() == id) {
        return true;
      }
    }
    return false;
  }

  /**
   * The field a pushed filter's term names. Spark hands Iceberg each column under the table's own
   * spelling, so the exact match comes first; the case-insensitive one only when that finds nothing,
   * and never an error: a table with columns {@code a} and {@code A} has no case-insensitive index.
   */
  static Types.NestedField resolveField(org.apache.iceberg.Schema schema, String name) {
    Types.NestedField field = schema.findField(name);
    if (field != null) {
      return field;
    }
    try {
      return schema.caseInsensitiveFindField(name);
    } catch (RuntimeException collide) {
      return null;
    }
  }

  // ---- storage ---------------------------------------------------------------------------------

  // what zskip.storage needs to reach a table's files as its FileIO does (and nothing else)
  static final String[] S3_PROPERTIES = {
    "s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.path-style-access",
    "client.region"
  };
  static final String[] S3A_KEYS = {
    "endpoint", "access.key", "secret.key", "session.token", "path.style.access", "endpoint.region",
    "connection.ssl.enabled"
  };
  // FileIO -> its answer: a loaded table keeps its FileIO, so each is described once
  static final Map STORAGE = java.util.Collections.synchronizedMap(new java.util.WeakHashMap());

  /**
   * How a table's files are reached, as JSON: its FileIO's class, the FileIO's S3 properties, and the
   * S3A settings of its Hadoop configuration (secrets through Hadoop's credential providers too).
   */
  public static String storage(Table table) throws Exception {
    org.apache.iceberg.io.FileIO io = table.io();
    String known = (String) STORAGE.get(io);
    if (known != null) {
      return known;
    }
    StringWriter buffer = new StringWriter();
    JsonGenerator json = JSON.createGenerator(buffer);
    json.writeStartObject();
    json.writeStringField("io", io.getClass().getName());
    json.writeObjectFieldStart("properties");
    Map properties = null;
    try {
      properties = io.properties();
    } catch (UnsupportedOperationException e) {
      properties = null; // a FileIO that keeps its settings to itself
    }
    for (int i = 0; properties != null && i < S3_PROPERTIES.length; i++) {
      Object value = properties.get(S3_PROPERTIES[i]);
      if (value != null) {
        json.writeStringField(S3_PROPERTIES[i], (String) value);
      }
    }
    json.writeEndObject();
    json.writeObjectFieldStart("hadoop");
    if (io instanceof org.apache.hadoop.conf.Configurable) {
      org.apache.hadoop.conf.Configuration conf = ((org.apache.hadoop.conf.Configurable) io).getConf();
      Map s3a = conf == null ? new HashMap() : conf.getPropsWithPrefix("fs.s3a.");
      Iterator keys = new java.util.TreeSet(s3a.keySet()).iterator();
      while (keys.hasNext()) {
        String key = (String) keys.next();
        boolean wanted = false;
        for (int i = 0; i < S3A_KEYS.length; i++) {
          // a bucket's own setting, fs.s3a.bucket.<bucket>.<key>: bucket names may hold dots
          wanted |= key.equals(S3A_KEYS[i]) || key.startsWith("bucket.") && key.endsWith("." + S3A_KEYS[i]);
        }
        if (wanted) {
          char[] secret = conf.getPassword("fs.s3a." + key);
          json.writeStringField("fs.s3a." + key, secret == null ? (String) s3a.get(key) : new String(secret));
        }
      }
    }
    json.writeEndObject();
    json.writeEndObject();
    json.close();
    String text = buffer.toString();
    STORAGE.put(io, text);
    return text;
  }

  /** The files of {@code tasks}: paths without the table location they share, counts, sizes. */
  static void writeFiles(JsonGenerator json, Table table, List tasks) throws Exception {
    String prefix = table.location() + "/";
    json.writeStringField("prefix", prefix);
    json.writeArrayFieldStart("files");
    for (int i = 0; i < tasks.size(); i++) {
      String path = ((FileScanTask) tasks.get(i)).file().location();
      json.writeString(path.startsWith(prefix) ? path.substring(prefix.length()) : "\u0000" + path);
    }
    json.writeEndArray();
    json.writeArrayFieldStart("records");
    for (int i = 0; i < tasks.size(); i++) {
      json.writeNumber(((FileScanTask) tasks.get(i)).file().recordCount());
    }
    json.writeEndArray();
    json.writeArrayFieldStart("sizes");
    for (int i = 0; i < tasks.size(); i++) {
      json.writeNumber(((FileScanTask) tasks.get(i)).file().fileSizeInBytes());
    }
    json.writeEndArray();
  }

  /** A digest of what {@code writeFiles} writes for {@code tasks}: equal digests, equal files. */
  static String filesDigest(Table table, List tasks) throws Exception {
    StringBuilder text = new StringBuilder(table.location());
    for (int i = 0; i < tasks.size(); i++) {
      DataFile file = (DataFile) ((FileScanTask) tasks.get(i)).file();
      text.append('\u0000').append(file.location()).append('\u0001').append(file.recordCount())
          .append('\u0001').append(file.fileSizeInBytes());
    }
    return sha256(text.toString());
  }

  static final RecentDigests SENT_FILES = new RecentDigests(256);

  /** The digests of the file lists this JVM sent whole most recently (the Python side keeps more). */
  public static class RecentDigests extends java.util.LinkedHashMap {
    final int capacity;

    RecentDigests(int capacity) {
      super(16, 0.75f, true);
      this.capacity = capacity;
    }

    /** Whether {@code digest} was sent before; it counts as sent from now on. */
    synchronized boolean sent(String digest) {
      return put(digest, Boolean.TRUE) != null;
    }

    protected boolean removeEldestEntry(Map.Entry eldest) {
      return size() > capacity;
    }
  }

  static String sha256(String text) throws Exception {
    byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < digest.length; i++) {
      int b = digest[i] & 0xff;
      hex.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 0xf, 16));
    }
    return hex.toString();
  }

  // Janino resolves JsonNode.get to TreeNode.get: these say which one is meant
  static JsonNode at(JsonNode node, int index) {
    return (JsonNode) node.get(index);
  }

  static JsonNode at(JsonNode node, String name) {
    return (JsonNode) node.get(name);
  }

  static LogicalPlan replace(LogicalPlan node, IdentityHashMap replacements) {
    Object replacement = replacements.get(node);
    if (replacement != null) {
      return (LogicalPlan) replacement;
    }
    List children = javaList(node.children());
    boolean changed = false;
    List updated = new ArrayList();
    for (int i = 0; i < children.size(); i++) {
      LogicalPlan child = (LogicalPlan) children.get(i);
      LogicalPlan after = replace(child, replacements);
      changed = changed || after != child;
      updated.add(after);
    }
    if (!changed) {
      return node;
    }
    return (LogicalPlan) node.withNewChildren(scalaList(updated));
  }

  /**
   * {@code items} as a Scala immutable list: a {@code Seq} under Scala 2.12 (Spark 3.5) and an
   * immutable {@code Seq} under 2.13 (Spark 4), as Spark's signatures ask in each.
   */
  static scala.collection.immutable.List scalaList(List items) {
    return ((scala.collection.mutable.Buffer) scala.collection.JavaConverters.asScalaBufferConverter(items).asScala())
        .toList();
  }

  /**
   * A copy of {@code task} reading only bytes [start, end) of its file: its data file claims to end at
   * {@code end} with one split offset at {@code start}, so Iceberg's staged scan splits it into exactly
   * that range; deletes, residual, schema and spec are the task's own.
   */
  static FileScanTask byteRange(FileScanTask task, long start, long end, IdentityHashMap texts) {
    List offsets = new ArrayList();
    offsets.add(Long.valueOf(start));
    DataFile claimed =
        DataFiles.builder(task.spec()).copy((DataFile) task.file()).withFileSizeInBytes(end).withSplitOffsets(offsets).build();
    return new BaseFileScanTask(
        claimed, deletes(task), schemaJson(task, texts), specJson(task, texts),
        ResidualEvaluator.unpartitioned(task.residual()));
  }

  /**
   * Whether a byte range of {@code task}'s file can be read by claiming a shorter file: Iceberg's Parquet
   * reader takes a Hadoop file's length from its file system (HadoopInputFile), but any other FileIO's
   * (S3FileIO's) from the data file entry, and would look for the footer at the claimed end.
   */
  static boolean readsByteRanges(Table table, FileScanTask task) {
    return table.io().newInputFile(task.file().location()) instanceof org.apache.iceberg.hadoop.HadoopInputFile;
  }

  static FileScanTask withoutResidual(FileScanTask task, IdentityHashMap texts) {
    return new BaseFileScanTask(
        (DataFile) task.file(), deletes(task), schemaJson(task, texts), specJson(task, texts),
        ResidualEvaluator.unpartitioned(Expressions.alwaysTrue()));
  }

  /** The JSON of {@code task}'s schema, written once per staging call (a scan's tasks share one schema). */
  static String schemaJson(FileScanTask task, IdentityHashMap texts) {
    if (!texts.containsKey(task.schema())) {
      texts.put(task.schema(), SchemaParser.toJson(task.schema()));
    }
    return (String) texts.get(task.schema());
  }

  static String specJson(FileScanTask task, IdentityHashMap texts) {
    if (!texts.containsKey(task.spec())) {
      texts.put(task.spec(), PartitionSpecParser.toJson(task.spec()));
    }
    return (String) texts.get(task.spec());
  }

  static DeleteFile[] deletes(FileScanTask task) {
    List listed = task.deletes();
    DeleteFile[] out = new DeleteFile[listed.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (DeleteFile) listed.get(i);
    }
    return out;
  }

  /** The tasks {@code frame}'s Iceberg scans will read, one line each (see {@link SnapshotFiles#plannedTasks}). */
  public String plannedTasks(Dataset frame) throws Exception {
    return answer(SnapshotFiles.plannedTasks(frame));
  }

  /** Forget every snapshot's file list (the next query of each table reads its manifests again). */
  public void forgetListedFiles() {
    SnapshotFiles.clear();
  }

  /** How many scans took their tasks from a snapshot's file list in this JVM. */
  public long listedScans() {
    return SnapshotFiles.seededScans();
  }

  /** Release staged task sets ({@code setIds} joined by '\u0001'); unknown ids are ignored. */
  public void release(String setIds) {
    String[] ids = setIds.split("\u0001");
    for (int i = 0; i < ids.length; i++) {
      Table table;
      synchronized (STAGED) {
        table = (Table) STAGED.remove(ids[i]);
      }
      if (table != null) {
        ScanTaskSetManager.get().removeTasks(table, ids[i]);
      }
    }
  }

  static void writeLongs(JsonGenerator json, List values) throws Exception {
    for (int i = 0; i < values.size(); i++) {
      json.writeNumber(((Long) values.get(i)).longValue());
    }
  }

  // ---- Iceberg expressions as JSON -------------------------------------------------------------

  static void writeExpression(JsonGenerator json, Expression expression, Map referenced) throws Exception {
    String op = expression.op().name().toLowerCase();
    json.writeStartObject();
    json.writeStringField("op", op);
    if (expression instanceof org.apache.iceberg.expressions.And) {
      org.apache.iceberg.expressions.And and = (org.apache.iceberg.expressions.And) expression;
      json.writeFieldName("left");
      writeExpression(json, and.left(), referenced);
      json.writeFieldName("right");
      writeExpression(json, and.right(), referenced);
    } else if (expression instanceof org.apache.iceberg.expressions.Or) {
      org.apache.iceberg.expressions.Or or = (org.apache.iceberg.expressions.Or) expression;
      json.writeFieldName("left");
      writeExpression(json, or.left(), referenced);
      json.writeFieldName("right");
      writeExpression(json, or.right(), referenced);
    } else if (expression instanceof org.apache.iceberg.expressions.Not) {
      json.writeFieldName("child");
      writeExpression(json, ((org.apache.iceberg.expressions.Not) expression).child(), referenced);
    } else if (expression instanceof UnboundPredicate
        && ((UnboundPredicate) expression).term() instanceof NamedReference) {
      UnboundPredicate predicate = (UnboundPredicate) expression;
      String name = ((NamedReference) predicate.term()).name();
      referenced.put(name, name);
      json.writeStringField("term", name);
      List literals = predicate.literals(); // null for IS NULL and the like, one for comparisons
      if (literals != null) {
        json.writeArrayFieldStart("literals");
        for (int i = 0; i < literals.size(); i++) {
          writeLiteral(json, ((Literal) literals.get(i)).value());
        }
        json.writeEndArray();
      }
    } else if (!op.equals("true") && !op.equals("false")) {
      json.writeStringField("text", expression.toString());
    }
    json.writeEndObject();
  }

  static void writeLiteral(JsonGenerator json, Object value) throws Exception {
    json.writeStartArray();
    if (value instanceof Integer || value instanceof Long) {
      json.writeString("int");
      json.writeNumber(((Number) value).longValue());
    } else if (value instanceof Float || value instanceof Double) {
      json.writeString("float"); // as text: exact, NaN and infinities included
      json.writeString(Double.toString(((Number) value).doubleValue()));
    } else if (value instanceof java.math.BigDecimal) {
      json.writeString("decimal");
      json.writeString(((java.math.BigDecimal) value).toString());
    } else if (value instanceof Boolean) {
      json.writeString("bool");
      json.writeBoolean(((Boolean) value).booleanValue());
    } else if (value instanceof CharSequence) {
      json.writeString("string");
      json.writeString(value.toString());
    } else if (value instanceof ByteBuffer) {
      ByteBuffer buffer = (ByteBuffer) ((ByteBuffer) value).duplicate(); // Janino sees Buffer.duplicate
      StringBuilder hex = new StringBuilder();
      while (buffer.hasRemaining()) {
        int b = buffer.get() & 0xff;
        hex.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      json.writeString("binary");
      json.writeString(hex.toString());
    } else {
      json.writeString("other");
      json.writeString(String.valueOf(value));
    }
    json.writeEndArray();
  }
}
