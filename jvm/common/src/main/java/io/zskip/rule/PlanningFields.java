package io.zskip.rule;

import io.zskip.settings.ZskipSettings;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The field ids zskip's planner can rule anything out by in a table state, read from the properties
 * zskip's commits record beside the clustering store and the index manifest they describe
 * ({@code zskip.tablefiles.planning_fields}): {@code zskip.clustering.field-ids = 1,4@<store file>},
 * {@code zskip.index.field-ids = 7@<manifest file>} and, of the clustered ones, those whose curve
 * coordinate follows the column's own order, {@code zskip.clustering.value-ordered-field-ids = 1,4@<store file>},
 * and the curve, {@code zskip.clustering.curve = hilbert@<store file>}.
 *
 * <p>With them the rule decides the first plan of a table state without the planner, as it does once
 * the planner has answered for that state. A property describing another file than the one the table
 * points at (left by a zskip that did not write it) or one that does not parse says nothing: the
 * planner is asked.
 */
public final class PlanningFields {
  private static final String STORE = ZskipSettings.CLUSTERING_STORE.key();
  private static final String CLUSTERED = ZskipSettings.CLUSTERED_FIELDS.key();
  private static final String VALUE_ORDERED = ZskipSettings.VALUE_ORDERED_FIELDS.key();
  private static final String CURVE = ZskipSettings.CURVE.key();
  private static final String MANIFEST = ZskipSettings.INDEX_MANIFEST.key();
  private static final String INDEXED = ZskipSettings.INDEXED_FIELDS.key();
  private static final String SUMMED = ZskipSettings.SUMMED_FIELDS.key();

  /**
   * What the properties say of a table state: its clustered, value-ordered clustered and indexed field
   * ids, and whether its curve is Hilbert's (consecutive keys are neighbouring cells).
   */
  public record Described(Set<Integer> clustered, Set<Integer> valueOrdered, Set<Integer> indexed, boolean hilbert) {}

  private PlanningFields() {}

  /** The clustered and indexed field ids {@code properties} describe, or {@code null} if they do not. */
  static Set<Integer> of(Map<String, String> properties) {
    Described described = described(properties);
    if (described == null) {
      return null;
    }
    Set<Integer> fields = new HashSet<>(described.clustered());
    fields.addAll(described.indexed());
    return fields;
  }

  /**
   * Each set {@code properties} describe, or {@code null} if the clustered or indexed ones are not
   * described; value-ordered ones not described (a table a zskip before them clustered) are none, and
   * a curve not described is not Hilbert's.
   */
  static Described described(Map<String, String> properties) {
    Set<Integer> clustered = new HashSet<>();
    Set<Integer> indexed = new HashSet<>();
    if (!described(properties, STORE, CLUSTERED, clustered) || !described(properties, MANIFEST, INDEXED, indexed)) {
      return null;
    }
    Set<Integer> valueOrdered = new HashSet<>();
    if (properties.containsKey(VALUE_ORDERED) && !described(properties, STORE, VALUE_ORDERED, valueOrdered)) {
      valueOrdered.clear();
    }
    valueOrdered.retainAll(clustered);
    String store = properties.get(STORE);
    boolean hilbert = store != null && ("hilbert@" + store).equals(properties.get(CURVE));
    return new Described(Set.copyOf(clustered), Set.copyOf(valueOrdered), Set.copyOf(indexed), hilbert);
  }

  /**
   * The field ids with a sums index that {@code properties} describe (none without a manifest), or
   * {@code null} when they do not describe them (a manifest a zskip before sums indexes published).
   */
  public static Set<Integer> summed(Map<String, String> properties) {
    Set<Integer> summed = new HashSet<>();
    return described(properties, MANIFEST, SUMMED, summed) ? Set.copyOf(summed) : null;
  }

  /** Adds the ids {@code idsKey} records for the file {@code fileKey} names; false when it records none. */
  private static boolean described(Map<String, String> properties, String fileKey, String idsKey, Set<Integer> into) {
    String file = properties.get(fileKey);
    if (file == null || file.isEmpty()) {
      return true; // no store (or no manifest): nothing clustered (or indexed)
    }
    String text = properties.get(idsKey);
    int at = text == null ? -1 : text.indexOf('@');
    if (at < 0 || !text.substring(at + 1).equals(file)) {
      return false;
    }
    try {
      for (String id : text.substring(0, at).split(",")) {
        if (!id.isEmpty()) {
          into.add(Integer.parseInt(id));
        }
      }
    } catch (NumberFormatException malformed) {
      into.clear();
      return false;
    }
    return true;
  }
}
