package io.zskip.filter;

import com.fasterxml.jackson.core.JsonGenerator;
import io.zskip.bridge.Answers;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.And;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.expressions.NamedReference;
import org.apache.iceberg.expressions.Not;
import org.apache.iceberg.expressions.Or;
import org.apache.iceberg.expressions.UnboundPredicate;
import org.apache.iceberg.types.Types;

/**
 * Iceberg's filter expressions as JSON, the form zskip's planner reads them in
 * ({@code zskip.iceberg.predicates}): an operation, its operands, the column term and literals, each
 * literal tagged with its kind ({@code int}, {@code float} as exact text, {@code decimal},
 * {@code bool}, {@code string}, {@code binary} as hex).
 */
public final class ExpressionJson {
  private ExpressionJson() {}

  /** Writes {@code expression}; each column term it names goes into {@code referenced}. */
  public static void write(JsonGenerator json, Expression expression, Set<String> referenced) throws IOException {
    String op = expression.op().name().toLowerCase(Locale.ROOT);
    json.writeStartObject();
    json.writeStringField("op", op);
    if (expression instanceof And and) {
      json.writeFieldName("left");
      write(json, and.left(), referenced);
      json.writeFieldName("right");
      write(json, and.right(), referenced);
    } else if (expression instanceof Or or) {
      json.writeFieldName("left");
      write(json, or.left(), referenced);
      json.writeFieldName("right");
      write(json, or.right(), referenced);
    } else if (expression instanceof Not not) {
      json.writeFieldName("child");
      write(json, not.child(), referenced);
    } else if (expression instanceof UnboundPredicate<?> predicate && predicate.term() instanceof NamedReference<?> ref) {
      String name = ref.name();
      referenced.add(name);
      json.writeStringField("term", name);
      List<? extends Literal<?>> literals = predicate.literals(); // null for IS NULL and the like
      if (literals != null) {
        json.writeArrayFieldStart("literals");
        for (Literal<?> literal : literals) {
          writeLiteral(json, literal.value());
        }
        json.writeEndArray();
      }
    } else if (!op.equals("true") && !op.equals("false")) {
      json.writeStringField("text", expression.toString());
    }
    json.writeEndObject();
  }

  static void writeLiteral(JsonGenerator json, Object value) throws IOException {
    json.writeStartArray();
    if (value instanceof Integer || value instanceof Long) {
      json.writeString("int");
      json.writeNumber(((Number) value).longValue());
    } else if (value instanceof Float || value instanceof Double) {
      json.writeString("float"); // as text: exact, NaN and infinities included
      json.writeString(Double.toString(((Number) value).doubleValue()));
    } else if (value instanceof BigDecimal decimal) {
      json.writeString("decimal");
      json.writeString(decimal.toString());
    } else if (value instanceof Boolean bool) {
      json.writeString("bool");
      json.writeBoolean(bool);
    } else if (value instanceof CharSequence text) {
      json.writeString("string");
      json.writeString(text.toString());
    } else if (value instanceof ByteBuffer bytes) {
      json.writeString("binary");
      json.writeString(Answers.hex(bytes));
    } else {
      json.writeString("other");
      json.writeString(String.valueOf(value));
    }
    json.writeEndArray();
  }

  /** The fields of {@code table} that the terms {@code referenced} name, as array field {@code name}. */
  public static void writeFields(JsonGenerator json, String name, Table table, Set<String> referenced) throws IOException {
    json.writeArrayFieldStart(name);
    for (String term : referenced) {
      Types.NestedField field = resolveField(table.schema(), term);
      if (field != null) {
        json.writeStartObject();
        json.writeStringField("term", term);
        json.writeStringField("name", table.schema().findColumnName(field.fieldId()));
        json.writeNumberField("id", field.fieldId());
        json.writeStringField("type", field.type().toString());
        json.writeEndObject();
      }
    }
    json.writeEndArray();
  }

  /**
   * The field a pushed filter's term names.  Spark hands Iceberg each column under the table's own
   * spelling, so the exact match comes first; the case-insensitive one only when that finds nothing,
   * and never an error: a table with columns {@code a} and {@code A} has no case-insensitive index.
   */
  public static Types.NestedField resolveField(Schema schema, String name) {
    Types.NestedField field = schema.findField(name);
    if (field != null) {
      return field;
    }
    try {
      return schema.caseInsensitiveFindField(name);
    } catch (RuntimeException collide) {
      return null;
    }
  }

  /** {@code values} as JSON numbers. */
  public static void writeLongs(JsonGenerator json, List<Long> values) throws IOException {
    for (long value : values) {
      json.writeNumber(value);
    }
  }
}
