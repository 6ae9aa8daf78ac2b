package io.zskip.rule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PlanningFieldsTest {
  @Test
  void aTableZskipNeverTouchedHasNoFieldsToPlanBy() {
    assertEquals(Set.of(), PlanningFields.of(Map.of("write.format.default", "parquet")));
  }

  @Test
  void theClusteredAndIndexedFieldsOfTheFilesTheTablePointsAt() {
    Map<String, String> properties = Map.of(
        "zskip.clustering.store", "s3://b/t/zskip/clustering-1.puffin",
        "zskip.clustering.field-ids", "1,4@s3://b/t/zskip/clustering-1.puffin",
        "zskip.index.manifest", "/t/zskip/indexes/manifest-2.puffin",
        "zskip.index.field-ids", "7@/t/zskip/indexes/manifest-2.puffin");
    assertEquals(Set.of(1, 4, 7), PlanningFields.of(properties));
    Map<String, String> noIndexes = Map.of(
        "zskip.clustering.store", "/t/s@1.puffin", "zskip.clustering.field-ids", "2@/t/s@1.puffin");
    assertEquals(Set.of(2), PlanningFields.of(noIndexes)); // a path may hold '@': the ids end at the first
    assertEquals(Set.of(), PlanningFields.of(Map.of("zskip.index.manifest", "/m", "zskip.index.field-ids", "@/m")));
  }

  @Test
  void idsRecordedForAnotherFileOrNotAtAllSayNothing() {
    // a zskip that did not know the property published a new manifest: the ids describe the old one
    assertNull(PlanningFields.of(Map.of("zskip.index.manifest", "/m2", "zskip.index.field-ids", "7@/m1")));
    assertNull(PlanningFields.of(Map.of("zskip.clustering.store", "/s")));
    assertNull(PlanningFields.of(Map.of("zskip.clustering.store", "/s", "zskip.clustering.field-ids", "1,x@/s")));
    assertNull(PlanningFields.of(Map.of("zskip.clustering.store", "/s", "zskip.clustering.field-ids", "1,2")));
  }

  @Test
  void theValueOrderedClusteredFieldsAreAmongTheClusteredOnes() {
    Map<String, String> properties = Map.of(
        "zskip.clustering.store", "/s1",
        "zskip.clustering.field-ids", "1,4,6@/s1",
        "zskip.clustering.value-ordered-field-ids", "1,4@/s1",
        "zskip.clustering.curve", "hilbert@/s1");
    assertEquals(
        new PlanningFields.Described(Set.of(1, 4, 6), Set.of(1, 4), Set.of(), true), PlanningFields.described(properties));
    assertFalse(PlanningFields.described(Map.of("zskip.clustering.store", "/s2", "zskip.clustering.field-ids", "1@/s2",
        "zskip.clustering.curve", "hilbert@/s1")).hilbert()); // described for another store
    // written by a zskip before them, or for another store: none
    assertEquals(Set.of(), PlanningFields.described(Map.of(
        "zskip.clustering.store", "/s1", "zskip.clustering.field-ids", "1@/s1")).valueOrdered());
    assertEquals(Set.of(), PlanningFields.described(Map.of(
        "zskip.clustering.store", "/s2", "zskip.clustering.field-ids", "1@/s2",
        "zskip.clustering.value-ordered-field-ids", "1@/s1")).valueOrdered());
  }
}
