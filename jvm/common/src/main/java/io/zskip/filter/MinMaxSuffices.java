package io.zskip.filter;

import io.zskip.rule.PlanningFields;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.And;
import org.apache.iceberg.expressions.BoundPredicate;
import org.apache.iceberg.expressions.BoundReference;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Not;
import org.apache.iceberg.expressions.Or;
import org.apache.iceberg.types.Types;

/**
 * Whether a scan's filters leave zskip's planner nothing to rule out beyond Iceberg's own min/max, though
 * they name a clustered column: they bound one clustered column whose curve coordinate follows its
 * order, of a type whose min/max statistics are exact, on one side only ({@code day >= '2026-01-01'}) or,
 * along the Hilbert curve, on any side, and name no indexed column.
 *
 * <p>A file or row group min/max keep then has a key range meeting the slab: on one side, it holds a
 * row on the bounded side (the one with the column's largest, or smallest, value); along the Hilbert
 * curve, whose consecutive keys are neighbouring cells, a range from one side of a slab to the other
 * passes through it. So Iceberg's file statistics and its reader's row-group statistics rule out what
 * the planner would, and the planner answers "reads what Iceberg planned" (its own rule,
 * {@code zskip.planning.stages.curve_range}). The rule then decides the scan without asking it. A bound
 * on both sides of a Z curve's column, on two clustered columns, or under OR or NOT is a box whose gaps
 * the curve sees and min/max do not: the planner is asked.
 */
public final class MinMaxSuffices {
  private static final int LOWER = 1;
  private static final int UPPER = 2;
  private static final int NEITHER = 4; // a condition on the column that is not a plain bound

  private MinMaxSuffices() {}

  /** Whether {@code filters} (a conjunction, bound to {@code schema}) are such a slab of the table {@code fields} describe. */
  public static boolean decideAlone(Schema schema, BoundFilters filters, PlanningFields.Described fields) {
    if (fields == null || fields.valueOrdered().isEmpty() || filters.bound().isEmpty()) {
      return false;
    }
    Integer bounded = null;
    for (Integer id : filters.fieldIds()) {
      if (fields.indexed().contains(id)) {
        return false;
      }
      if (fields.clustered().contains(id)) {
        if (bounded != null) {
          return false; // two clustered columns: a box
        }
        bounded = id;
      }
    }
    if (bounded == null || !fields.valueOrdered().contains(bounded) || !exactStatistics(schema.findField(bounded))) {
      return false;
    }
    int sides = 0;
    for (Expression filter : filters.bound()) {
      sides |= sides(filter, bounded);
    }
    return sides == LOWER || sides == UPPER || sides == 0 || (fields.hilbert() && sides == (LOWER | UPPER));
  }

  /** Which sides of field {@code id} {@code expression} bounds ({@link #NEITHER}: not only as plain bounds). */
  private static int sides(Expression expression, int id) {
    if (expression instanceof And and) {
      return sides(and.left(), id) | sides(and.right(), id);
    }
    if (expression instanceof Or || expression instanceof Not) {
      return BoundFilters.fieldIds(expression).contains(id) ? NEITHER : 0;
    }
    if (expression instanceof BoundPredicate<?> predicate) {
      if (predicate.ref().fieldId() != id) {
        return 0;
      }
      if (!(predicate.term() instanceof BoundReference)) {
        return NEITHER; // a transform of the column
      }
      return switch (predicate.op()) {
        case GT, GT_EQ -> LOWER;
        case LT, LT_EQ -> UPPER;
        case EQ -> LOWER | UPPER;
        case NOT_NULL, NOT_NAN -> 0;
        default -> NEITHER;
      };
    }
    return switch (expression.op()) {
      case TRUE, FALSE -> 0;
      default -> NEITHER;
    };
  }

  /** Whether min/max statistics of {@code field} are its exact extremes (those of strings may be truncated). */
  private static boolean exactStatistics(Types.NestedField field) {
    if (field == null || !field.type().isPrimitiveType()) {
      return false;
    }
    return switch (field.type().typeId().name()) {
      case "INTEGER", "LONG", "FLOAT", "DOUBLE", "DECIMAL", "DATE", "TIMESTAMP", "TIMESTAMP_NANO" -> true;
      default -> false;
    };
  }
}
