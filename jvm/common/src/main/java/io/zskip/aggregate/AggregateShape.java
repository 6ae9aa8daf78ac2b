package io.zskip.aggregate;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.filter.ExpressionJson;
import io.zskip.iceberg.Members;
import io.zskip.rule.Plans;
import io.zskip.spark.SparkLine;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.SparkV2Filters;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Multiply;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;

/**
 * An aggregate over one filtered scan of a zskip table that the planner may answer in part: row groups
 * whose statistics prove every row matches the filter give their counts, minima, maxima and (from
 * zskip's sums index) sums (grouped by columns constant in them) without being read, and the scan reads the rest.
 *
 * <p>The shape: {@code Aggregate(grouping columns, expressions over count(*), count(col), min(col),
 * max(col), sum(col), sum(col * col) of whole numbers, avg(col))} over Projects of columns, at most one Filter, and
 * the scan; every condition of the Filter
 * is one the scan was given (so the scan's pushed filters are the whole filter).  Anything else (DISTINCT,
 * FILTER (WHERE ...), expressions as arguments or as grouping keys, other functions) is left as Spark
 * planned it.
 *
 * <p>The answer becomes {@code Aggregate(grouping, merged) <- Union(Aggregate(grouping, partials) <- the
 * scan's plan reading what is left, LocalRelation(the answered partials))}: a count is the sum of partial
 * counts, a minimum the minimum of partial minima, so Spark's own aggregation decides NULLs and empty
 * inputs as it does for any aggregate.
 */
public final class AggregateShape {
  private final Aggregate aggregate;
  private final Filter filter; // between the aggregate and the scan, or null
  private Boolean filterWhole; // filterWhole(), once worked out
  private final DataSourceV2ScanRelation relation;
  private final List<Attribute> groups;
  private final List<AggregateFunction> functions; // the distinct functions, each answered once
  private final List<Partial> partials = new ArrayList<>(); // theirs, function after function
  private final List<Integer> firstPartial = new ArrayList<>(); // of each function, its first partial's place

  private AggregateShape(Aggregate aggregate, Filter filter, DataSourceV2ScanRelation relation, List<Attribute> groups,
      List<AggregateFunction> functions) {
    this.aggregate = aggregate;
    this.filter = filter;
    this.relation = relation;
    this.groups = groups;
    this.functions = functions;
    for (AggregateFunction function : functions) {
      firstPartial.add(partials.size());
      partials.addAll(partialsOf(function));
    }
  }

  public Aggregate aggregate() {
    return aggregate;
  }

  /** The aggregates of {@code plan} over one of {@code candidates} zskip may answer, by the scan they read. */
  public static Map<DataSourceV2ScanRelation, AggregateShape> find(LogicalPlan plan, List<DataSourceV2ScanRelation> candidates) {
    Map<DataSourceV2ScanRelation, AggregateShape> found = new IdentityHashMap<>();
    Set<DataSourceV2ScanRelation> wanted = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    wanted.addAll(candidates);
    List<LogicalPlan> pending = new ArrayList<>(List.of(plan));
    while (!pending.isEmpty()) {
      LogicalPlan node = pending.remove(pending.size() - 1);
      if (node instanceof Aggregate aggregate) {
        AggregateShape shape = of(aggregate, wanted);
        if (shape != null && !found.containsKey(shape.relation)) {
          found.put(shape.relation, shape);
        }
      }
      pending.addAll(Plans.children(node));
    }
    return found;
  }

