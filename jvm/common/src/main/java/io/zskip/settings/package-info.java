/**
 * zskip's settings and table properties, declared once for the JVM side ({@link
 * io.zskip.settings.ZskipSettings}), as Python's {@code zskip.settings} declares them for the other.
 */
package io.zskip.settings;
