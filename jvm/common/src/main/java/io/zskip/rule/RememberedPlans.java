package io.zskip.rule;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.zskip.bridge.Answers;
import io.zskip.filter.BoundFilters;
import io.zskip.filter.ExpressionJson;
import io.zskip.filter.MinMaxSuffices;
import io.zskip.iceberg.Members;
import io.zskip.join.JoinSide;
import io.zskip.scan.ScanEntry;
import io.zskip.scan.Scans;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.expressions.Expression;

/**
 * What zskip's rule remembers of the planner's answers, so that a query whose answer is already known
 * costs no call to the Python planner.
 *
 * <p>Two things, both keyed by a table state (the table, its metadata file, uuid and last update, and
 * the session's zskip settings: any commit or property change makes a new metadata file, so an entry
 * never outlives what it describes):
 *
 * <ul>
 *   <li>a scan's answer, by the state, the filters pushed to the scan, the columns it reads and the
 *       signatures of the filtered dimensions it is joined to: the kept files by path (Iceberg may list
 *       the same files in another order next time), the explain note, the planner's token for the
 *       scan's workload record, and the partials of an aggregate answered in part from statistics
 *       (a dashboard's repeated aggregate then costs no call either);
 *   <li>the field ids the planner can rule anything out by in that state (the clustered columns and
 *       the indexed ones): a scan joined to no filtered dimension whose filters name none of them can
 *       gain nothing beyond Iceberg's own pruning, whatever its literals. Before the planner's first
 *       answer in a state, the same field ids come from the table's properties ({@link PlanningFields}),
 *       which also tell a filter bounding one clustered column on one side only, which gains nothing
 *       either ({@link MinMaxSuffices}).
 * </ul>
 *
 * Bounded, least recently used first out; what is not here is asked of the planner, as before.
 */
public final class RememberedPlans {
  static final int MAX_ANSWERS = 1024;
  static final long MAX_CHARS = 32L << 20; // the kept-file lists of the answers, in characters
  static final int MAX_STATES = 256;

  /**
   * One scan's remembered answer: the note, the kept files by path ({@code null}: all), the record token,
   * and the partials of an aggregate answered in part from statistics ({@code null}: none), which are
   * right with those files only and are remembered with them.
   */
  record Answer(String note, ArrayNode files, String record, JsonNode aggregate, long chars) {
    Answer(String note, ArrayNode files, String record, long chars) {
      this(note, files, record, null, chars);
    }
  }

  private static final Map<String, Answer> ANSWERS = new LinkedHashMap<>(64, 0.75f, true);
  private static final Map<String, Set<Integer>> FIELDS = new LinkedHashMap<>(16, 0.75f, true);
  private static long chars;

  private RememberedPlans() {}

  static synchronized Answer answer(String key) {
    return ANSWERS.get(key);
  }

  static synchronized void remember(String key, Answer answer) {
    Answer old = ANSWERS.put(key, answer);
    chars += answer.chars() - (old == null ? 0 : old.chars());
    var eldest = ANSWERS.entrySet().iterator();
    while ((ANSWERS.size() > MAX_ANSWERS || chars > MAX_CHARS) && eldest.hasNext()) {
      chars -= eldest.next().getValue().chars();
      eldest.remove();
    }
  }

  static synchronized Set<Integer> fields(String state) {
    return FIELDS.get(state);
  }

  static synchronized void rememberFields(String state, Set<Integer> fields) {
    FIELDS.put(state, Set.copyOf(fields));
    var eldest = FIELDS.entrySet().iterator();
    while (FIELDS.size() > MAX_STATES && eldest.hasNext()) {
      eldest.next();
      eldest.remove();
    }
  }

  /** Forget everything (tests, and a planner that changed its mind about what it may be asked). */
  static synchronized void clear() {
    ANSWERS.clear();
    FIELDS.clear();
    chars = 0;
  }

  static synchronized int size() {
    return ANSWERS.size();
  }

