package io.zskip.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CurveKeysTest {
  static int compare(long a, long b) {
    return Long.compareUnsigned(a, b);
  }

  @Test
  void orderKeysOfDoublesFollowTheirOrderWithNaNOnTop() {
    double[] ascending = {Double.NEGATIVE_INFINITY, -1e300, -1.5, -Double.MIN_VALUE, 0.0, Double.MIN_VALUE, 2.5,
        Double.POSITIVE_INFINITY};
    for (int i = 0; i + 1 < ascending.length; i++) {
      long low = CurveKeys.orderKey(CurveKeys.DOUBLE, ascending[i]);
      long high = CurveKeys.orderKey(CurveKeys.DOUBLE, ascending[i + 1]);
      assertTrue(compare(low, high) < 0, ascending[i] + " < " + ascending[i + 1]);
    }
    assertEquals(CurveKeys.orderKey(CurveKeys.DOUBLE, 0.0), CurveKeys.orderKey(CurveKeys.DOUBLE, -0.0));
    long nan = CurveKeys.orderKey(CurveKeys.DOUBLE, Double.NaN);
    assertTrue(compare(CurveKeys.orderKey(CurveKeys.DOUBLE, Double.POSITIVE_INFINITY), nan) < 0);
  }

  @Test
  void orderKeysOfLongsAndBytesFollowTheirOrder() {
    assertTrue(compare(CurveKeys.orderKey(CurveKeys.LONG, Long.MIN_VALUE), CurveKeys.orderKey(CurveKeys.LONG, -1L)) < 0);
    assertTrue(compare(CurveKeys.orderKey(CurveKeys.LONG, -1L), CurveKeys.orderKey(CurveKeys.LONG, 0L)) < 0);
    assertTrue(compare(CurveKeys.orderKey(CurveKeys.BYTES, "ab".getBytes()), CurveKeys.orderKey(CurveKeys.BYTES, "b".getBytes())) < 0);
    assertEquals(0L, CurveKeys.orderKey(CurveKeys.LONG, null)); // NULL takes the lowest key
  }
}