  static AggregateShape of(Aggregate aggregate, Set<DataSourceV2ScanRelation> candidates) {
    LogicalPlan child = skipProjects(aggregate.child());
    Filter filter = null;
    if (child instanceof Filter f) {
      filter = f;
      child = skipProjects(f.child());
    }
    if (!(child instanceof DataSourceV2ScanRelation relation) || !candidates.contains(relation)) {
      return null;
    }
    Set<Long> columns = new HashSet<>(Plans.exprIds(relation.output()));
    List<Attribute> groups = new ArrayList<>();
    for (Expression grouping : Plans.javaList(aggregate.groupingExpressions())) {
      if (!(grouping instanceof Attribute attribute) || !columns.contains(attribute.exprId().id())
          || !groupable(attribute.dataType())) {
        return null;
      }
      groups.add(attribute);
    }
    List<AggregateFunction> functions = new ArrayList<>();
    for (NamedExpression named : Plans.javaList(aggregate.aggregateExpressions())) {
      if (!collect((Expression) (Object) named, columns, functions)) {
        return null;
      }
    }
    if (functions.isEmpty()) {
      return null;
    }
    return new AggregateShape(aggregate, filter, relation, groups, functions);
  }

  /**
   * Whether the scan was given every condition of the aggregate's filter (its pushed filters are then
   * the whole filter), worked out once and only when asked: a plan the rule answers from memory, or
   * decides alone, never converts its filter.
   */
  public boolean filterWhole() {
    if (filterWhole == null) {
      try {
        filterWhole = filter == null || wholeFilterPushed(filter, relation);
      } catch (ReflectiveOperationException | RuntimeException e) {
        filterWhole = false;
      }
    }
    return filterWhole;
  }

  private static LogicalPlan skipProjects(LogicalPlan plan) {
    while (plan instanceof Project project
        && Plans.javaList(project.projectList()).stream().allMatch(e -> e instanceof Attribute)) {
      plan = project.child();
    }
    return plan;
  }

  /** Whether every condition of {@code filter} is among the filters pushed to the scan (compared as Iceberg prints them). */
  private static boolean wholeFilterPushed(Filter filter, DataSourceV2ScanRelation relation)
      throws ReflectiveOperationException {
    if (!filter.condition().deterministic()) {
      return false;
    }
    Set<String> pushed = new HashSet<>();
    for (org.apache.iceberg.expressions.Expression expression : Members.filters(relation.scan())) {
      pushed.add(expression.toString());
    }
    List<Expression> conditions = new ArrayList<>();
    Plans.splitAnd(filter.condition(), conditions);
    for (Expression condition : conditions) {
      scala.Option<Predicate> translated = DataSourceV2Strategy$.MODULE$.translateFilterV2(condition);
      if (translated.isEmpty()) {
        return false;
      }
      org.apache.iceberg.expressions.Expression converted = SparkV2Filters.convert(translated.get());
      if (converted == null || !pushed.contains(converted.toString())) {
        return false;
      }
    }
    return true;
  }

  /** Adds the aggregate functions of {@code expression} to {@code functions}; whether every one is answerable. */
  private static boolean collect(Expression expression, Set<Long> columns, List<AggregateFunction> functions) {
    if (expression instanceof AggregateExpression aggregate) {
      if (aggregate.isDistinct() || aggregate.filter().isDefined() || aggregate.mode() != Complete$.MODULE$
          || !answerable(aggregate.aggregateFunction(), columns)) {
        return false;
      }
      if (indexOf(functions, aggregate.aggregateFunction()) < 0) {
        functions.add(aggregate.aggregateFunction());
      }
      return true;
    }
    for (Expression child : Plans.javaList(expression.children())) {
      if (!collect(child, columns, functions)) {
        return false;
      }
    }
    return true;
  }

  private static boolean answerable(AggregateFunction function, Set<Long> columns) {
    List<Expression> arguments = Plans.javaList(function.children());
    if (function instanceof Count) {
      if (arguments.stream().allMatch(a -> a instanceof Literal literal && literal.value() != null)) {
        return true; // count(*), count(1)
      }
      return arguments.size() == 1 && column(arguments.get(0), columns);
    }
    if (function instanceof Min || function instanceof Max) {
      return column(arguments.get(0), columns) && bounded(arguments.get(0).dataType());
    }
    if (function instanceof Sum) {
      if (arguments.get(0) instanceof Multiply product) {
        return factor(product.left(), columns) != null && factor(product.right(), columns) != null;
      }
      return column(arguments.get(0), columns) && summable(arguments.get(0).dataType());
    }
    if (function instanceof Average) { // over a decimal, Average's own arithmetic would need copying
      DataType type = arguments.get(0).dataType();
      return column(arguments.get(0), columns) && summable(type) && !(type instanceof DecimalType);
    }
    return false;
  }

