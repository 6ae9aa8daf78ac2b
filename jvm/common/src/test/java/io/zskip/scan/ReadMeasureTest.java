package io.zskip.scan;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ReadMeasureTest {
  @Test
  void aScanCountsWhenItsTableIsTheOneNamedWithOrWithoutItsCatalog() {
    assertTrue(ReadMeasure.named("lake.flights.flights_zskip", null)); // no name: every scan counts
    assertTrue(ReadMeasure.named("lake.flights.flights_zskip", "lake.flights.flights_zskip"));
    assertTrue(ReadMeasure.named("lake.flights.flights_zskip", "Flights.FLIGHTS_ZSKIP"));
    assertFalse(ReadMeasure.named("lake.flights.airports", "lake.flights.flights_zskip"));
    assertFalse(ReadMeasure.named("lake.flights.xflights_zskip", "flights_zskip")); // a whole part, not a suffix
  }
}
