package io.zskip.rule;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/** Walking and rebuilding Catalyst plans from Java, the same under Scala 2.12 (Spark 3.5) and 2.13 (Spark 4). */
public final class Plans {
  private Plans() {}

  /** A Scala or Java collection's items as a Java list. */
  public static <T> List<T> javaList(scala.collection.Iterable<T> items) {
    List<T> out = new ArrayList<>();
    scala.collection.Iterator<T> it = items.iterator();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  /**
   * {@code items} as a Scala immutable list: a {@code Seq} under Scala 2.12 and an immutable
   * {@code Seq} under 2.13, as Spark's signatures ask in each.
   */
  @SuppressWarnings("deprecation")
  public static <T> scala.collection.immutable.List<T> scalaList(List<T> items) {
    return scala.collection.JavaConverters.asScalaBufferConverter(items).asScala().toList();
  }

  public static List<LogicalPlan> children(LogicalPlan node) {
    return javaList(node.children());
  }

  /** The expression ids of {@code attributes}, in order. */
  public static List<Long> exprIds(scala.collection.Iterable<? extends Attribute> attributes) {
    List<Long> ids = new ArrayList<>();
    scala.collection.Iterator<? extends Attribute> it = attributes.iterator();
    while (it.hasNext()) {
      ids.add(it.next().exprId().id());
    }
    return ids;
  }

  /** Whether {@code node} outputs the attribute of expression id {@code id}. */
  public static boolean carries(LogicalPlan node, long id) {
    scala.collection.Iterator<Attribute> it = node.output().iterator();
    while (it.hasNext()) {
      if (it.next().exprId().id() == id) {
        return true;
      }
    }
    return false;
  }

  public static boolean deterministic(LogicalPlan node) {
    return javaList(node.expressions()).stream().allMatch(Expression::deterministic);
  }

  public static void splitAnd(Expression expression, List<Expression> out) {
    if (expression instanceof And and) {
      splitAnd(and.left(), out);
      splitAnd(and.right(), out);
    } else {
      out.add(expression);
    }
  }

  /** {@code node} with each node {@code replacements} names (by identity) replaced, rebuilt only where something changed. */
  public static LogicalPlan replace(LogicalPlan node, Map<LogicalPlan, LogicalPlan> replacements) {
    LogicalPlan replacement = replacements.get(node);
    if (replacement != null) {
      return replacement;
    }
    List<LogicalPlan> children = children(node);
    boolean changed = false;
    List<LogicalPlan> updated = new ArrayList<>();
    for (LogicalPlan child : children) {
      LogicalPlan after = replace(child, replacements);
      changed |= after != child;
      updated.add(after);
    }
    return changed ? node.withNewChildren(scalaList(updated)) : node;
  }

  public static Map<LogicalPlan, LogicalPlan> identityMap() {
    return new IdentityHashMap<>();
  }
}
