package io.zskip.filter;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.bridge.Answers;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
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
}
