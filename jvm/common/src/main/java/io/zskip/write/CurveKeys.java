// Curve keys and file routes of rows, computed inside Spark's executors.
//
// The numpy code in zskip.curves is the definition; this class computes the same keys bit for bit
// (tests/integration/test_java_keys.py compares them for every carrier, mapping and curve), because
// a pandas UDF spends most of a rewrite's map stage moving Arrow batches to Python and back.
//
// A spec arrives as one byte[] of big-endian longs written by zskip.layout.java_keys (its layout is
// documented there), so a py4j call carries thousands of rank boundaries at once.  The UDF classes
// are Serializable and hold the parsed spec in fields: Spark ships them to executors with the plan.
//
// Keys are unsigned 64-bit numbers held in longs: compare with Long.compareUnsigned, shift with >>>.
package io.zskip.write;

import java.io.Serializable;
import java.nio.ByteBuffer;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.api.java.UDF2;

public class CurveKeys implements Serializable {
  private static final long serialVersionUID = 1L;

  static final int VERSION = 2;
  // carriers: how a column's value arrives (see zskip.layout.curve_keys.carrier)
  static final int LONG = 0;
  static final int DOUBLE = 1;
  static final int BYTES = 2;
  // mappings from a column's order key to its rank
  static final int RANK = 0;
  static final int RAW = 1;
  static final int LOOKUP = 2;
  // curves
  static final int HILBERT = 0;
  static final int ZORDER = 1;
  static final int LINEAR = 2;

  // the key of every NaN: the canonical quiet NaN with its sign bit flipped, above +inf
  private static final long NAN_KEY = 0xFFF8000000000000L;
  private static final double TWO_TO_53 = 9007199254740992.0;

  private final int curve;
  private final int bits;
  private final int dims;
  private final int[] carriers;
  private final int[] mappings;
  private final int[] mappingBits;
  // a weighted Z curve (columns of unequal widths): key bit p from the top is bit zShift[p] of the
  // rank of column zColumn[p] (zskip.curves.interleave.weighted_bit_order); empty otherwise
  private final int[] zColumn;
  private final int[] zShift;
  private final long[][] sorted; // RANK: boundaries; LOOKUP: the dimension's keys, ascending
  private final long[][] flipped; // RANK: the boundaries with their top bit flipped
  private final long[][] lookupRanks; // LOOKUP: the rank of each sorted key
  private final long[] orphanRanks; // LOOKUP: the rank of a key the record lacks
  private final int[] widths; // RAW
  private final long[] lows; // RAW
  private final int[] spans; // RAW
  private final long[] cutKeys; // ascending, unsigned
  private final double[] cutScale; // run * 2.0 + fraction of each cut
  private final long[] cutRuns; // the number of the run of equal keys each cut belongs to
  private final long[] tokens; // one per file: a value Spark's hash partitioner sends to that file

  public CurveKeys(byte[] payload) {
    ByteBuffer in = ByteBuffer.wrap(payload);
    int version = (int) in.getLong();
    if (version != VERSION) {
      throw new IllegalArgumentException("curve key payload version " + version + ", expected " + VERSION);
    }
    curve = (int) in.getLong();
    bits = (int) in.getLong();
    dims = (int) in.getLong();
    int weighted = (int) in.getLong();
    zColumn = new int[weighted];
    zShift = new int[weighted];
    for (int p = 0; p < weighted; p++) {
      zColumn[p] = (int) in.getLong();
    }
    for (int p = 0; p < weighted; p++) {
      zShift[p] = (int) in.getLong();
    }
    carriers = new int[dims];
    mappings = new int[dims];
    mappingBits = new int[dims];
    sorted = new long[dims][];
    flipped = new long[dims][];
    lookupRanks = new long[dims][];
    orphanRanks = new long[dims];
    widths = new int[dims];
    lows = new long[dims];
    spans = new int[dims];
    for (int c = 0; c < dims; c++) {
      carriers[c] = (int) in.getLong();
      mappings[c] = (int) in.getLong();
      mappingBits[c] = (int) in.getLong();
      if (mappings[c] == RANK) {
        sorted[c] = longs(in, (int) in.getLong());
        flipped[c] = new long[sorted[c].length];
        for (int i = 0; i < sorted[c].length; i++) {
          flipped[c][i] = sorted[c][i] ^ Long.MIN_VALUE;
        }
      } else if (mappings[c] == RAW) {
        widths[c] = (int) in.getLong();
        lows[c] = in.getLong();
        spans[c] = (int) in.getLong();
      } else {
        int n = (int) in.getLong();
        sorted[c] = longs(in, n);
        lookupRanks[c] = longs(in, n);
        orphanRanks[c] = in.getLong();
      }
    }
    int cuts = (int) in.getLong();
    cutKeys = longs(in, cuts);
    cutScale = new double[cuts];
    for (int i = 0; i < cuts; i++) {
      cutScale[i] = Double.longBitsToDouble(in.getLong());
    }
    cutRuns = longs(in, cuts);
    tokens = longs(in, cuts + 1);
    if (in.hasRemaining()) {
      throw new IllegalArgumentException(in.remaining() + " bytes left over in a curve key payload");
    }
  }

