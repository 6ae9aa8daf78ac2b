package io.zskip.procedures;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.zskip.hosted.HostedPlanner;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * zskip's SQL procedures, the part both Spark lines share: what each takes and returns (declared by the
 * Python process zskip's extension hosts, {@code zskip.procedures}, so the names, types and the code
 * that runs them live in one place), and a call: its arguments as JSON to that process, its rows back.
 * The catalogs in each Spark line's folder wrap these in that line's procedure interfaces.
 */
public final class Procedures {
  /** The namespace every procedure is in: {@code CALL zskip.system.optimize(...)}. */
  public static final String NAMESPACE = "system";

  /** A procedure as declared: its parameters (in order, with whether each is required) and its result columns. */
  public record Spec(String name, String description, List<Param> parameters, StructType result, boolean writes) {}

  /** One parameter: its name, type, whether a call must give it, and what it is (for people). */
  public record Param(String name, DataType type, boolean required, String doc) {}

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Logger LOG = LoggerFactory.getLogger(Procedures.class);

  private Procedures() {}

  /**
   * Refuses a procedure catalog named {@code name} that the application's configuration does not
   * declare: a session may not turn zskip's procedures on for itself with {@code SET
   * spark.sql.catalog.x=...} (Spark puts a session's catalog settings in its SQL configuration, the
   * application's in its {@code SparkConf}), since every procedure runs in the planner process the
   * application's configuration set up.
   */
  public static void checkDeclared(String name, Class<?> catalog) {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    String key = "spark.sql.catalog." + name;
    String declared = env == null ? null : env.conf().get(key, null);
    if (declared == null || !declared.trim().equals(catalog.getName())) {
      throw new IllegalStateException("zskip's procedures are turned on by the application's configuration only ("
          + key + "=" + catalog.getName() + " in spark-defaults.conf or --conf when the application starts), "
          + "not by a session's SET: ask the application's administrator");
    }
  }

