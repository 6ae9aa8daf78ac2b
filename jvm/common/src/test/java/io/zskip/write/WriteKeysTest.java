package io.zskip.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class WriteKeysTest {
  private static final String RECIPE = "{\"payload\": \"AAECAw==\", \"columns\": ["
      + "{\"field-id\": 3, \"carrier\": \"CAST({} AS DOUBLE)\", \"type\": \"float\"}, "
      + "{\"field-id\": 1, \"carrier\": \"CAST(unix_date({}) AS BIGINT)\", \"type\": \"date\"}]}";

  @Test
  void theCarriersNameEachClusteredColumnAsTheSchemaNamesItsFieldNow() throws Exception {
    WriteKeys keys = WriteKeys.parse(RECIPE.getBytes(StandardCharsets.UTF_8));
    assertArrayEquals(new byte[] {0, 1, 2, 3}, keys.payload);
    Schema renamed = new Schema(
        Types.NestedField.optional(1, "day `of` sale", Types.DateType.get()),
        Types.NestedField.optional(2, "other", Types.LongType.get()),
        Types.NestedField.optional(3, "price", Types.FloatType.get()));
    assertEquals("named_struct('c0', CAST(`price` AS DOUBLE), 'c1', CAST(unix_date(`day ``of`` sale`) AS BIGINT))",
        keys.carriersSql(renamed));
  }

  @Test
  void aClusteredColumnWhoseTypeChangedSinceLeavesNoKey() throws Exception {
    WriteKeys keys = WriteKeys.parse(RECIPE.getBytes(StandardCharsets.UTF_8));
    Schema promoted = new Schema(
        Types.NestedField.optional(1, "day", Types.DateType.get()),
        Types.NestedField.optional(3, "price", Types.DoubleType.get()));
    assertNull(keys.carriersSql(promoted));
  }

  @Test
  void aClusteredColumnDroppedSinceLeavesNoKey() throws Exception {
    WriteKeys keys = WriteKeys.parse(RECIPE.getBytes(StandardCharsets.UTF_8));
    Schema dropped = new Schema(Types.NestedField.optional(1, "day", Types.DateType.get()));
    assertNull(keys.carriersSql(dropped));
  }
}
