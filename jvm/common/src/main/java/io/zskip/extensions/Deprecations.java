package io.zskip.extensions;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.LoggerFactory;

/** Old class names the application's configuration may still use: each is warned about once per JVM. */
public final class Deprecations {
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

  private Deprecations() {}

  /** Warns, once, that the configuration names {@code old}, which is now {@code current}. */
  public static void warn(String old, String current) {
    if (WARNED.add(old)) {
      LoggerFactory.getLogger("zskip").warn("{} is deprecated and goes in zskip 0.5: configure {} instead", old, current);
    }
  }
}
