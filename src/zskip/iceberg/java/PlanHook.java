// zskip's planning in every query of a session (zskip.enable): a Catalyst optimizer rule, one of the
// session's extra optimizations, that hands the Iceberg batch scans of tables zskip clustered or
// indexed to zskip's planner in the Python driver (a py4j callback, as PySpark's foreachBatch makes)
// and has each scan read only the tasks the planner kept (Bridge.Scans#hooked).
//
// The rule runs after Spark pushed filters to the scans and planned dynamic partition pruning, in
// every optimization of the session: queries, views, CTEs, subqueries (each optimized on its own),
// cached plans and the read side of INSERT ... SELECT and CREATE TABLE ... AS SELECT.  It leaves
// alone: the scans of a table the same plan writes (DELETE, UPDATE and MERGE read the rows they
// rewrite through such scans), scans that are not Iceberg's batch query scan (copy-on-write, staged
// and streaming scans), time travel and branch reads, and tables without zskip's table properties
// (decided here, without calling Python).  Any failure leaves the plan as Spark made it.
//
// Compiled by Janino under Bridge's class loader (see Bridge.java for what Janino allows).
package zskip.bridge;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.spark.source.SparkTable;
//#if spark3
import org.apache.spark.sql.SparkSession;
//#else
import org.apache.spark.sql.classic.SparkSession;
//#endif
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;

public class PlanHook extends org.apache.spark.sql.catalyst.rules.Rule {
  public static final String ENABLED = "spark.zskip.enabled";
  static final String BATCH_SCAN = "org.apache.iceberg.spark.source.SparkBatchQueryScan";
  static final AtomicLong PLANNED = new AtomicLong(); // plans handed to the planner
  static final AtomicLong FAILURES = new AtomicLong(); // of those, the ones left as Spark made them
  static volatile String lastFailure = "";
  static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("zskip.PlanHook");

  final SparkSession session;
  final java.util.function.Function planner; // Bridge.Scans -> the answer Bridge.Scans#hooked takes
  final String[] properties; // table properties planning reads: a table with none of them is not zskip's

  public PlanHook(SparkSession session, java.util.function.Function planner, String properties) {
    this.session = session;
    this.planner = planner;
    this.properties = properties.split("\u0001");
  }

  public TreeNode apply(TreeNode tree) {
    LogicalPlan plan = (LogicalPlan) tree;
    if (Bridge.PLANNING.get() != null // zskip is planning on this thread: its own queries pass untouched
        || !session.sessionState().conf().getConfString(ENABLED, "false").equalsIgnoreCase("true")) {
      return plan;
    }
    Bridge.PLANNING.set(Boolean.TRUE);
    try {
      List candidates = candidates(plan);
      if (candidates.isEmpty()) {
        return plan;
      }
      PLANNED.incrementAndGet();
      Bridge.Scans scans = new Bridge.Scans(session, plan, candidates, properties);
      return scans.hooked((String) planner.apply(scans));
    } catch (Throwable failure) {
      FAILURES.incrementAndGet();
      String text = String.valueOf(failure).split("\n")[0];
      lastFailure = text;
      LOG.warn("zskip could not plan a query, which runs with Spark's own plan: " + text);
      return plan;
    } finally {
      Bridge.PLANNING.remove();
    }
  }

