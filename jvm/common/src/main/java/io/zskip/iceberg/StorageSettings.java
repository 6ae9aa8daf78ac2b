package io.zskip.iceberg;

import com.fasterxml.jackson.core.JsonGenerator;
import io.zskip.bridge.Answers;
import java.io.IOException;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopConfigurable;
import org.apache.iceberg.io.FileIO;

/**
 * How a table's files are reached, as JSON: its FileIO's class, the FileIO's S3 properties, and the
 * S3A settings of its Hadoop configuration (secrets through Hadoop's credential providers too), which
 * is what {@code zskip.storage} needs to reach the table's files as its FileIO does (and to retry its
 * requests as the FileIO's client does), and nothing else.
 */
public final class StorageSettings {
  static final String[] S3_PROPERTIES = {
    "s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.path-style-access",
    "client.region", "s3.retry.num-retries", "s3.retry.min-wait-ms", "s3.retry.max-wait-ms"
  };
  static final String[] S3A_KEYS = {
    "endpoint", "access.key", "secret.key", "session.token", "path.style.access", "endpoint.region",
    "connection.ssl.enabled", "retry.limit", "retry.interval", "retry.throttle.limit", "retry.throttle.interval"
  };
  // FileIO -> its answer: a loaded table keeps its FileIO, so each is described once
  private static final Map<FileIO, String> KNOWN = Collections.synchronizedMap(new WeakHashMap<>());

  private StorageSettings() {}

  public static String of(Table table) throws Exception {
    FileIO io = table.io();
    String known = KNOWN.get(io);
    if (known != null) {
      return known;
    }
    java.io.StringWriter buffer = new java.io.StringWriter();
    try (JsonGenerator json = Answers.JSON.createGenerator(buffer)) {
      json.writeStartObject();
      json.writeStringField("io", io.getClass().getName());
      json.writeObjectFieldStart("properties");
      Map<String, String> properties;
      try {
        properties = io.properties();
      } catch (UnsupportedOperationException e) {
        properties = Map.of(); // a FileIO that keeps its settings to itself
      }
      for (String key : S3_PROPERTIES) {
        String value = properties.get(key);
        if (value != null) {
          json.writeStringField(key, value);
        }
      }
      json.writeEndObject();
      json.writeObjectFieldStart("hadoop");
      Configuration conf = hadoopConf(io);
      if (conf != null) {
        writeS3A(json, conf);
      }
      json.writeEndObject();
      json.writeEndObject();
    }
    String text = buffer.toString();
    KNOWN.put(io, text);
    return text;
  }

  /**
   * The Hadoop configuration of a FileIO that has one ({@code HadoopFileIO}, {@code ResolvingFileIO}):
   * Iceberg's own interface for it, the same in 1.11 (where it extends Hadoop's {@code Configurable})
   * and 1.12 (where it extends Iceberg's).
   */
  private static Configuration hadoopConf(FileIO io) {
    if (!(io instanceof HadoopConfigurable configurable)) {
      return null;
    }
    try {
      return configurable.getConf();
    } catch (UnsupportedOperationException e) {
      return null;
    }
  }

  private static void writeS3A(JsonGenerator json, Configuration conf) throws IOException {
    for (Map.Entry<String, String> entry : new TreeMap<>(conf.getPropsWithPrefix("fs.s3a.")).entrySet()) {
      String key = entry.getKey();
      boolean wanted = false;
      for (String name : S3A_KEYS) {
        // a bucket's own setting, fs.s3a.bucket.<bucket>.<key>: bucket names may hold dots
        wanted |= key.equals(name) || key.startsWith("bucket.") && key.endsWith("." + name);
      }
      if (wanted) {
        char[] secret = conf.getPassword("fs.s3a." + key);
        json.writeStringField("fs.s3a." + key, secret == null ? entry.getValue() : new String(secret));
      }
    }
  }
}