  /** Types zskip's sums index sums: numbers and decimals. */
  static boolean summable(DataType type) {
    return type.equals(DataTypes.ByteType) || type.equals(DataTypes.ShortType) || type.equals(DataTypes.IntegerType)
        || type.equals(DataTypes.LongType) || type.equals(DataTypes.FloatType) || type.equals(DataTypes.DoubleType)
        || type instanceof DecimalType;
  }

  /**
   * What the planner answers for {@code function}, one or two partial functions over the same column:
   * a count, minimum, maximum or sum is its own partial; an average is the sum of its values as doubles
   * and their count, as Spark's own average keeps them.
   */
  private static List<Partial> partialsOf(AggregateFunction function) {
    Expression argument = function.children().head();
    Attribute column = argument instanceof Attribute attribute ? attribute : null;
    if (function instanceof Count) {
      return List.of(new Partial("count", function, column));
    }
    if (function instanceof Min || function instanceof Max) {
      return List.of(new Partial(function instanceof Min ? "min" : "max", function, column));
    }
    if (function instanceof Sum) {
      if (argument instanceof Multiply product) { // answered where one factor is one value in a row group
        return List.of(new Partial("sum_product", function, factor(product.left(), null), factor(product.right(), null),
            product.dataType()));
      }
      return List.of(new Partial("sum", function, column));
    }
    // Average
    Sum sum = new Sum(new Cast(column, DataTypes.DoubleType, scala.Option.empty()));
    Count count = new Count(Plans.scalaList(List.of(column)));
    return List.of(new Partial("sum", sum, column), new Partial("count", count, column));
  }

  /**
   * One partial function: its kind as the planner names it, the function, its column ({@code null}:
   * count(*)); for the sum of a product of two columns, the other column and the product's type.
   */
  private record Partial(String fn, AggregateFunction function, Attribute column, Attribute other, DataType product) {
    Partial(String fn, AggregateFunction function, Attribute column) {
      this(fn, function, column, null, null);
    }
  }

  /**
   * The column a factor of a summed product is (itself, or widened to another whole-number type, which
   * keeps its values), or {@code null}: not a whole-number column of the scan ({@code columns}
   * {@code null}: any column).
   */
  private static Attribute factor(Expression expression, Set<Long> columns) {
    Expression inner = expression instanceof Cast cast && integral(cast.dataType()) ? cast.child() : expression;
    if (!(inner instanceof Attribute attribute) || !integral(attribute.dataType())
        || (columns != null && !columns.contains(attribute.exprId().id()))) {
      return null;
    }
    return attribute;
  }

  private static boolean integral(DataType type) {
    return type.equals(DataTypes.ByteType) || type.equals(DataTypes.ShortType) || type.equals(DataTypes.IntegerType)
        || type.equals(DataTypes.LongType);
  }

  private static boolean column(Expression expression, Set<Long> columns) {
    return expression instanceof Attribute attribute && columns.contains(attribute.exprId().id());
  }

  /** Types whose row-group minimum and maximum the footers hold exactly (not strings, which may be cut, nor floats, whose NaN they leave out). */
  static boolean bounded(DataType type) {
    return type.equals(DataTypes.ByteType) || type.equals(DataTypes.ShortType) || type.equals(DataTypes.IntegerType)
        || type.equals(DataTypes.LongType) || type.equals(DataTypes.DateType) || type.equals(DataTypes.TimestampType)
        || type.equals(DataTypes.TimestampNTZType) || type.equals(DataTypes.BooleanType) || type instanceof DecimalType;
  }

