package io.zskip.extensions;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DeprecatedNamesTest {
  @Test
  void theExtensionsOldNameIsTheExtension() throws Exception {
    Class<?> old = Class.forName("zskip.extensions.ZskipSparkSessionExtensions");
    assertTrue(ZskipSparkSessionExtensions.class.isAssignableFrom(old));
    assertTrue(old.getDeclaredConstructor().newInstance() instanceof ZskipSparkSessionExtensions);
    assertTrue(old.isAnnotationPresent(Deprecated.class));
  }
}
