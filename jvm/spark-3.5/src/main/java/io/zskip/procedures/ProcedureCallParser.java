package io.zskip.procedures;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.CallArgument;
import org.apache.spark.sql.catalyst.plans.logical.CallStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.NamedArgument;
import org.apache.spark.sql.catalyst.plans.logical.PositionalArgument;
import org.apache.spark.sql.internal.VariableSubstitution;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/**
 * {@code CALL} for zskip's procedures on Spark 3.5, whose grammar has none: Iceberg's SQL extensions
 * parse a {@code CALL} only when it names one of Iceberg's own procedures, and resolve and run any
 * {@link CallStatement} whose catalog is a procedure catalog.  This parser reads a {@code CALL} whose
 * catalog is configured as {@link ZskipProcedureCatalog} into that statement (its name and each argument
 * read by Spark's own parser) and hands every other statement on unchanged; Iceberg then checks the
 * arguments against the procedure's parameters, casts them and runs it, as for its own procedures.
 */
public final class ProcedureCallParser implements ParserInterface {
  private final SparkSession session;
  private final ParserInterface delegate;

  public ProcedureCallParser(SparkSession session, ParserInterface delegate) {
    this.session = session;
    this.delegate = delegate;
  }

  @Override
  public LogicalPlan parsePlan(String sql) throws ParseException {
    if (!CallText.isCall(sql)) {
      return delegate.parsePlan(sql);
    }
    String text = new VariableSubstitution().substitute(sql);
    CallText call = CallText.parse(text);
    Seq<String> name = delegate.parseMultipartIdentifier(call.name());
    if (name.isEmpty() || !isZskipCatalog(name.head())) {
      return delegate.parsePlan(sql);
    }
    List<CallArgument> arguments = new ArrayList<>();
    for (CallText.Argument argument : call.arguments()) {
      Expression value = delegate.parseExpression(argument.expression());
      arguments.add(argument.name() == null ? new PositionalArgument(value) : new NamedArgument(argument.name(), value));
    }
    return new CallStatement(name, JavaConverters.asScalaBuffer(arguments).toSeq());
  }

  /** Whether {@code catalog} is configured as zskip's procedure catalog (under any name). */
  private boolean isZskipCatalog(String catalog) {
    String configured = session.sessionState().conf().getConfString("spark.sql.catalog." + catalog, "");
    String name = configured.trim();
    return ZskipProcedureCatalog.class.getName().equals(name) || ZskipProcedureCatalog.DEPRECATED_NAME.equals(name);
  }

  @Override
  public Expression parseExpression(String sql) throws ParseException {
    return delegate.parseExpression(sql);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
    return delegate.parseTableIdentifier(sql);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
    return delegate.parseFunctionIdentifier(sql);
  }

  @Override
  public Seq<String> parseMultipartIdentifier(String sql) throws ParseException {
    return delegate.parseMultipartIdentifier(sql);
  }

  @Override
  public LogicalPlan parseQuery(String sql) throws ParseException {
    return delegate.parseQuery(sql);
  }

  @Override
  public StructType parseTableSchema(String sql) throws ParseException {
    return delegate.parseTableSchema(sql);
  }

  @Override
  public DataType parseDataType(String sql) throws ParseException {
    return delegate.parseDataType(sql);
  }
}
