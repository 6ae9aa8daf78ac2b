package io.zskip.rule;

import com.fasterxml.jackson.core.JsonGenerator;
import io.zskip.bridge.Answers;
import io.zskip.spark.SparkLine;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ParsedStatement;

/** SQL text as the session's parser reads it: which statement it is, which relations it names, whether it time travels. */
public final class Statements {
  // name suffixes with which Iceberg's Spark catalog reads another state of a table (as zskip.iceberg.table)
  static final Pattern OTHER_STATE = Pattern.compile(
      "(branch|tag)_.+|snapshot_id_\\d+|at_timestamp_\\d+", Pattern.CASE_INSENSITIVE);

  private Statements() {}

  /** Statement kind, relations (with their place in the text) and time travel of {@code text}, as JSON. */
  public static String parse(SparkSession session, String text) throws Exception {
    LogicalPlan plan = SparkLine.parse(session, text);
    return Answers.json(json -> {
      json.writeStartObject();
      String statement = null;
      boolean timeTravel = false;
      json.writeArrayFieldStart("relations");
      List<LogicalPlan> pending = new ArrayList<>(List.of(plan));
      while (!pending.isEmpty()) {
        LogicalPlan node = pending.remove(pending.size() - 1);
        if (isStatement(node)) {
          statement = nodeName(node);
          break;
        }
        timeTravel |= nodeName(node).equals("RelationTimeTravel");
        if (node instanceof UnresolvedRelation relation) {
          writeRelation(json, relation);
        }
        pending.addAll(Plans.children(node));
      }
      json.writeEndArray();
      json.writeStringField("statement", statement);
      json.writeBooleanField("time_travel", timeTravel);
      json.writeEndObject();
    });
  }

  private static void writeRelation(JsonGenerator json, UnresolvedRelation relation) throws java.io.IOException {
    scala.Option<Object> start = relation.origin().startIndex();
    scala.Option<Object> stop = relation.origin().stopIndex();
    if (start.isDefined() && stop.isDefined()) {
      json.writeStartObject();
      json.writeStringField("identifier", relation.multipartIdentifier().mkString("."));
      json.writeNumberField("start", (Integer) start.get());
      json.writeNumberField("stop", (Integer) stop.get());
      json.writeEndObject();
    }
  }

  /**
   * {@code text} parsed and analysed when it is a single query reading current table states (Spark's
   * {@code sql} without parsing the text twice), or {@code null}: a statement, time travel, or a text
   * this call does not judge; {@link #parse} then says which.  Analysis errors are thrown as Spark's.
   */
  public static Dataset<Row> query(SparkSession session, String text) {
    LogicalPlan plan;
    try {
      plan = SparkLine.parse(session, text);
    } catch (Exception e) {
      return null;
    }
    List<LogicalPlan> pending = new ArrayList<>(List.of(plan));
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      if (isStatement(node) || nodeName(node).equals("RelationTimeTravel")) {
        return null;
      }
      if (node instanceof UnresolvedRelation relation
          && OTHER_STATE.matcher(relation.multipartIdentifier().last()).matches()) {
        return null; // the name ends in a branch, tag, snapshot or timestamp (``t.branch_dev``)
      }
      pending.addAll(Plans.children(node));
    }
    return SparkLine.ofRows(session, plan);
  }

  static String nodeName(LogicalPlan node) {
    String name = node.getClass().getSimpleName();
    return name.endsWith("$") ? name.substring(0, name.length() - 1) : name;
  }

  /**
   * Parsed nodes that are no command, yet run something while Spark analyses them: {@code EXECUTE
   * IMMEDIATE} (Spark 4.0 {@code ExecuteImmediateQuery}, 4.1 {@code UnresolvedExecuteImmediate}), which
   * Spark's analyser rule {@code ResolveExecuteImmediate} runs as a statement of its own, whatever it
   * is (a {@code DROP TABLE} too); {@code CALL} as Spark 4 parses it ({@code Call}), which its analyser
   * rule {@code InvokeProcedures} invokes.
   */
  static final java.util.Set<String> EXECUTED_WHEN_ANALYSED = java.util.Set.of(
      "ExecuteImmediateQuery", "UnresolvedExecuteImmediate", "Call");

  /**
   * Whether a parsed plan node is a statement (DDL, DML, CALL, SET, a SQL script, EXECUTE IMMEDIATE,
   * ...) rather than part of a query: anything that runs when Spark analyses or executes it besides
   * reading tables.
   */
  static boolean isStatement(LogicalPlan node) {
    String name = nodeName(node);
    return node instanceof Command || node instanceof ParsedStatement || name.equals("InsertIntoDir")
        || name.equals("InsertIntoStatement") || name.equals("CallStatement")
        || EXECUTED_WHEN_ANALYSED.contains(name) || scripted(node);
  }

  /** A statement of a SQL script (Spark 4's {@code CompoundPlanStatement}: BEGIN ... END, IF, WHILE, FOR, ...). */
  private static boolean scripted(LogicalPlan node) {
    for (Class<?> type = node.getClass(); type != null; type = type.getSuperclass()) {
      for (Class<?> implemented : type.getInterfaces()) {
        if (implemented.getSimpleName().equals("CompoundPlanStatement")) {
          return true;
        }
      }
    }
    return false;
  }
}
