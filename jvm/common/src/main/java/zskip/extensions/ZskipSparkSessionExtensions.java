package zskip.extensions;

/**
 * The extension's name before 0.4: {@code spark.sql.extensions=...,zskip.extensions.ZskipSparkSessionExtensions}
 * keeps working for a release.
 *
 * @deprecated use {@link io.zskip.extensions.ZskipSparkSessionExtensions}; this name goes in 0.5.
 */
@Deprecated
public final class ZskipSparkSessionExtensions extends io.zskip.extensions.ZskipSparkSessionExtensions {
  private static final long serialVersionUID = 1L;

  public ZskipSparkSessionExtensions() {
    io.zskip.extensions.Deprecations.warn("zskip.extensions.ZskipSparkSessionExtensions",
        io.zskip.extensions.ZskipSparkSessionExtensions.class.getName());
  }
}