  private static long[] longs(ByteBuffer in, int n) {
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      out[i] = in.getLong();
    }
    return out;
  }

  /** The unsigned curve key of a row of carriers (null: the column's null key, 0). */
  public long key(Row row) {
    long[] ranks = new long[dims];
    for (int c = 0; c < dims; c++) {
      ranks[c] = rank(c, orderKey(carriers[c], row.get(c)));
    }
    if (curve == ZORDER) {
      return zColumn.length > 0 ? interleaveWeighted(ranks) : interleave(ranks);
    }
    if (curve == HILBERT) {
      return dims == 1 ? ranks[0] : interleave(transpose(ranks));
    }
    long key = 0L;
    for (int c = 0; c < dims; c++) {
      key = (key << (zColumn.length > 0 ? mappingBits[c] : bits)) | ranks[c];
    }
    return key;
  }

  /** The token of the file a row goes to, from its curve key and its row hash (FileCuts.route). */
  public long token(long key, long tie) {
    int below = countBelow(cutKeys, key, false);
    int through = countBelow(cutKeys, key, true);
    if (through == below) {
      return tokens[below];
    }
    // the key is a cut key: its cuts split its rows by u, the top 53 bits of the hash in [0, 1)
    double u = (double) (tie >>> 11) / TWO_TO_53;
    double place = (double) cutRuns[below] * 2.0 + u;
    int file = 0;
    int hi = cutScale.length;
    while (file < hi) {
      int mid = (file + hi) >>> 1;
      if (cutScale[mid] <= place) {
        file = mid + 1;
      } else {
        hi = mid;
      }
    }
    return tokens[file];
  }

  // --- order keys (zskip.curves.keys.order_key_u64) ----------------------------------------------

  static long orderKey(int carrier, Object value) {
    if (value == null) {
      return 0L;
    }
    if (carrier == LONG) {
      return ((Long) value).longValue() ^ Long.MIN_VALUE;
    }
    if (carrier == DOUBLE) {
      double d = ((Double) value).doubleValue();
      if (Double.isNaN(d)) {
        return NAN_KEY;
      }
      long raw = Double.doubleToRawLongBits(d + 0.0); // -0.0 + 0.0 is +0.0: equal values, one key
      return raw < 0 ? ~raw : raw | Long.MIN_VALUE;
    }
    byte[] bytes = (byte[]) value;
    long key = 0L;
    for (int i = 0; i < 8; i++) {
      key = (key << 8) | (i < bytes.length ? (bytes[i] & 0xFFL) : 0L);
    }
    return key;
  }

  // --- mappings (zskip.curves.rank, zskip.curves.dimension) --------------------------------------

  long rank(int c, long key) {
    if (mappings[c] == RANK) {
      long position = countAtMost(flipped[c], key ^ Long.MIN_VALUE);
      return Long.divideUnsigned(position << mappingBits[c], sorted[c].length + 1L);
    }
    if (mappings[c] == RAW) {
      return raw(c, key);
    }
    long[] keys = sorted[c];
    int at = countBelow(keys, key, false);
    return at < keys.length && keys[at] == key ? lookupRanks[c][at] : orphanRanks[c];
  }

  private long raw(int c, long key) {
    int width = widths[c];
    if (width < 64) {
      long base = width > 1 ? (1L << 63) - (1L << (width - 1)) : 1L << 63;
      long top = (1L << width) - 1;
      key = unsignedMin((Long.compareUnsigned(key, base) < 0 ? base : key) - base, top);
    }
    int span = spans[c];
    long low = lows[c];
    if (low != 0 || span < 64) {
      key = (Long.compareUnsigned(key, low) < 0 ? low : key) - low;
      if (span < 64) {
        key = unsignedMin(key, (1L << span) - 1);
      }
    }
    int b = mappingBits[c];
    return span >= b ? key >>> (span - b) : key << (b - span);
  }

  private static long unsignedMin(long a, long b) {
    return Long.compareUnsigned(a, b) <= 0 ? a : b;
  }

  /**
   * How many of ``flipped`` (ascending unsigned values with the top bit flipped, so signed order is
   * their order) are at most ``flippedKey``.  Branch-free halving: a rank search over thousands of
   * boundaries runs for every row, and mispredicted branches were most of its cost.
   */
  private static int countAtMost(long[] flipped, long flippedKey) {
    int n = flipped.length;
    if (n == 0) {
      return 0;
    }
    int base = 0;
    while (n > 1) {
      int half = n >>> 1;
      base = flipped[base + half - 1] <= flippedKey ? base + half : base;
      n -= half;
    }
    return base + (flipped[base] <= flippedKey ? 1 : 0);
  }

  /** How many of the ascending unsigned ``values`` are below ``key`` (or at most ``key``). */
  private static int countBelow(long[] values, long key, boolean orEqual) {
    int lo = 0;
    int hi = values.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int order = Long.compareUnsigned(values[mid], key);
      if (order < 0 || (orEqual && order == 0)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  // --- curves (zskip.curves.interleave, zskip.curves.hilbert) ------------------------------------

  /** Z-order: bit i of column c (of d) goes to bit i * d + d - 1 - c. */
  private long interleave(long[] ranks) {
    long mask = bits < 64 ? (1L << bits) - 1 : -1L;
    long key = 0L;
    for (int c = 0; c < dims; c++) {
      long r = ranks[c] & mask;
      int offset = dims - 1 - c;
      for (int i = 0; i < bits; i++) {
        key |= ((r >>> i) & 1L) << (i * dims + offset);
      }
    }
    return key;
  }

  /** A weighted Z curve: each key bit from the top, from the column and bit the order names. */
  private long interleaveWeighted(long[] ranks) {
    int total = zColumn.length;
    long key = 0L;
    for (int p = 0; p < total; p++) {
      key |= ((ranks[zColumn[p]] >>> zShift[p]) & 1L) << (total - 1 - p);
    }
    return key;
  }

  /** Skilling's AxesToTranspose, in place; the same branch-free steps as hilbert_transpose. */
  private long[] transpose(long[] x) {
    for (int level = bits - 1; level > 0; level--) {
      long low = (1L << level) - 1;
      for (int i = 0; i < dims; i++) {
        long high = 0L - ((x[i] >>> level) & 1L);
        if (i == 0) {
          x[0] ^= low & high;
          continue;
        }
        long t = (x[0] ^ x[i]) & low;
        long keep = ~high;
        x[0] ^= (low & high) | (t & keep);
        x[i] ^= t & keep;
      }
    }
    for (int i = 1; i < dims; i++) {
      x[i] ^= x[i - 1];
    }
    long t = 0L;
    for (int level = bits - 1; level > 0; level--) {
      long high = 0L - ((x[dims - 1] >>> level) & 1L);
      t ^= ((1L << level) - 1) & high;
    }
    for (int i = 0; i < dims; i++) {
      x[i] ^= t;
    }
    return x;
  }

  // --- the UDFs ------------------------------------------------------------------------------------

  /** struct of carriers -> signed curve key (the unsigned key with its top bit flipped: same order). */
  public static final class Key implements UDF1<Row, Long> {
    private static final long serialVersionUID = 1L;
    private final CurveKeys keys;

    public Key(byte[] payload) {
      keys = new CurveKeys(payload);
    }

    @Override
    public Long call(Row row) {
      return keys.key(row) ^ Long.MIN_VALUE;
    }
  }

  /** (struct of carriers, row hash) -> struct(key: signed curve key, token: the file's token). */
  public static final class Route implements UDF2<Row, Long, Row> {
    private static final long serialVersionUID = 1L;
    private final CurveKeys keys;

    public Route(byte[] payload) {
      keys = new CurveKeys(payload);
    }

    @Override
    public Row call(Row row, Long tie) {
      long key = keys.key(row);
      long token = keys.token(key, tie);
      return RowFactory.create(key ^ Long.MIN_VALUE, token);
    }
  }
}
