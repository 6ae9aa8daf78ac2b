package io.zskip.procedures;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.iceberg.catalog.Procedure;
import org.apache.spark.sql.connector.iceberg.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.iceberg.catalog.ProcedureParameter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * zskip's procedures on Spark 3.5, through the {@code CALL} of Iceberg's SQL extensions (Spark 3.5 has
 * none of its own): with {@code spark.sql.catalog.zskip=io.zskip.procedures.ZskipProcedureCatalog},
 * {@code CALL zskip.system.optimize(table => 'lake.db.t', by => array('a', 'b'))} runs zskip.optimize
 * in the planner process zskip's extension hosts and returns its figures as a result set.
 */
public class ZskipProcedureCatalog implements ProcedureCatalog {
  /** The name of this class before 0.4 ({@code zskip.procedures.ZskipProcedureCatalog}), kept working for a release. */
  public static final String DEPRECATED_NAME = "zskip.procedures.ZskipProcedureCatalog";

  private String name = "zskip";

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    Procedures.checkDeclared(name, getClass()); // by the application's configuration, not a session's SET
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Procedure loadProcedure(Identifier ident) {
    return new Declared(Procedures.find(SparkSession.active(), ident.namespace(), ident.name()));
  }

  /** One procedure as declared: Iceberg's CALL orders the named arguments and leaves the others NULL. */
  private record Declared(Procedures.Spec spec) implements Procedure {
    @Override
    public ProcedureParameter[] parameters() {
      return spec.parameters().stream()
          .map(p -> p.required() ? ProcedureParameter.required(p.name(), p.type()) : ProcedureParameter.optional(p.name(), p.type()))
          .toArray(ProcedureParameter[]::new);
    }

    @Override
    public StructType outputType() {
      return spec.result();
    }

    @Override
    public InternalRow[] call(InternalRow args) {
      return Procedures.call(spec, args);
    }

    @Override
    public String description() {
      return spec.description();
    }
  }
}
