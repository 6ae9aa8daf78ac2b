package zskip.bridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class ExpressionsTest {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.optional(1, "zone", Types.StringType.get()),
      Types.NestedField.optional(2, "id", Types.LongType.get()));

  static JsonNode json(Expression expression, Set<String> referenced) throws Exception {
    StringWriter buffer = new StringWriter();
    try (JsonGenerator json = Answers.JSON.createGenerator(buffer)) {
      ExpressionJson.write(json, expression, referenced);
    }
    return Answers.MAPPER.readTree(buffer.toString());
  }

  @Test
  void filtersCrossAsJsonWithTheirColumnsAndTaggedLiterals() throws Exception {
    Set<String> referenced = new LinkedHashSet<>();
    Expression filter = Expressions.and(
        Expressions.in("zone", "EU", "US"),
        Expressions.or(Expressions.greaterThan("id", 5L), Expressions.not(Expressions.isNull("zone"))));
    JsonNode node = json(filter, referenced);
    assertEquals("and", node.get("op").asText());
    assertEquals("in", node.get("left").get("op").asText());
    assertEquals("zone", node.get("left").get("term").asText());
    assertEquals("[[\"string\",\"EU\"],[\"string\",\"US\"]]", node.get("left").get("literals").toString());
    assertEquals("[[\"int\",5]]", node.get("right").get("left").get("literals").toString());
    assertEquals("is_null", node.get("right").get("right").get("child").get("op").asText());
    assertEquals(List.of("zone", "id"), List.copyOf(referenced));
  }

  @Test
  void literalsKeepTheirExactValue() throws Exception {
    assertEquals("[\"float\",\"NaN\"]", literal(Double.NaN));
    assertEquals("[\"float\",\"0.1\"]", literal(0.1d));
    assertEquals("[\"decimal\",\"12.340\"]", literal(new BigDecimal("12.340")));
    assertEquals("[\"binary\",\"00ff10\"]", literal(ByteBuffer.wrap(new byte[] {0, (byte) 0xff, 0x10})));
    assertEquals("[\"bool\",true]", literal(true));
  }

  static String literal(Object value) throws Exception {
    StringWriter buffer = new StringWriter();
    try (JsonGenerator json = Answers.JSON.createGenerator(buffer)) {
      ExpressionJson.writeLiteral(json, value);
    }
    return buffer.toString();
  }

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
