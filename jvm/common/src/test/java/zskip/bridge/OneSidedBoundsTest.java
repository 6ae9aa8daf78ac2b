package zskip.bridge;

import static org.apache.iceberg.expressions.Expressions.equal;
import static org.apache.iceberg.expressions.Expressions.greaterThan;
import static org.apache.iceberg.expressions.Expressions.greaterThanOrEqual;
import static org.apache.iceberg.expressions.Expressions.in;
import static org.apache.iceberg.expressions.Expressions.lessThan;
import static org.apache.iceberg.expressions.Expressions.lessThanOrEqual;
import static org.apache.iceberg.expressions.Expressions.not;
import static org.apache.iceberg.expressions.Expressions.notNull;
import static org.apache.iceberg.expressions.Expressions.or;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class OneSidedBoundsTest {
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
    return OneSidedBounds.decideAlone(SCHEMA, List.of(filters), FIELDS);
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
    assertFalse(OneSidedBounds.decideAlone(SCHEMA, List.of(greaterThan("a", 5)), null)); // not described
    assertFalse(OneSidedBounds.decideAlone(
        SCHEMA, List.of(greaterThan("a", 5)), new PlanningFields.Described(Set.of(1), Set.of(), Set.of(), true)));
    assertFalse(alone(greaterThan("nope", 5))); // does not bind: the planner says what to do
  }

  @Test
  void alongTheHilbertCurveAnySlabOfOneColumnIsDecidedAlone() {
    List<Expression> between = List.of(greaterThan("a", 5), lessThan("a", 9));
    assertTrue(OneSidedBounds.decideAlone(SCHEMA, between, HILBERT));
    assertTrue(OneSidedBounds.decideAlone(SCHEMA, List.of(equal("a", 5)), HILBERT));
    assertFalse(OneSidedBounds.decideAlone(SCHEMA, List.of(in("a", 1, 9)), HILBERT)); // not a plain bound
    assertFalse(OneSidedBounds.decideAlone(SCHEMA, List.of(equal("a", 5), equal("b", 2L)), HILBERT));
    assertFalse(OneSidedBounds.decideAlone(SCHEMA, List.of(equal("a", 5), equal("id", 2L)), HILBERT));
  }
}
