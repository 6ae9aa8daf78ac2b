package io.zskip.rule;

import io.zskip.settings.ZskipSettings;
import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.bridge.Answers;
import io.zskip.bridge.Bridge;
import io.zskip.hosted.HostedPlanner;
import io.zskip.iceberg.Members;
import io.zskip.scan.Scans;
import io.zskip.spark.SparkLine;
import io.zskip.write.ClusteredWrites;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Sample;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * zskip's planning in every query of a session (zskip.enable): a Catalyst optimizer rule, one of the
 * session's extra optimizations, that hands the Iceberg batch scans of tables zskip clustered or indexed
 * to zskip's planner in the Python driver (a py4j callback, as PySpark's foreachBatch makes) and has each
 * scan read only the tasks the planner kept ({@link Scans#hooked}).
 *
 * <p>The rule runs after Spark pushed filters to the scans and planned dynamic partition pruning, in every
 * optimization of the session: queries, views, CTEs, subqueries (each optimized on its own), cached plans
 * and the read side of INSERT ... SELECT and CREATE TABLE ... AS SELECT.  It leaves alone: the scans of a
 * table the same plan writes (DELETE, UPDATE and MERGE read the rows they rewrite through such scans),
 * scans that are not Iceberg's batch query scan (copy-on-write, staged and streaming scans), time travel
 * and branch reads, and tables without zskip's table properties (decided here, without calling Python).
 * Any failure leaves the plan as Spark made it.
 *
 * <p>A write into a table zskip clustered has its rows sorted by the table's curve key ({@link ClusteredWrites}).
 *
 * <p>The planner is called only for what {@link RememberedPlans} cannot answer: a scan planned before in
 * the same table state (same filters, columns, joins and settings) takes the remembered answer, and a
 * scan joined to no filtered dimension whose filters name no column zskip clustered or indexed reads
 * what Iceberg planned.  The workload log still gets a record of each such scan: the recorder is called
 * on a thread of its own, after the query has its plan, so it never delays one.
 */
public final class PlanHook extends Rule<LogicalPlan> {
  private static final AtomicLong PLANNED = new AtomicLong(); // plans handed to the planner
  private static final AtomicLong FAILURES = new AtomicLong(); // of those, the ones left as Spark made them
  private static final AtomicLong REMEMBERED = new AtomicLong(); // plans answered without the planner
  private static final AtomicLong UNAVAILABLE = new AtomicLong(); // plans left as Spark made them: no planner ready
  private static volatile String lastFailure = "";
  private static final Logger LOG = LoggerFactory.getLogger("zskip.PlanHook");

  private final SparkSession session;
  private final Planner planner; // answers for scans, records of the scans the rule decided alone
  private final boolean onUnlessSet; // spark.zskip.enabled's default: true where zskip's extension installed the rule

  PlanHook(SparkSession session, Planner planner, boolean onUnlessSet) {
    this.session = session;
    this.planner = planner;
    this.onUnlessSet = onUnlessSet;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (Bridge.PLANNING.get() != null // zskip is planning on this thread: its own queries pass untouched
        || !ZskipSettings.flag(SparkLine.conf(session).getConfString(ZskipSettings.ENABLED.key(), null), onUnlessSet)) {
      return plan;
    }
    Bridge.PLANNING.set(Boolean.TRUE);
    try {
      plan = ClusteredWrites.order(session, plan); // a write into a table zskip clustered: rows in curve-key order
      String[] properties = planner.properties();
      if (properties.length == 0) {
        // no planner has said which tables are zskip's yet: a hosted one still starting, which a query
        // waits for as spark.zskip.planner.startWait says (ready() returns at once otherwise)
        if (!planner.ready()) {
          return plan;
        }
        properties = planner.properties();
        if (properties.length == 0) {
          return plan;
        }
      }
      List<DataSourceV2ScanRelation> candidates = candidates(plan, properties);
      if (candidates.isEmpty()) {
        return plan;
      }
      Scans scans = new Scans(session, plan, candidates, properties);
      RememberedPlans.Keys keys = RememberedPlans.keys(scans);
      RememberedPlans.Recall recall = RememberedPlans.recall(scans, keys);
      if (recall != null) {
        REMEMBERED.incrementAndGet();
        LogicalPlan hooked = scans.hooked(recall.answer());
        record(scans, keys, recall);
        return hooked;
      }
      if (!planner.ready()) {
        UNAVAILABLE.incrementAndGet(); // the hosted planner is starting, or restarting: its supervisor warned
        return plan;
      }
      PLANNED.incrementAndGet();
      JsonNode answer = Answers.MAPPER.readTree(planner.plan(scans));
      LogicalPlan hooked = scans.hooked(answer);
      RememberedPlans.learn(scans, keys, answer); // only once the answer proved good
      return hooked;
    } catch (Planner.Unavailable unavailable) { // the planner went away while asked: its supervisor warned
      FAILURES.incrementAndGet();
      lastFailure = unavailable.getMessage();
      return plan;
    } catch (Throwable failure) {
      FAILURES.incrementAndGet();
      String text = String.valueOf(failure).split("\n")[0];
      lastFailure = text;
      LOG.warn("zskip could not plan a query, which runs with Spark's own plan: {}", text);
      return plan;
    } finally {
      Bridge.PLANNING.remove();
    }
  }

  /** Has the recorder record the scans {@code recall} answered, on its own thread, unless the session captures no workload. */
  private void record(Scans scans, RememberedPlans.Keys keys, RememberedPlans.Recall recall) {
    if (!ZskipSettings.flag(SparkLine.conf(session).getConfString(ZskipSettings.CAPTURE.key(), null), true)
        || (recall.toPlan().isEmpty() && recall.toRepeat().isEmpty())) {
      return;
    }
    com.fasterxml.jackson.databind.node.ObjectNode work = Answers.MAPPER.createObjectNode();
    recall.toPlan().forEach(work.putArray("plan")::add);
    recall.toRepeat().forEach(work.putArray("repeat")::add);
    scans.recordWork(work.toString());
    WorkloadRecords.add(planner, scans, keys);
  }

  /** Waits until the records the rule left to the recorder so far are made (at most {@code millis} ms); whether they are. */
  public static boolean awaitRecords(long millis) throws InterruptedException {
    return WorkloadRecords.await(millis);
  }

  /** Forget every remembered answer (the next plans are asked of the planner). */
  public static void forget() {
    RememberedPlans.clear();
  }

  /** The scans zskip plans in {@code plan}: Iceberg batch scans of the current state of zskip's tables that the plan does not write. */
  static List<DataSourceV2ScanRelation> candidates(LogicalPlan plan, String[] properties) throws ReflectiveOperationException {
    Set<String> written = new HashSet<>();
    boolean unknownTarget = false;
    List<DataSourceV2ScanRelation> found = new ArrayList<>();
    List<LogicalPlan> pending = new ArrayList<>(List.of(plan));
    boolean joins = false;
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      if (node instanceof Sample) {
        continue; // TABLESAMPLE draws from the scan's partitions as Spark splits them: fewer files, other rows
      }
      pending.addAll(Plans.children(node));
      joins |= node instanceof Join;
      if (node instanceof V2WriteCommand write) {
        if (write.table() instanceof DataSourceV2Relation target) {
          written.add(target.table().name());
        } else {
          unknownTarget = true;
        }
      }
      if (node instanceof DataSourceV2ScanRelation relation && Members.isBatchQueryScan(relation.scan())) {
        Table table = relation.relation().table();
        if (Bridge.dataTable(table) && current((SparkTable) table) && zskips(((SparkTable) table).table(), properties)) {
          found.add(relation);
        }
      }
    }
    if (unknownTarget) {
      return List.of(); // a write whose target is not known: every scan as Spark made it
    }
    List<DataSourceV2ScanRelation> out = new ArrayList<>();
    for (DataSourceV2ScanRelation relation : found) {
      // a scan without a filter, in a plan without a join, reads every file whatever zskip knows
      boolean filtered = !Members.filters(relation.scan()).isEmpty();
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
    return pinned == null || (snapshot != null && snapshot.snapshotId() == pinned);
  }

  private static boolean zskips(org.apache.iceberg.Table table, String[] properties) {
    for (String property : properties) {
      if (table.properties().containsKey(property)) {
        return true;
      }
    }
    return false;
  }

  private static List<Rule<LogicalPlan>> othersOf(SparkSession session) {
    List<Rule<LogicalPlan>> rules = new ArrayList<>();
    for (Rule<LogicalPlan> rule : Plans.javaList(SparkLine.experimental(session).extraOptimizations())) {
      if (!(rule instanceof PlanHook)) {
        rules.add(rule);
      }
    }
    return rules;
  }

  /** Put a rule planning through {@code planner} among {@code session}'s extra optimizations (once: a rule already there is replaced). */
  public static void install(
      SparkSession session, Function<Scans, String> planner, Function<List<Scans>, String> recorder, String properties) {
    installRule(session, new PlanHook(session, Planner.ofDriver(planner, recorder, properties), false));
  }

  /** Put a rule planning through the planner zskip's extension hosts among {@code session}'s extra optimizations, unless it has zskip's rule. */
  static synchronized boolean installHosted(SparkSession session) {
    if (installed(session)) {
      return false; // a Python driver enabled zskip in this session: its planner plans
    }
    installRule(session, new PlanHook(session, HostedPlanner.INSTANCE, true));
    return true;
  }

  private static void installRule(SparkSession session, PlanHook rule) {
    List<Rule<LogicalPlan>> rules = othersOf(session);
    rules.add(rule);
    SparkLine.experimental(session).extraOptimizations_$eq(Plans.scalaList(rules));
  }

  /** Take zskip's rule out of {@code session}'s extra optimizations. */
  public static void uninstall(SparkSession session) {
    SparkLine.experimental(session).extraOptimizations_$eq(Plans.scalaList(othersOf(session)));
  }

  /** Whether {@code session} has zskip's rule. */
  public static boolean installed(SparkSession session) {
    return Plans.javaList(SparkLine.experimental(session).extraOptimizations()).stream()
        .anyMatch(rule -> rule instanceof PlanHook);
  }

  /**
   * What the rule did in this JVM so far, as JSON: plans asked of the planner ({@code planned}), plans it
   * failed ({@code failures}, the last one's message {@code last_failure}), answered from memory
   * ({@code remembered}), workload records dropped ({@code dropped}), plans kept because the hosted planner
   * was not ready ({@code unavailable}).
   */
  public static String counts() throws Exception {
    return Answers.json(json -> {
      json.writeStartObject();
      json.writeNumberField("planned", PLANNED.get());
      json.writeNumberField("failures", FAILURES.get());
      json.writeNumberField("remembered", REMEMBERED.get());
      json.writeNumberField("dropped", WorkloadRecords.DROPPED.get());
      json.writeNumberField("unavailable", UNAVAILABLE.get());
      json.writeStringField("last_failure", lastFailure);
      json.writeEndObject();
    });
  }
}
