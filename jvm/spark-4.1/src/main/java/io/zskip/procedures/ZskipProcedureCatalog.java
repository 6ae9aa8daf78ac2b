package io.zskip.procedures;

import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * zskip's procedures on Spark 4.1, through Spark's own {@code CALL}: with
 * {@code spark.sql.catalog.zskip=io.zskip.procedures.ZskipProcedureCatalog}, {@code CALL
 * zskip.system.optimize(table => 'lake.db.t', by => array('a', 'b'))} runs zskip.optimize in the
 * planner process zskip's extension hosts and returns its figures as a result set.
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
  public UnboundProcedure loadProcedure(Identifier ident) {
    return new Procedure(Procedures.find(SparkSession.active(), ident.namespace(), ident.name()));
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    if (namespace.length != 1 || !Procedures.NAMESPACE.equals(namespace[0])) {
      return new Identifier[0];
    }
    return Procedures.specs(SparkSession.active()).keySet().stream()
        .map(procedure -> Identifier.of(namespace, procedure))
        .toArray(Identifier[]::new);
  }

  /** One procedure, bound as declared: Spark orders the named arguments and fills the NULL defaults. */
  private record Procedure(Procedures.Spec spec) implements UnboundProcedure, BoundProcedure {
    @Override
    public String name() {
      return spec.name();
    }

    @Override
    public String description() {
      return spec.description();
    }

    @Override
    public BoundProcedure bind(StructType inputType) {
      return this;
    }

    @Override
    public ProcedureParameter[] parameters() {
      return spec.parameters().stream()
          .map(p -> {
            ProcedureParameter.Builder parameter = ProcedureParameter.in(p.name(), p.type());
            if (!p.doc().isEmpty()) {
              parameter.comment(p.doc());
            }
            return (p.required() ? parameter : parameter.defaultValue("NULL")).build();
          })
          .toArray(ProcedureParameter[]::new);
    }

    @Override
    public boolean isDeterministic() {
      return false;
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      InternalRow[] rows = Procedures.call(spec, input);
      StructType schema = spec.result();
      LocalScan result = new LocalScan() {
        @Override
        public InternalRow[] rows() {
          return rows;
        }

        @Override
        public StructType readSchema() {
          return schema;
        }
      };
      return Collections.<Scan>singletonList(result).iterator();
    }
  }
}
