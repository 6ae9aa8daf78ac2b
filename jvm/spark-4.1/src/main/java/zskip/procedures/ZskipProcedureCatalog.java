package zskip.procedures;

/**
 * The procedure catalog's name before 0.4: {@code spark.sql.catalog.zskip=zskip.procedures.ZskipProcedureCatalog}
 * keeps working for a release.
 *
 * @deprecated use {@link io.zskip.procedures.ZskipProcedureCatalog}; this name goes in 0.5.
 */
@Deprecated
public final class ZskipProcedureCatalog extends io.zskip.procedures.ZskipProcedureCatalog {
  public ZskipProcedureCatalog() {
    io.zskip.extensions.Deprecations.warn(DEPRECATED_NAME, io.zskip.procedures.ZskipProcedureCatalog.class.getName());
  }
}