  /** The scans zskip plans in {@code plan}: Iceberg batch scans of the current state of zskip's tables that the plan does not write. */
  List candidates(LogicalPlan plan) throws Exception {
    java.util.Set written = new java.util.HashSet();
    List found = new ArrayList();
    List pending = new ArrayList();
    pending.add(plan);
    boolean joins = false;
    while (!pending.isEmpty()) {
      LogicalPlan node = (LogicalPlan) pending.remove(pending.size() - 1);
      if (node instanceof org.apache.spark.sql.catalyst.plans.logical.Sample) {
        continue; // TABLESAMPLE draws from the scan's partitions as Spark splits them: fewer files, other rows
      }
      pending.addAll(Bridge.javaList(node.children()));
      joins |= node instanceof org.apache.spark.sql.catalyst.plans.logical.Join;
      if (node instanceof V2WriteCommand) {
        Object target = ((V2WriteCommand) node).table();
        written.add(target instanceof DataSourceV2Relation ? ((DataSourceV2Relation) target).table().name() : null);
      }
      if (!(node instanceof DataSourceV2ScanRelation)) {
        continue;
      }
      DataSourceV2ScanRelation relation = (DataSourceV2ScanRelation) node;
      Table table = relation.relation().table();
      if (!relation.scan().getClass().getName().equals(BATCH_SCAN) || !Bridge.dataTable(table)) {
        continue;
      }
      SparkTable spark = (SparkTable) table;
      if (!current(spark) || !zskips(spark.table())) {
        continue;
      }
      found.add(relation);
    }
    if (written.contains(null)) {
      return new ArrayList(); // a write whose target is not known: every scan as Spark made it
    }
    List out = new ArrayList();
    for (int i = 0; i < found.size(); i++) {
      DataSourceV2ScanRelation relation = (DataSourceV2ScanRelation) found.get(i);
      // a scan without a filter, in a plan without a join, reads every file whatever zskip knows
      boolean filtered = !Bridge.javaList(Bridge.call(relation.scan(), Bridge.FILTERS)).isEmpty();
      if (!written.contains(relation.relation().table().name()) && (filtered || joins)) {
        out.add(relation);
      }
    }
    return out;
  }

  /** Whether {@code table} reads the current state of its table: not a branch, nor an older snapshot (Iceberg's runtime for Spark 4 pins the current one too). */
  static boolean current(SparkTable table) {
    if (table.branch() != null) {
      return false;
    }
    Long pinned = table.snapshotId();
    org.apache.iceberg.Snapshot snapshot = table.table().currentSnapshot();
    return pinned == null || (snapshot != null && snapshot.snapshotId() == pinned.longValue());
  }

  boolean zskips(org.apache.iceberg.Table table) {
    java.util.Map tableProperties = table.properties();
    for (int i = 0; i < properties.length; i++) {
      if (tableProperties.containsKey(properties[i])) {
        return true;
      }
    }
    return false;
  }

  /** Put a rule planning through {@code planner} among {@code session}'s extra optimizations (once: a rule already there is replaced). */
  public static void install(SparkSession session, java.util.function.Function planner, String properties) {
    List rules = new ArrayList();
    List current = Bridge.javaList(session.experimental().extraOptimizations());
    for (int i = 0; i < current.size(); i++) {
      if (!(current.get(i) instanceof PlanHook)) {
        rules.add(current.get(i));
      }
    }
    rules.add(new PlanHook(session, planner, properties));
    session.experimental().extraOptimizations_$eq(scala.collection.JavaConverters.asScalaBuffer(rules).toSeq());
  }

  /** Take zskip's rule out of {@code session}'s extra optimizations. */
  public static void uninstall(SparkSession session) {
    List rules = new ArrayList();
    List current = Bridge.javaList(session.experimental().extraOptimizations());
    for (int i = 0; i < current.size(); i++) {
      if (!(current.get(i) instanceof PlanHook)) {
        rules.add(current.get(i));
      }
    }
    session.experimental().extraOptimizations_$eq(scala.collection.JavaConverters.asScalaBuffer(rules).toSeq());
  }

  /** Whether {@code session} has zskip's rule. */
  public static boolean installed(SparkSession session) {
    List current = Bridge.javaList(session.experimental().extraOptimizations());
    for (int i = 0; i < current.size(); i++) {
      if (current.get(i) instanceof PlanHook) {
        return true;
      }
    }
    return false;
  }

  /** "planned failures last-failure": what the rule did in this JVM so far. */
  public static String counts() {
    return PLANNED.get() + " " + FAILURES.get() + " " + lastFailure;
  }
}