  /**
   * What memory answers for every scan of {@code scans}: the answer {@link Scans#hooked} takes, the
   * positions of the scans decided by their fields alone (their workload records need a plan) and the
   * record tokens of the answers remembered whole; {@code null} when some scan must be planned.
   */
  record Recall(ObjectNode answer, List<Integer> toPlan, List<String> toRepeat) {}

  /** Each scan's memory keys: its table state and its answer key ({@code null}: not remembered). */
  record Keys(String[] states, String[] answers) {}

  static Keys keys(Scans scans) throws ReflectiveOperationException {
    List<ScanEntry> entries = scans.entries();
    String settings = null;
    String[] states = new String[entries.size()];
    String[] answers = new String[entries.size()];
    for (int i = 0; i < entries.size(); i++) {
      ScanEntry entry = entries.get(i);
      String metadata = metadataFile(entry.table());
      if (metadata == null) {
        continue;
      }
      if (settings == null) {
        settings = scans.settingsText();
      }
      states[i] = entry.table().name() + "\u0001" + metadata + "\u0001" + settings;
      StringBuilder key = new StringBuilder(states[i]).append('\u0002').append(filtersText(entry));
      key.append('\u0002').append(String.join(",", entry.scan().readSchema().fieldNames()));
      for (JoinSide join : scans.joins()) {
        if (join.scan() == i) {
          key.append('\u0002').append(join.column()).append('\u0001').append(Scans.signature(join));
        }
      }
      if (entry.aggregate() != null) { // the aggregate the planner was asked to answer in part
        key.append('\u0002').append(entry.aggregate().signature());
      }
      answers[i] = key.toString();
    }
    return new Keys(states, answers);
  }

  /** The answer memory gives every scan of {@code scans} (see {@link Recall}), or {@code null}. */
  static Recall recall(Scans scans, Keys keys) throws ReflectiveOperationException {
    List<ScanEntry> entries = scans.entries();
    ObjectNode top = Answers.MAPPER.createObjectNode();
    ArrayNode items = top.putArray("scans");
    List<Integer> toPlan = new ArrayList<>();
    List<String> toRepeat = new ArrayList<>();
    Set<Integer> joined = new HashSet<>();
    for (JoinSide join : scans.joins()) {
      joined.add(join.scan());
    }
    for (int i = 0; i < entries.size(); i++) {
      if (keys.answers()[i] == null) {
        return null;
      }
      ScanEntry entry = entries.get(i);
      ObjectNode item = items.addObject();
      item.put("scan", i);
      Answer known = answer(keys.answers()[i]);
      if (known != null) {
        if (known.files() != null) {
          ArrayNode files = byPosition(known.files(), entry.tasks());
          if (files == null) {
            return null;
          }
          item.set("files", files);
        }
        item.put("note", known.note());
        if (known.aggregate() != null) {
          item.set("aggregate", known.aggregate());
        }
        if (known.record() != null) {
          toRepeat.add(known.record());
        }
        continue;
      }
      Set<Integer> planning = fields(keys.states()[i]);
      if (planning == null) { // the state's first plan: what zskip's commits recorded, if they did
        planning = PlanningFields.of(entry.table().properties());
      }
      if (planning == null || joined.contains(i)) {
        return null;
      }
      Schema schema = entry.table().schema();
      if (entry.aggregate() != null
          && entry.aggregate().mayBeAnswered(schema, PlanningFields.summed(entry.table().properties()))) {
        return null; // only the planner knows which row groups statistics answer
      }
      BoundFilters filters = BoundFilters.of(schema, Members.filters(entry.scan()));
      if (filters == null) {
        return null; // a filter this schema cannot bind: the planner says what to do
      }
      if (!filters.disjointFrom(planning) // a filter on a column the planner plans by: unless min/max suffice for it
          && !MinMaxSuffices.decideAlone(schema, filters, PlanningFields.described(entry.table().properties()))) {
        return null;
      }
      // the planner's own note for such a scan (zskip.planning.enable.note), word for word
      item.put("note", "zskip: reads what Iceberg planned (" + String.format(java.util.Locale.ROOT, "%,d", entry.tasks().size())
          + " files); nothing more to skip");
      toPlan.add(i);
    }
    return new Recall(top, toPlan, toRepeat);
  }

