package io.zskip.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ZskipSettingsTest {
  @Test
  void aFlagReadsAsPythonReadsIt() { // tests/test_settings.py checks the same table on the Python side
    assertEquals(true, ZskipSettings.flag(null, true));
    assertEquals(false, ZskipSettings.flag("FALSE", true));
    assertEquals(false, ZskipSettings.flag(" off ", true));
    assertEquals(true, ZskipSettings.flag("1", false));
    assertEquals(false, ZskipSettings.flag("tru", false));
  }

  @Test
  void everyKeyIsDeclaredOnceAndSparkSettingsHaveThePrefix() {
    Set<String> keys = new HashSet<>();
    ZskipSettings.SETTINGS.forEach(s -> {
      assertTrue(keys.add(s.key()), s.key());
      assertTrue(s.key().startsWith(ZskipSettings.PREFIX), s.key());
    });
    ZskipSettings.ENVIRONMENT.forEach(s -> assertTrue(keys.add(s.key()), s.key()));
    ZskipSettings.PROPERTIES.forEach(p -> assertTrue(keys.add(p.key()), p.key()));
  }

  @Test
  void theJsonQuotesWhatItHolds() {
    String json = ZskipSettings.json();
    assertTrue(json.startsWith("{\"settings\": [{\"key\": \"spark.zskip.enabled\""), json);
    assertTrue(json.contains("\"set_by\": \"index builds\""), json);
  }
}
