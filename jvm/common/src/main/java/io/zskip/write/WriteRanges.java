package io.zskip.write;

import java.util.Arrays;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * Range mode's distribution of a clustered write without a sampling job: ranges of the curve key cut
 * at the bounds optimize recorded (quantiles of the table's keys, {@code zskip.layout.write_keys}), sent
 * to shuffle partitions in key order by a hash repartition.
 *
 * <p>Spark's range partitioning would first run a job over the write's input to sample its keys.  A
 * hash repartition by an int {@code v} sends a row to partition {@code pmod(murmur3(v, 42), n)} (Spark's
 * {@code HashPartitioning}); this UDF returns, for the key's range, a value that hashes to the
 * partition the range belongs to, so partition {@code p} holds ranges {@code [p * r / n, (p + 1) * r / n)}
 * of the {@code r} ranges.  Adaptive execution merges only neighbouring partitions, so each write task
 * still gets one stretch of the curve.
 */
final class WriteRanges implements UDF1<Row, Integer> {
  private static final long serialVersionUID = 1L;
  static final String NAME = "zskip_write_range";
  static final int SEED = 42; // Spark's Murmur3Hash seed, which HashPartitioning uses

  private final CurveKeys keys;
  private final long[] bounds; // signed curve keys, ascending: range i is [bounds[i-1], bounds[i])
  private final int[] valueOfPartition;

  WriteRanges(byte[] payload, long[] bounds, int partitions) {
    this.keys = new CurveKeys(payload);
    this.bounds = bounds;
    this.valueOfPartition = valuesHashingTo(partitions);
  }

  @Override
  public Integer call(Row carriers) {
    long key = keys.key(carriers) ^ Long.MIN_VALUE; // signed, as the sort's key
    return valueOfPartition[partition(bounds, valueOfPartition.length, key)];
  }

  /** The partition of {@code partitions} a row of curve key {@code key} (signed) goes to. */
  static int partition(long[] bounds, int partitions, long key) {
    int found = Arrays.binarySearch(bounds, key);
    int range = found >= 0 ? found + 1 : -found - 1; // how many bounds are at most the key
    return (int) ((long) range * partitions / (bounds.length + 1));
  }

  /** For each partition {@code p < n}, the least non-negative int a hash repartition into {@code n} sends to {@code p}. */
  static int[] valuesHashingTo(int n) {
    int[] values = new int[n];
    Arrays.fill(values, -1);
    int missing = n;
    for (int v = 0; missing > 0; v++) {
      int p = Math.floorMod(Murmur3_x86_32.hashInt(v, SEED), n);
      if (values[p] < 0) {
        values[p] = v;
        missing--;
      }
    }
    return values;
  }
}
