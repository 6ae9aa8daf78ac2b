package io.zskip.filter;

import static org.apache.iceberg.expressions.Expressions.equal;
import static org.apache.iceberg.expressions.Expressions.greaterThan;
import static org.apache.iceberg.expressions.Expressions.greaterThanOrEqual;
import static org.apache.iceberg.expressions.Expressions.in;
import static org.apache.iceberg.expressions.Expressions.lessThan;
import static org.apache.iceberg.expressions.Expressions.lessThanOrEqual;
import static org.apache.iceberg.expressions.Expressions.not;
import static org.apache.iceberg.expressions.Expressions.notNull;
import static org.apache.iceberg.expressions.Expressions.or;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.zskip.rule.PlanningFields;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class MinMaxSufficesTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.optional(1, "a", Types.IntegerType.get()),
      Types.NestedField.optional(2, "b", Types.LongType.get()),
      Types.NestedField.optional(3, "x", Types.DoubleType.get()),
      Types.NestedField.optional(4, "s", Types.StringType.get()),
      Types.NestedField.optional(5, "id", Types.LongType.get()),
      Types.NestedField.optional(6, "d", Types.DateType.get()));
  // a, b, s and d clustered (d through a dimension's order), id indexed
  private static final PlanningFields.Described FIELDS =
      new PlanningFields.Described(Set.of(1, 2, 4, 6), Set.of(1, 2, 4), Set.of(5), false);
  private static final PlanningFields.Described HILBERT =
      new PlanningFields.Described(Set.of(1, 2, 4, 6), Set.of(1, 2, 4), Set.of(5), true);

  private static boolean alone(Expression... filters) {
    return alone(FIELDS, filters);
  }

  private static boolean alone(PlanningFields.Described fields, Expression... filters) {
    BoundFilters bound = BoundFilters.of(SCHEMA, List.of(filters));
    return bound != null && MinMaxSuffices.decideAlone(SCHEMA, bound, fields);
  }

  @Test
  void aClusteredColumnBoundOnOneSideIsDecidedAlone() {
    assertTrue(alone(greaterThan("a", 5)));
    assertTrue(alone(greaterThanOrEqual("a", 5), notNull("a"), greaterThan("a", 7)));
    assertTrue(alone(lessThanOrEqual("b", 9L), lessThan("x", 3.0))); // x is neither clustered nor indexed
  }

  @Test
  void aBoxTheCurveMaySeeIntoGoesToThePlanner() {
    assertFalse(alone(greaterThan("a", 5), lessThan("a", 9))); // both sides
    assertFalse(alone(equal("a", 5)));
    assertFalse(alone(in("a", 1, 2)));
    assertFalse(alone(greaterThan("a", 5), greaterThan("b", 1L))); // two clustered columns
    assertFalse(alone(or(greaterThan("a", 5), lessThan("x", 1.0))));
    assertFalse(alone(not(lessThan("a", 5))));
  }

  @Test
  void indexesStringsAndDimensionOrdersGoToThePlanner() {
    assertFalse(alone(greaterThan("a", 5), equal("id", 3L))); // an index may rule row groups out
    assertFalse(alone(greaterThan("s", "m"))); // min/max of strings may be truncated
    assertFalse(alone(greaterThan("d", 19000))); // its coordinate follows the dimension, not the date
    assertFalse(alone((PlanningFields.Described) null, greaterThan("a", 5))); // not described
    assertFalse(alone(new PlanningFields.Described(Set.of(1), Set.of(), Set.of(), true), greaterThan("a", 5)));
    assertNull(BoundFilters.of(SCHEMA, List.of(greaterThan("nope", 5)))); // does not bind: the planner says what to do
  }

  @Test
  void alongTheHilbertCurveAnySlabOfOneColumnIsDecidedAlone() {
    assertTrue(alone(HILBERT, greaterThan("a", 5), lessThan("a", 9)));
    assertTrue(alone(HILBERT, equal("a", 5)));
    assertFalse(alone(HILBERT, in("a", 1, 9))); // not a plain bound
    assertFalse(alone(HILBERT, equal("a", 5), equal("b", 2L)));
    assertFalse(alone(HILBERT, equal("a", 5), equal("id", 2L)));
  }

  @Test
  void boundFiltersNameTheFieldsOfEveryBranch() {
    BoundFilters bound = BoundFilters.of(SCHEMA, List.of(or(greaterThan("a", 5), not(lessThan("x", 1.0))), notNull("s")));
    assertEquals(Set.of(1, 3, 4), bound.fieldIds());
    assertTrue(bound.disjointFrom(Set.of(2, 5)));
    assertFalse(bound.disjointFrom(Set.of(3)));
    assertTrue(BoundFilters.of(SCHEMA, List.of()).disjointFrom(Set.of(1)));
  }
}
