package io.zskip.join;

import io.zskip.bridge.Bridge;
import io.zskip.iceberg.Members;
import io.zskip.rule.Plans;
import io.zskip.scan.ScanEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.plans.ExistenceJoin;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.types.DataType;

/**
 * The joins of an optimized plan by which a fact scan may skip files: inner (and semi / outer where the
 * fact scan is on the kept side) equi-joins of an Iceberg scan's column to a key of a filtered Iceberg
 * table, so the fact scan may skip files holding none of the keys the dimension side yields.
 */
public final class JoinFinder {
  private final List<ScanEntry> scans;
  private final List<JoinSide> found = new ArrayList<>();

  private JoinFinder(List<ScanEntry> scans) {
    this.scans = scans;
  }

  public static List<JoinSide> find(LogicalPlan root, List<ScanEntry> scans) {
    JoinFinder finder = new JoinFinder(scans);
    List<LogicalPlan> pending = new ArrayList<>(List.of(root));
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      pending.addAll(Plans.children(node));
      if (node instanceof Join join && join.condition().isDefined()) {
        finder.add(join);
      }
    }
    return finder.found;
  }

  private void add(Join join) {
    String type = joinKind(join);
    List<org.apache.spark.sql.catalyst.expressions.Expression> conjuncts = new ArrayList<>();
    Plans.splitAnd(join.condition().get(), conjuncts);
    for (var conjunct : conjuncts) {
      if (!(conjunct instanceof EqualTo equal)) {
        continue;
      }
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

  private int scanOf(long id) {
    for (int i = 0; i < scans.size(); i++) {
      if (scans.get(i).produces(id)) {
        return i;
      }
    }
    return -1;
  }

  private void addJoin(LogicalPlan factSide, Attribute factKey, LogicalPlan dimensionSide, Attribute dimensionKey) {
    int scan = scanOf(factKey.exprId().id());
    if (scan < 0 || !rowWise(factSide, factKey.exprId().id())) {
      return;
    }
    List<Expression> pushed = new ArrayList<>();
    List<org.apache.spark.sql.catalyst.expressions.Expression> conditions = new ArrayList<>();
    Scan dimensionScan = dimensionScan(dimensionSide, dimensionKey.exprId().id(), pushed, conditions);
    if (dimensionScan == null || (pushed.isEmpty() && conditions.isEmpty())) {
      return; // not a plain filtered Iceberg table: every key would do, or its keys are not ours to know
    }
    String pushedText = String.join(" AND ", pushed.stream().map(Object::toString).toList());
    String conditionText = String.join(" AND ", conditions.stream().map(c -> c.sql()).toList());
    String filter = conditionText.isEmpty() ? pushedText : conditionText; // Spark's SQL reads best
    // every condition of the side reached Iceberg when each one has a pushed counterpart (Spark pushes a
    // condition whole or not at all): then Iceberg's own reader yields exactly the side's keys
    boolean allPushed = pushed.size() == conditions.size();
    // the dimension's columns the side's conditions name (what the advisor clusters a fact table by)
    Set<String> named = new TreeSet<>();
    for (var condition : conditions) {
      Plans.javaList(condition.references()).forEach(reference -> named.add(reference.name()));
    }
    found.add(new JoinSide(scan, factKey.name(), dimensionSide, dimensionKey, dimensionScan, filter, allPushed,
        conditionText + "\u0001" + pushedText, new ArrayList<>(named), pushed));
  }

  /**
   * The join's type as SQL spells it ("INNER", "LEFT SEMI", ...); "EXISTENCE" for the join Spark makes of
   * a subquery inside OR or NOT, which has no SQL of its own (asking throws) and keeps every left row.
   */
  static String joinKind(Join join) {
    if (join.joinType() instanceof ExistenceJoin) {
      return "EXISTENCE";
    }
    return join.joinType().sql();
  }

  /** Whether every row {@code node} yields comes from one row of the scan producing {@code id}, key unchanged. */
  private static boolean rowWise(LogicalPlan node, long id) {
    if (node instanceof DataSourceV2ScanRelation) {
      return true;
    }
    if (node instanceof Project || node instanceof Filter) {
      LogicalPlan child = node.children().head();
      return Plans.deterministic(node) && Plans.carries(child, id) && rowWise(child, id);
    }
    if (node instanceof Join join) {
      String type = joinKind(join);
      boolean left = Plans.carries(join.left(), id);
      if (type.equals("INNER") || type.equals("CROSS")
          || (left && (type.equals("LEFT SEMI") || type.equals("LEFT ANTI") || type.equals("LEFT OUTER")))
          || (!left && type.equals("RIGHT OUTER"))) {
        return rowWise(left ? join.left() : join.right(), id);
      }
    }
    return false;
  }

  /**
   * The Iceberg scan under Projects and deterministic Filters yielding {@code id}; the filters pushed to it
   * into {@code pushed}, the Filters' conditions into {@code conditions}.
   */
  private static Scan dimensionScan(LogicalPlan node, long id, List<Expression> pushed,
      List<org.apache.spark.sql.catalyst.expressions.Expression> conditions) {
    if (node instanceof DataSourceV2ScanRelation relation) {
      if (!Bridge.dataTable(relation.relation().table()) || !Plans.carries(node, id)
          || !Members.isBatchQueryScan(relation.scan())) {
        return null;
      }
      try {
        for (Expression expression : Members.filters(relation.scan())) {
          if (expression.op() != Expression.Operation.NOT_NULL) { // Spark infers these from the join itself
            pushed.add(expression);
          }
        }
      } catch (ReflectiveOperationException e) {
        return null;
      }
      return relation.scan();
    }
    boolean filtered = node instanceof Filter;
    if (!(node instanceof Project || filtered) || !Plans.deterministic(node) || node.toString().contains("PythonUDF")) {
      return null;
    }
    LogicalPlan child = node.children().head();
    if (!Plans.carries(child, id)) {
      return null;
    }
    Scan found = dimensionScan(child, id, pushed, conditions);
    if (found != null && node instanceof Filter filter) {
      List<org.apache.spark.sql.catalyst.expressions.Expression> conjuncts = new ArrayList<>();
      Plans.splitAnd(filter.condition(), conjuncts);
      for (var conjunct : conjuncts) {
        if (!(conjunct instanceof IsNotNull)) {
          conditions.add(conjunct);
        }
      }
    }
    return found;
  }

  /**
   * The column a join key compares: a whole-number column (possibly widened by a cast), or a string,
   * date, timestamp or decimal column compared as it is.
   */
  private static Attribute keyAttribute(org.apache.spark.sql.catalyst.expressions.Expression expression) {
    var inner = expression;
    if (inner instanceof Cast cast && integral(inner.dataType())) {
      inner = cast.child();
      if (!integral(inner.dataType())) {
        return null;
      }
    }
    return inner instanceof Attribute attribute && joinable(inner.dataType()) ? attribute : null;
  }

  /** Whether two join keys of these types compare their values as they are (whole numbers of any width). */
  private static boolean sameKind(DataType a, DataType b) {
    return (integral(a) && integral(b)) || a.sameType(b);
  }

  private static boolean joinable(DataType type) {
    String name = type.typeName();
    return integral(type) || name.equals("string") || name.equals("date") || name.equals("timestamp")
        || name.startsWith("decimal");
  }

  static boolean integral(DataType type) {
    String name = type.typeName();
    return name.equals("long") || name.equals("integer") || name.equals("short") || name.equals("byte");
  }
}
