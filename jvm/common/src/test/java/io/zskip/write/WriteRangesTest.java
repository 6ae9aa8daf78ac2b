package io.zskip.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;
import org.junit.jupiter.api.Test;

// Whether Spark's hash repartition really sends each value to its partition is tested end to end
// (test_clustered_writes.py: range mode's files do not overlap); catalyst's expressions need more of
// Spark on the class path than these tests have.
class WriteRangesTest {
  @Test
  void everyPartitionGetsADistinctValueThatHashesToIt() {
    for (int n : new int[] {1, 2, 7, 200, 4096}) {
      int[] values = WriteRanges.valuesHashingTo(n);
      Set<Integer> distinct = new HashSet<>();
      for (int p = 0; p < n; p++) {
        assertEquals(p, Math.floorMod(Murmur3_x86_32.hashInt(values[p], WriteRanges.SEED), n));
        assertTrue(distinct.add(values[p]));
      }
    }
  }

  @Test
  void rangesGoToPartitionsInKeyOrderAndFillThemAll() {
    long[] bounds = {-100, -5, 0, 7, 1_000};
    int last = 0;
    Set<Integer> used = new HashSet<>();
    for (long key = -200; key <= 2_000; key++) {
      int partition = WriteRanges.partition(bounds, 3, key);
      assertTrue(partition >= last && partition < 3, "key " + key);
      last = partition;
      used.add(partition);
    }
    assertEquals(3, used.size());
    assertEquals(0, WriteRanges.partition(bounds, 3, Long.MIN_VALUE));
    assertEquals(2, WriteRanges.partition(bounds, 3, Long.MAX_VALUE));
    assertEquals(WriteRanges.partition(bounds, 12, 0), WriteRanges.partition(bounds, 12, 6)); // one range
    assertEquals(0, WriteRanges.partition(new long[0], 5, 42)); // no bounds: one range
  }
}