  /** The procedures the hosted process declares, by name; it is started (and waited for) if need be. */
  public static Map<String, Spec> specs(SparkSession session) {
    JsonNode all;
    try {
      all = MAPPER.readTree(HostedPlanner.procedureSpecs(session));
    } catch (java.io.IOException e) {
      throw new IllegalStateException("zskip's procedures could not be read: " + e.getMessage(), e);
    }
    Map<String, Spec> specs = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = all.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      List<Param> parameters = new ArrayList<>();
      for (JsonNode p : entry.getValue().get("parameters")) {
        parameters.add(new Param(p.get("name").asText(), DataType.fromDDL(p.get("type").asText()),
            p.get("required").asBoolean(), p.path("doc").asText("")));
      }
      StructType result = new StructType();
      for (JsonNode column : entry.getValue().get("result")) {
        result = result.add(column.get("name").asText(), DataType.fromDDL(column.get("type").asText()), true);
      }
      specs.put(entry.getKey(), new Spec(entry.getKey(), entry.getValue().get("description").asText(), parameters,
          result, entry.getValue().path("writes").asBoolean(true)));
    }
    return specs;
  }

  /** The procedure declared as {@code namespace.name}; an {@link IllegalArgumentException} naming those there are. */
  public static Spec find(SparkSession session, String[] namespace, String name) {
    Map<String, Spec> specs = specs(session);
    Spec spec = specs.get(name);
    if (spec == null || namespace.length != 1 || !NAMESPACE.equals(namespace[0])) {
      throw new IllegalArgumentException("zskip has no procedure " + String.join(".", namespace) + "." + name
          + "; it has " + String.join(", ", specs.keySet().stream().map(n -> NAMESPACE + "." + n).toList()));
    }
    return spec;
  }

  /**
   * Runs {@code spec} with {@code arguments} (one value per parameter, in order, as Catalyst values) in
   * the hosted process; its result rows.  A refusal (a bad table, column or option) is an
   * {@link IllegalArgumentException} carrying the Python API's one-line message; a failure on the way
   * (its jobs cancelled, storage) an {@link IllegalStateException}.
   */
  public static InternalRow[] call(Spec spec, InternalRow arguments) {
    ObjectNode given = MAPPER.createObjectNode();
    for (int i = 0; i < spec.parameters().size(); i++) {
      Param p = spec.parameters().get(i);
      given.set(p.name(), arguments.isNullAt(i) ? given.nullNode() : toJson(arguments.get(i, p.type()), p.type()));
    }
    JsonNode answer = null;
    try {
      answer = MAPPER.readTree(HostedPlanner.callProcedure(spec.name(), given.toString()));
    } catch (java.io.IOException e) {
      throw new IllegalStateException("zskip's " + spec.name() + " gave an unreadable answer: " + e.getMessage(), e);
    } finally {
      // after a failure too (a cancelled run may have committed whole batches); not after a refusal
      boolean refused = answer != null && answer.has("error") && answer.path("refused").asBoolean(true);
      if (spec.writes() && !refused && given.hasNonNull("table")) {
        refresh(given.get("table").asText());
      }
    }
    if (answer.has("error")) {
      String message = answer.get("message").asText(); // one line
      if (answer.path("refused").asBoolean(true)) {
        throw new IllegalArgumentException(message); // the API's own words: what is wrong, what to do
      }
      throw new IllegalStateException(message); // failed on the way: cancelled, storage, ...
    }
    List<InternalRow> rows = new ArrayList<>();
    for (JsonNode row : answer.get("rows")) {
      StructField[] fields = spec.result().fields();
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        values[i] = toCatalyst(row.get(i), fields[i].dataType());
      }
      rows.add(new GenericInternalRow(values));
    }
    return rows.toArray(new InternalRow[0]);
  }

  /**
   * Makes the calling session forget its cached copy of {@code table}: the procedure committed through
   * the planner process, and a catalog that caches tables (Iceberg's does, for 30 seconds by default)
   * could otherwise show the caller the table as it was before the call.
   */
  private static void refresh(String table) {
    try {
      // the name as the call gave it, parsed as a table name and nothing else (no statement is run)
      SparkSession.active().catalog().refreshTable(table);
    } catch (Exception e) { // Spark's AnalysisException is a checked one
      LOG.warn("zskip could not refresh this session's copy of {} after the procedure: {}", table, e.toString());
    }
  }

  private static JsonNode toJson(Object value, DataType type) {
    if (value == null) {
      return MAPPER.nullNode();
    }
    if (type instanceof ArrayType array) {
      ArrayNode out = MAPPER.createArrayNode();
      ArrayData data = (ArrayData) value;
      for (int i = 0; i < data.numElements(); i++) {
        out.add(data.isNullAt(i) ? MAPPER.nullNode() : toJson(data.get(i, array.elementType()), array.elementType()));
      }
      return out;
    }
    if (type instanceof MapType map) {
      ObjectNode out = MAPPER.createObjectNode();
      MapData data = (MapData) value;
      for (int i = 0; i < data.numElements(); i++) {
        Object v = data.valueArray().isNullAt(i) ? null : data.valueArray().get(i, map.valueType());
        out.set(data.keyArray().get(i, map.keyType()).toString(), toJson(v, map.valueType()));
      }
      return out;
    }
    if (type.equals(DataTypes.StringType)) { // a UTF8String, whose toString is the text
      return MAPPER.getNodeFactory().textNode(value.toString());
    }
    if (value instanceof Boolean flag) {
      return MAPPER.getNodeFactory().booleanNode(flag);
    }
    if (value instanceof Integer number) {
      return MAPPER.getNodeFactory().numberNode(number);
    }
    if (value instanceof Long number) {
      return MAPPER.getNodeFactory().numberNode(number);
    }
    if (value instanceof Double number) {
      return MAPPER.getNodeFactory().numberNode(number);
    }
    return MAPPER.getNodeFactory().textNode(String.valueOf(value));
  }

  private static Object toCatalyst(JsonNode value, DataType type) {
    if (value == null || value.isNull()) {
      return null;
    }
    if (type instanceof ArrayType array) {
      Object[] items = new Object[value.size()];
      for (int i = 0; i < items.length; i++) {
        items[i] = toCatalyst(value.get(i), array.elementType());
      }
      return new GenericArrayData(items);
    }
    if (type.equals(DataTypes.StringType)) {
      // Catalyst's string (UTF8String), made by Catalyst's own converter
      return CatalystTypeConverters.convertToCatalyst(value.isTextual() ? value.asText() : value.toString());
    }
    if (type.equals(DataTypes.LongType)) {
      return value.asLong();
    }
    if (type.equals(DataTypes.IntegerType)) {
      return value.asInt();
    }
    if (type.equals(DataTypes.DoubleType)) {
      return value.asDouble();
    }
    if (type.equals(DataTypes.BooleanType)) {
      return value.asBoolean();
    }
    throw new IllegalStateException("zskip's procedures return no " + type.simpleString());
  }
}
