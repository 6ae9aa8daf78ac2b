package io.zskip.bridge;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How answers cross py4j.  Answers are JSON text.  A py4j answer longer than the JVM side's 8 KiB
 * buffer waits for a delayed TCP acknowledgement (about 40 ms), so a long answer is written to a local
 * file and only its path crosses (after a NUL character): the Python driver and this JVM always share
 * a machine.
 */
public final class Answers {
  static final int DIRECT = 6000; // characters an answer may have and still cross py4j directly
  public static final JsonFactory JSON = new JsonFactory();
  public static final ObjectMapper MAPPER = new ObjectMapper();

  private Answers() {}

  /** What writes an answer's JSON. */
  public interface Writing {
    void write(JsonGenerator json) throws Exception;
  }

  /** The answer {@code writing} writes, as {@link #answer(String)} hands it over. */
  public static String json(Writing writing) throws Exception {
    StringWriter buffer = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(buffer)) {
      writing.write(json);
    }
    return answer(buffer.toString());
  }

  static String answer(String text) throws IOException {
    if (text.length() <= DIRECT) {
      return text;
    }
    File file = File.createTempFile("zskip-answer-", ".json");
    Files.writeString(file.toPath(), text, StandardCharsets.UTF_8);
    return "\u0000" + file.getAbsolutePath();
  }

  public static String sha256(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder();
      for (byte b : digest) {
        hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }

  public static String hex(java.nio.ByteBuffer value) {
    java.nio.ByteBuffer buffer = value.duplicate();
    StringBuilder hex = new StringBuilder();
    while (buffer.hasRemaining()) {
      int b = buffer.get() & 0xff;
      hex.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 0xf, 16));
    }
    return hex.toString();
  }

  /** The digests of what this JVM sent whole most recently (the Python side keeps more). */
  public static final class RecentDigests {
    private final Map<String, Boolean> recent;

    public RecentDigests(int capacity) {
      this.recent = new LinkedHashMap<>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > capacity;
        }
      };
    }

    /** Whether {@code digest} was sent before; it counts as sent from now on. */
    public synchronized boolean sent(String digest) {
      return recent.put(digest, Boolean.TRUE) != null;
    }
  }
}
