package io.zskip.aggregate;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;

/**
 * The planner's answered partials as Catalyst rows: JSON values in Spark's internal forms (dates as
 * days, timestamps as microseconds since the epoch, decimals as text), one row per group.
 */
final class PartialRows {
  private PartialRows() {}

  static List<InternalRow> of(JsonNode rows, List<Attribute> columns) {
    List<InternalRow> out = new ArrayList<>();
    for (JsonNode row : rows) {
      if (row.size() != columns.size()) {
        throw new IllegalStateException("an answered row of " + row.size() + " values for " + columns.size() + " columns");
      }
      Object[] values = new Object[columns.size()];
      for (int i = 0; i < values.length; i++) {
        values[i] = value(row.get(i), columns.get(i).dataType());
      }
      out.add(new GenericInternalRow(values));
    }
    return out;
  }

  static Object value(JsonNode node, DataType type) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (type.equals(DataTypes.LongType) || type.equals(DataTypes.TimestampType) || type.equals(DataTypes.TimestampNTZType)) {
      return node.asLong();
    }
    if (type.equals(DataTypes.IntegerType) || type.equals(DataTypes.DateType)) {
      return node.asInt();
    }
    if (type.equals(DataTypes.ShortType)) {
      return (short) node.asInt();
    }
    if (type.equals(DataTypes.ByteType)) {
      return (byte) node.asInt();
    }
    if (type.equals(DataTypes.DoubleType)) { // NaN and the infinities come as text
      return node.isTextual() ? Double.parseDouble(node.asText()) : node.asDouble();
    }
    if (type.equals(DataTypes.BooleanType)) {
      return node.asBoolean();
    }
    if (type instanceof DecimalType decimal) {
      Decimal value = new Decimal();
      return value.set(new scala.math.BigDecimal(new BigDecimal(node.asText())), decimal.precision(), decimal.scale());
    }
    if (type.equals(DataTypes.StringType)) {
      return org.apache.spark.sql.catalyst.CatalystTypeConverters.convertToCatalyst(node.asText()); // a UTF8String
    }
    throw new IllegalStateException("an answered value of type " + type.catalogString());
  }
}
