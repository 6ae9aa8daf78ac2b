package io.zskip.write;

import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.bridge.Answers;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinReader;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.util.Pair;

/**
 * The curve key a write into a table zskip clustered is sorted by, as its clustering store records it
 * ({@code zskip.layout.write_keys}): the {@link zskip.keys.CurveKeys} payload of the table's clustering
 * spec and, per clustered column, its field id and its carrier as Spark SQL with {@code {}} where the
 * column goes.  Read once per store file (a store is never rewritten: a new layout is a new file).
 */
final class WriteKeys {
  static final String BLOB = "zskip-write-keys-v1";
  private static final int REMEMBERED = 64; // store files whose recipe is kept

  private static final Map<String, Optional<WriteKeys>> BY_STORE = new LinkedHashMap<>(16, 0.75f, true) {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Optional<WriteKeys>> eldest) {
      return size() > REMEMBERED;
    }
  };

  final byte[] payload;
  final int[] fieldIds;
  final String[] carriers;
  final String[] types; // each column's Spark type when optimize recorded the key
  final long[] rangeBounds; // signed curve keys cutting the table's keys into ranges of as many rows (range mode)

  WriteKeys(byte[] payload, int[] fieldIds, String[] carriers, String[] types, long[] rangeBounds) {
    this.payload = payload;
    this.fieldIds = fieldIds;
    this.carriers = carriers;
    this.types = types;
    this.rangeBounds = rangeBounds;
  }

  /** The recipe of the store file {@code path} of {@code table}; empty when the store has none (written before zskip recorded one). */
  static Optional<WriteKeys> of(Table table, String path) throws IOException {
    synchronized (BY_STORE) {
      Optional<WriteKeys> known = BY_STORE.get(path);
      if (known != null) {
        return known;
      }
    }
    Optional<WriteKeys> read = read(table, path);
    synchronized (BY_STORE) {
      BY_STORE.put(path, read);
    }
    return read;
  }

  private static Optional<WriteKeys> read(Table table, String path) throws IOException {
    try (PuffinReader reader = Puffin.read(table.io().newInputFile(path)).build()) {
      for (BlobMetadata blob : reader.fileMetadata().blobs()) {
        if (BLOB.equals(blob.type())) {
          for (Pair<BlobMetadata, ByteBuffer> read : reader.readAll(List.of(blob))) {
            ByteBuffer buffer = read.second();
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return Optional.of(parse(bytes));
          }
        }
      }
    }
    return Optional.empty();
  }

  static WriteKeys parse(byte[] json) throws IOException {
    JsonNode recipe = Answers.MAPPER.readTree(json);
    JsonNode columns = recipe.get("columns");
    int[] ids = new int[columns.size()];
    String[] carriers = new String[columns.size()];
    String[] types = new String[columns.size()];
    for (int i = 0; i < columns.size(); i++) {
      ids[i] = columns.get(i).get("field-id").asInt();
      carriers[i] = columns.get(i).get("carrier").asText();
      types[i] = columns.get(i).path("type").asText(null);
    }
    JsonNode bounds = recipe.path("range-bounds"); // absent from stores written before range bounds were
    long[] rangeBounds = new long[bounds.size()];
    for (int i = 0; i < rangeBounds.length; i++) {
      rangeBounds[i] = bounds.get(i).asLong();
    }
    return new WriteKeys(Base64.getDecoder().decode(recipe.get("payload").asText()), ids, carriers, types, rangeBounds);
  }

  /**
   * The SQL of the struct of carriers {@code CurveKeys.Key} takes, naming each column as {@code schema}
   * names its field id now; {@code null} if a clustered column is gone from the schema or its type
   * changed since optimize recorded the key (a promoted column's carrier may not hold its new values).
   */
  String carriersSql(Schema schema) {
    List<String> fields = new ArrayList<>();
    for (int i = 0; i < fieldIds.length; i++) {
      String name = schema.findColumnName(fieldIds[i]);
      if (name == null || name.contains(".")) {
        return null; // dropped (or, impossibly for a clustered column, nested)
      }
      if (types[i] != null
          && !types[i].equals(SparkSchemaUtil.convert(schema.findType(fieldIds[i])).simpleString())) {
        return null;
      }
      fields.add("'c" + i + "', " + carriers[i].replace("{}", "`" + name.replace("`", "``") + "`"));
    }
    return "named_struct(" + String.join(", ", fields) + ")";
  }
}
