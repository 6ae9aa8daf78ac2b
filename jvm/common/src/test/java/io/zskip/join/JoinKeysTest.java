package io.zskip.join;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class JoinKeysTest {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.optional(1, "zone", Types.StringType.get()),
      Types.NestedField.optional(2, "id", Types.LongType.get()));

  static boolean matches(Expression filter, String zone, Long id) {
    Record row = GenericRecord.create(SCHEMA);
    row.setField("zone", zone);
    row.setField("id", id);
    return new Evaluator(SCHEMA.asStruct(), JoinKeys.nullsNeverMatch(Expressions.rewriteNot(filter))).eval(row);
  }

  @Test
  void aNullNeverMatchesAComparisonAsInSqlsWhere() {
    Expression in = Expressions.in("zone", "EU", "US");
    assertTrue(matches(in, "EU", 1L));
    assertFalse(matches(in, null, 1L)); // Iceberg's IN of a NULL string would throw
    Expression notIn = Expressions.not(Expressions.in("zone", "EU"));
    assertTrue(matches(notIn, "US", 1L));
    assertFalse(matches(notIn, null, 1L)); // NOT (NULL IN ...) is NULL: not kept
    Expression either = Expressions.or(Expressions.equal("zone", "EU"), Expressions.greaterThan("id", 3L));
    assertTrue(matches(either, null, 4L));
    assertFalse(matches(either, null, null));
    assertTrue(matches(Expressions.isNull("zone"), null, 1L)); // IS NULL is true on NULLs, as in SQL
  }
}
