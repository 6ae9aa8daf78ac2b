package io.zskip.settings;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Every setting zskip's JVM side reads and every table property zskip reads or writes, declared once,
 * as Python's {@code zskip.settings} declares them: {@code tests/test_settings.py} runs {@link #main}
 * and fails on any difference, and on a {@code spark.zskip.*} or {@code zskip.*} property literal
 * anywhere else in the JVM's sources.  Code reads a setting through its entry ({@code
 * TIMEOUT.key()}, {@code TIMEOUT.defaultValue()}) with the parser its kind names: Spark's for
 * durations ({@code SparkConf.getTimeAsMs}), {@link #flag} for booleans, {@code Long.parseLong} for
 * counts and bytes.  No Spark type appears here.
 */
public final class ZskipSettings {
  /** The prefix of every Spark setting zskip reads (a session's are handed to the planner with the scans). */
  public static final String PREFIX = "spark.zskip.";

  private static final Set<String> TRUE_WORDS = Set.of("true", "1", "on", "yes");
  private static final Set<String> FALSE_WORDS = Set.of("false", "0", "off", "no");

  /** One setting: its key, its text when unset, how it is read, and whether a session may set it. */
  public record Setting(String key, String defaultValue, String kind, String scope, String description) {}

  /** One table property: who sets it ({@code you}, or the verb whose commit writes it) and what it holds. */
  public record TableProperty(String key, String setBy, String description) {}

  public static final Setting ENABLED = new Setting("spark.zskip.enabled", "true", "boolean", "session",
      "false pauses zskip's rule: plans and writes are Spark's own");
  public static final Setting CAPTURE = new Setting("spark.zskip.workload.capture", "true", "boolean", "session",
      "false: scans are not recorded in the table's workload log");
  public static final Setting RANGE_ROWS = new Setting("spark.zskip.planning.bitmapRangeRows", "4", "number", "session",
      "a range-only predicate reads a file's bitmaps only where min/max expect fewer matching rows than "
          + "this in a row group; 0: always read them");
  public static final Setting SMALL_JOIN_SIDE = new Setting("spark.zskip.planning.smallJoinSideBytes", "16777216", "bytes",
      "session", "a filtered dimension side Spark estimates at most this large is read in the driver by Iceberg's "
          + "reader instead of a Spark job");
  public static final Setting AGGREGATES = new Setting("spark.zskip.planning.aggregates", "true", "boolean", "session",
      "false: an aggregate over a filtered scan reads every row group it keeps, even those whose statistics "
          + "answer it");
  public static final Setting LISTED_FILES = new Setting("spark.zskip.planning.listedFiles", "true", "boolean", "session",
      "false: scans of zskip's tables are planned by Iceberg from its manifests instead of from zskip's "
          + "in-memory file lists");
  public static final Setting PLANNER_PYTHON = new Setting("spark.zskip.planner.python", "", "interpreter", "application",
      "the Python interpreter of the hosted planner, with zskip and PySpark");
  public static final Setting PLANNER_TIMEOUT = new Setting("spark.zskip.planner.timeout", "30s", "duration", "application",
      "a query waits this long for zskip's plan, then keeps Spark's; the planner is restarted");
  public static final Setting PLANNER_START_WAIT = new Setting("spark.zskip.planner.startWait", "30s", "duration",
      "application", "how long queries wait for the planner's first start, which begins with the application "
          + "(0: queries before it keep Spark's plans)");
  public static final Setting PLANNER_START_TIMEOUT = new Setting("spark.zskip.planner.startTimeout", "120s", "duration",
      "application", "how long the planner may take to start before it is restarted");
  public static final Setting PROCEDURES_MAX_CONCURRENT = new Setting("spark.zskip.procedures.maxConcurrent", "8", "count",
      "application", "how many CALL zskip.system.* may run at once in the application; one more is refused with a "
          + "one-line error");
  public static final Setting PROCEDURES_TIMEOUT = new Setting("spark.zskip.procedures.timeout", "24h", "duration",
      "application", "how long a CALL zskip.system.* may run (a session may set a shorter bound): past it the call "
          + "fails with one line, its Spark jobs are cancelled and it publishes nothing it had not committed; 0 for no bound");
  /** An environment variable of the hosted planner's process, not a Spark setting (the JVM passes it on). */
  public static final Setting CACHE_BYTES = new Setting("ZSKIP_PLANNING_CACHE_BYTES", "1073741824", "bytes", "environment",
      "bounds the bytes of the footers, index blobs and manifests planning keeps (one cache per process, shared by "
          + "every session of a driver or of the hosted planner); an entry larger than a quarter of it is read each "
          + "time it is needed");

  public static final List<Setting> SETTINGS = List.of(ENABLED, CAPTURE, RANGE_ROWS, SMALL_JOIN_SIDE, AGGREGATES, LISTED_FILES,
      PLANNER_PYTHON, PLANNER_TIMEOUT, PLANNER_START_WAIT, PLANNER_START_TIMEOUT, PROCEDURES_MAX_CONCURRENT,
      PROCEDURES_TIMEOUT);
  public static final List<Setting> ENVIRONMENT = List.of(CACHE_BYTES);

  public static final TableProperty WRITE_ORDER = new TableProperty("zskip.write.order", "you",
      "how writes into a table zskip clustered are ordered: auto (default), range, sort or none");
  public static final TableProperty CLUSTERING_STORE = new TableProperty("zskip.clustering.store", "optimize",
      "the clustering store: the spec, every file's and row group's curve-key range, the key clustered writes sort by");
  public static final TableProperty CLUSTERING = new TableProperty("zskip.clustering", "optimize",
      "the layout in words (columns by field id, curve, mapping, file size), what maintain keeps");
  public static final TableProperty CLUSTERED_FIELDS = new TableProperty("zskip.clustering.field-ids", "optimize",
      "the clustered field ids and the store they describe, so the rule decides a query on other columns "
          + "without the planner");
  public static final TableProperty VALUE_ORDERED_FIELDS = new TableProperty("zskip.clustering.value-ordered-field-ids",
      "optimize", "of those, the columns whose curve coordinate follows their own order (all but a dimension's), so "
          + "the rule decides a filter bounding one of them on one side without the planner");
  public static final TableProperty CURVE = new TableProperty("zskip.clustering.curve", "optimize",
      "the curve and the store it describes: along Hilbert's, a filter on one such column is decided without the "
          + "planner whatever its bounds");
  public static final TableProperty INDEX_MANIFEST = new TableProperty("zskip.index.manifest", "index builds",
      "the index manifest, swapped by compare-and-swap");
  public static final TableProperty INDEXED_FIELDS = new TableProperty("zskip.index.field-ids", "index builds",
      "the field ids with an index answering conditions and the manifest they describe");
  public static final TableProperty SUMMED_FIELDS = new TableProperty("zskip.index.sums-field-ids", "index builds",
      "the field ids with a sums index or that are a cube's measures, and the manifest they describe, so the "
          + "rule leaves an aggregate summing another column to Spark without the planner");

  public static final List<TableProperty> PROPERTIES = List.of(WRITE_ORDER, CLUSTERING_STORE, CLUSTERING,
      CLUSTERED_FIELDS, VALUE_ORDERED_FIELDS, CURVE, INDEX_MANIFEST, INDEXED_FIELDS, SUMMED_FIELDS);

  private ZskipSettings() {}

  /**
   * A boolean setting's value, read as Python's {@code zskip.settings.flag} reads it: {@code true},
   * {@code 1}, {@code on}, {@code yes} or {@code false}, {@code 0}, {@code off}, {@code no} in any case;
   * anything else (or {@code null}) is {@code otherwise}, so a typo never makes zskip's rule fail a query.
   */
  public static boolean flag(String text, boolean otherwise) {
    if (text == null) {
      return otherwise;
    }
    String word = text.trim().toLowerCase(Locale.ROOT);
    return TRUE_WORDS.contains(word) || (!FALSE_WORDS.contains(word) && otherwise);
  }

  /** The registry as JSON: {@code {"settings": [...], "environment": [...], "properties": [...]}}. */
  public static String json() {
    StringBuilder out = new StringBuilder("{\"settings\": [");
    settings(out, SETTINGS);
    out.append("], \"environment\": [");
    settings(out, ENVIRONMENT);
    out.append("], \"properties\": [");
    for (int i = 0; i < PROPERTIES.size(); i++) {
      TableProperty property = PROPERTIES.get(i);
      Map<String, String> fields = new LinkedHashMap<>();
      fields.put("key", property.key());
      fields.put("set_by", property.setBy());
      fields.put("description", property.description());
      object(out.append(i == 0 ? "" : ", "), fields);
    }
    return out.append("]}").toString();
  }

  private static void settings(StringBuilder out, List<Setting> settings) {
    for (int i = 0; i < settings.size(); i++) {
      Setting setting = settings.get(i);
      Map<String, String> fields = new LinkedHashMap<>();
      fields.put("key", setting.key());
      fields.put("default", setting.defaultValue());
      fields.put("kind", setting.kind());
      fields.put("scope", setting.scope());
      fields.put("description", setting.description());
      object(out.append(i == 0 ? "" : ", "), fields);
    }
  }

  private static void object(StringBuilder out, Map<String, String> fields) {
    out.append('{');
    String separator = "";
    for (Map.Entry<String, String> field : fields.entrySet()) {
      out.append(separator);
      quoted(out, field.getKey()).append(": ");
      quoted(out, field.getValue());
      separator = ", ";
    }
    out.append('}');
  }

  private static StringBuilder quoted(StringBuilder out, String text) {
    out.append('"');
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"');
  }

  /** Prints {@link #json()}: {@code java -cp zskip.jar io.zskip.settings.ZskipSettings}, no Spark needed. */
  public static void main(String[] args) {
    System.out.println(json());
  }
}