  /** Types a row group's one value of is known from min = max (strings too: a cut bound is never equal to the other). */
  static boolean groupable(DataType type) {
    return bounded(type) || type.equals(DataTypes.StringType);
  }

  private static int indexOf(List<AggregateFunction> functions, AggregateFunction function) {
    for (int i = 0; i < functions.size(); i++) {
      if (functions.get(i).semanticEquals(function)) {
        return i;
      }
    }
    return -1;
  }

  /**
   * The request the planner answers, as the {@code "aggregate"} field of the scan's description: the
   * grouping columns and the functions' columns by field id with their Spark types, and the tasks whose
   * rows delete files change (never answered from statistics).
   */
  public void write(JsonGenerator json, Table table, List<FileScanTask> tasks) throws IOException {
    json.writeObjectFieldStart("aggregate");
    json.writeArrayFieldStart("group");
    for (Attribute group : groups) {
      writeColumn(json, table, group);
    }
    json.writeEndArray();
    json.writeArrayFieldStart("items");
    for (Partial partial : partials) {
      json.writeStartObject();
      json.writeStringField("fn", partial.fn());
      json.writeStringField("type", partial.function().dataType().catalogString());
      if (partial.column() != null) {
        json.writeFieldName("column");
        writeColumn(json, table, partial.column());
      }
      if (partial.other() != null) {
        json.writeFieldName("other");
        writeColumn(json, table, partial.other());
        json.writeStringField("product_type", partial.product().catalogString());
      }
      json.writeEndObject();
    }
    json.writeEndArray();
    json.writeArrayFieldStart("deleted");
    for (int i = 0; i < tasks.size(); i++) {
      if (!tasks.get(i).deletes().isEmpty()) {
        json.writeNumber(i);
      }
    }
    json.writeEndArray();
    json.writeEndObject();
  }

  /**
   * Whether the planner may answer some row group of this aggregate in a table state of {@code schema}
   * whose columns with a sums index are {@code summed} ({@code null}: not known): not when a sum's
   * column has none, since every partial must be answered for a row group to be, nor when the scan was
   * not given the whole filter (checked last: it converts the filter).
   */
  public boolean mayBeAnswered(org.apache.iceberg.Schema schema, Set<Integer> summed) {
    if (summed != null) {
      for (Partial partial : partials) {
        if (partial.fn().equals("sum") && !summed(schema, summed, partial.column())) {
          return false;
        }
        if (partial.fn().equals("sum_product") && !summed(schema, summed, partial.column())
            && !summed(schema, summed, partial.other())) {
          return false;
        }
      }
    }
    return filterWhole();
  }

  private static boolean summed(org.apache.iceberg.Schema schema, Set<Integer> summed, Attribute column) {
    Types.NestedField field = ExpressionJson.resolveField(schema, column.name());
    return field != null && summed.contains(field.fieldId());
  }

  /** What the planner's answer depends on beyond the scan: the grouping columns and the partial functions, as text. */
  public String signature() {
    StringBuilder text = new StringBuilder("aggregate");
    for (Attribute group : groups) {
      text.append('\u0001').append(group.name()).append(':').append(group.dataType().catalogString());
    }
    for (Partial partial : partials) {
      text.append('\u0001').append(partial.fn()).append('(')
          .append(partial.column() == null ? "*" : partial.column().name())
          .append(partial.other() == null ? "" : "*" + partial.other().name()).append("):")
          .append(partial.function().dataType().catalogString());
    }
    return text.toString();
  }

  private static void writeColumn(JsonGenerator json, Table table, Attribute attribute) throws IOException {
    Types.NestedField field = ExpressionJson.resolveField(table.schema(), attribute.name());
    json.writeStartObject();
    if (field == null || table.schema().asStruct().field(field.fieldId()) == null) {
      json.writeNullField("field_id"); // not a top-level column of the table: nothing is answered
    } else {
      json.writeNumberField("field_id", field.fieldId());
    }
    json.writeStringField("type", attribute.dataType().catalogString());
    json.writeEndObject();
  }