  /** Remember what the planner answered for {@code scans} (its items may say not to). */
  static void learn(Scans scans, Keys keys, JsonNode answer) {
    List<ScanEntry> entries = scans.entries();
    for (JsonNode item : answer.get("scans")) {
      int i = item.get("scan").asInt();
      if (keys.answers()[i] == null || !item.path("remember").asBoolean(false)) {
        continue;
      }
      JsonNode fields = item.get("fields");
      if (fields != null && fields.isArray()) {
        Set<Integer> ids = new HashSet<>();
        fields.forEach(id -> ids.add(id.asInt()));
        rememberFields(keys.states()[i], ids);
      }
      ArrayNode files = item.has("files") ? byPath(item.get("files"), entries.get(i).tasks()) : null;
      String note = item.get("note").asText();
      String record = item.hasNonNull("record") ? item.get("record").asText() : null;
      // an answered aggregate's files leave out the row groups its partials stand for: both or neither
      JsonNode aggregate = item.get("aggregate");
      long size = note.length() + (files == null ? 0 : files.toString().length()) + keys.answers()[i].length()
          + (aggregate == null ? 0 : aggregate.toString().length());
      remember(keys.answers()[i], new Answer(note, files, record, aggregate, size));
    }
  }

  /** The metadata file of {@code table}'s loaded state, or {@code null} when it has none to name. */
  private static String metadataFile(Table table) {
    if (!(table instanceof HasTableOperations ops)) {
      return null;
    }
    TableMetadata current = ops.operations().current();
    if (current == null || current.metadataFileLocation() == null) {
      return null;
    }
    // a catalog may name metadata files v1, v2, ...: a table dropped and created again reuses the names
    return current.metadataFileLocation() + "\u0001" + current.uuid() + "\u0001" + current.lastUpdatedMillis();
  }

  private static String filtersText(ScanEntry entry) throws ReflectiveOperationException {
    StringWriter buffer = new StringWriter();
    try (JsonGenerator json = Answers.JSON.createGenerator(buffer)) {
      json.writeStartArray();
      Set<String> referenced = new HashSet<>();
      for (Expression expression : Members.filters(entry.scan())) {
        ExpressionJson.write(json, expression, referenced);
      }
      json.writeEndArray();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
    return buffer.toString();
  }

  /** An answer's kept files with each task position replaced by its file's path. */
  static ArrayNode byPath(JsonNode files, List<FileScanTask> tasks) {
    ArrayNode out = Answers.MAPPER.createArrayNode();
    for (JsonNode item : files) {
      ArrayNode copy = out.addArray();
      copy.add(tasks.get(item.get(0).asInt()).file().location());
      for (int i = 1; i < item.size(); i++) {
        copy.add(item.get(i));
      }
    }
    return out;
  }

  /**
   * Remembered files with each path replaced by the position of its task in {@code tasks}; {@code null}
   * when a path is not among them (the answer is then asked of the planner again).
   */
  static ArrayNode byPosition(ArrayNode files, List<FileScanTask> tasks) {
    Map<String, Integer> position = new HashMap<>(tasks.size() * 2);
    for (int i = 0; i < tasks.size(); i++) {
      position.put(tasks.get(i).file().location(), i);
    }
    ArrayNode out = Answers.MAPPER.createArrayNode();
    for (JsonNode item : files) {
      Integer at = position.get(item.get(0).asText());
      if (at == null) {
        return null;
      }
      ArrayNode copy = out.addArray();
      copy.add(at);
      for (int i = 1; i < item.size(); i++) {
        copy.add(item.get(i));
      }
    }
    return out;
  }
}