  /**
   * The aggregate with the planner's {@code answer} ({"rows": [[group values..., partials...], ...]})
   * merged in: {@code child} is the aggregate's child as it now reads (the scan reading what is left).
   */
  public LogicalPlan rewrite(JsonNode answer, LogicalPlan child) {
    List<Expression> grouping = new ArrayList<>(groups);
    List<NamedExpression> partialColumns = new ArrayList<>();
    for (Attribute group : groups) {
      partialColumns.add((NamedExpression) (Object) group);
    }
    for (int i = 0; i < partials.size(); i++) {
      partialColumns.add((NamedExpression) (Object) alias(partials.get(i).function().toAggregateExpression(), "zskip_partial_" + i));
    }
    LogicalPlan partial = SparkLine.aggregate(grouping, partialColumns, child);
    List<Attribute> partialOutput = Plans.javaList(partial.output());
    List<Attribute> answeredOutput = new ArrayList<>();
    for (Attribute attribute : partialOutput) {
      answeredOutput.add(attribute.newInstance());
    }
    LogicalPlan answered = SparkLine.localRelation(answeredOutput, PartialRows.of(answer.get("rows"), partialOutput));
    LogicalPlan union = new Union(Plans.scalaList(List.of(partial, answered)), false, false);
    List<NamedExpression> merged = new ArrayList<>();
    for (NamedExpression named : Plans.javaList(aggregate.aggregateExpressions())) {
      merged.add((NamedExpression) (Object) merge((Expression) (Object) named, partialOutput));
    }
    return SparkLine.aggregate(Plans.javaList(aggregate.groupingExpressions()), merged, union);
  }

  /** {@code expression} with each aggregate function computed from the partial columns instead. */
  private Expression merge(Expression expression, List<Attribute> partialOutput) {
    if (expression instanceof AggregateExpression aggregated) {
      AggregateFunction function = aggregated.aggregateFunction();
      int first = groups.size() + firstPartial.get(indexOf(functions, function));
      Attribute partial = partialOutput.get(first);
      if (function instanceof Count) { // a count is never NULL: 0 where no partial is (none is, in fact)
        return countOf(partial);
      }
      if (function instanceof Min || function instanceof Max) {
        return (function instanceof Min ? new Min(partial) : new Max(partial)).toAggregateExpression();
      }
      if (function instanceof Sum) { // a sum of sums; of decimals, in the precision of the sum asked for
        Expression sum = new Sum(partial).toAggregateExpression();
        return sum.dataType().equals(function.dataType()) ? sum : new Cast(sum, function.dataType(), scala.Option.empty());
      }
      // Average: the sum of the values over their count, NULL where there are none (as Spark's own)
      Expression count = countOf(partialOutput.get(first + 1));
      return new If(
          new EqualTo(count, Literal.create(0L, DataTypes.LongType)),
          Literal.create(null, DataTypes.DoubleType),
          new Divide(new Sum(partial).toAggregateExpression(), new Cast(count, DataTypes.DoubleType, scala.Option.empty())));
    }
    List<Expression> children = Plans.javaList(expression.children());
    List<Expression> updated = new ArrayList<>();
    boolean changed = false;
    for (Expression child : children) {
      Expression after = merge(child, partialOutput);
      changed |= after != child;
      updated.add(after);
    }
    return changed ? expression.withNewChildren(Plans.scalaList(updated)) : expression;
  }

  private static Expression countOf(Attribute partial) {
    return new Coalesce(Plans.scalaList(List.of(new Sum(partial).toAggregateExpression(), Literal.create(0L, DataTypes.LongType))));
  }

  private static Alias alias(Expression child, String name) {
    return new Alias(child, name, org.apache.spark.sql.catalyst.expressions.NamedExpression$.MODULE$.newExprId(),
        Plans.scalaList(List.of()), scala.Option.empty(), Plans.scalaList(List.of()));
  }
}
