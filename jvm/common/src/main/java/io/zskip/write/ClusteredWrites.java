package io.zskip.write;

import io.zskip.settings.ZskipSettings;
import io.zskip.bridge.Bridge;
import io.zskip.rule.Plans;
import io.zskip.spark.SparkLine;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ScalaUDF;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.RebalancePartitions;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.plans.logical.RowLevelWrite;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes into a table zskip clustered come out clustered: zskip's rule has the rows of an {@code INSERT},
 * an {@code INSERT OVERWRITE}, a DataFrame {@code writeTo} append or overwrite, and the rows {@code MERGE},
 * {@code UPDATE} and {@code DELETE} write (copy-on-write rewrites and merge-on-read inserts) sorted by
 * the table's curve key before Iceberg writes them, the key optimize sorts by ({@link WriteKeys}).
 *
 * <p>The rule runs after Spark's {@code V2Writes} added the distribution and ordering Iceberg asks for, so
 * the key goes after Iceberg's own order (partition, file, position): what Iceberg needs of the rows
 * stays true.  The table property {@code zskip.write.order} says how: {@code range} first distributes
 * rows by ranges of (Iceberg's order and) the key, so one write's files partition the curve: ranges of
 * the key alone are cut at the bounds optimize recorded ({@link WriteRanges}), a longer order goes
 * through Spark's range partitioning (which runs a job to sample the input); {@code sort} sorts each
 * write task's rows; {@code auto} (the default) is range where that needs no sampling (Iceberg asks no
 * order: an unpartitioned table, a copy-on-write rewrite) and sort elsewhere; {@code none} leaves writes
 * alone.  Writes that ask for no table ordering ({@code use-table-distribution-and-ordering=false}:
 * optimize's and Iceberg's own rewrites) are left alone.  A key that cannot be made leaves the write as
 * it was, with a warning once per table: a write never fails for zskip.
 */
public final class ClusteredWrites {
  static final String KEY_NAME = "zskip_curve_key";
  private static final Set<String> MODES = Set.of("auto", "sort", "range", "none");
  private static final Set<String> POSITIONS = Set.of("_file", "_pos"); // Iceberg's metadata columns of a row's place
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
  private static final Logger LOG = LoggerFactory.getLogger("zskip.ClusteredWrites");

  private ClusteredWrites() {}

  /** {@code plan} with its write's rows in curve-key order, when it writes a table zskip clustered; else {@code plan}. */
  public static LogicalPlan order(SparkSession session, LogicalPlan plan) {
    SparkTable target;
    LogicalPlan query;
    if (plan instanceof V2WriteCommand write && !asksNoOrdering(write)) {
      target = target(write instanceof RowLevelWrite rowLevel ? rowLevel.originalTable() : write.table());
      query = write.query();
    } else if (plan instanceof WriteToDataSourceV2 stream && stream.relation().isDefined()) { // a streaming micro-batch
      target = target(stream.relation().get());
      query = stream.query();
    } else {
      return plan;
    }
    if (target == null) {
      return plan;
    }
    org.apache.iceberg.Table table = target.table();
    Map<String, String> properties = table.properties();
    String store = properties.get(ZskipSettings.CLUSTERING_STORE.key());
    if (store == null) {
      return plan;
    }
    String mode = properties.getOrDefault(ZskipSettings.WRITE_ORDER.key(), "auto").trim().toLowerCase(Locale.ROOT);
    if (!MODES.contains(mode)) {
      warnOnce(table.name() + " " + mode, "zskip clusters writes into {} as by default: its property {}={} is not one "
          + "of auto, sort, range, none", table.name(), ZskipSettings.WRITE_ORDER.key(), mode);
      mode = "auto";
    }
    if (mode.equals("none") || keyed(query)) {
      return plan;
    }
    try {
      Optional<WriteKeys> keys = WriteKeys.of(table, store);
      if (keys.isEmpty()) {
        warnOnce(store, "writes into {} are not clustered: its clustering store {} records no write key (written by an "
            + "earlier zskip); the next optimize records one", table.name(), store);
        return plan;
      }
      String carriers = keys.get().carriersSql(table.schema());
      if (carriers == null) {
        warnOnce(store + " columns", "writes into {} are not clustered: a clustered column left its schema or "
            + "changed type since the layout was recorded; run optimize to record it again", table.name());
        return plan;
      }
      LogicalPlan ordered = ordered(session, query, keys.get(), carriers, mode, plan instanceof ReplaceData);
      if (plan instanceof V2WriteCommand write) {
        return (LogicalPlan) write.withNewQuery(ordered);
      }
      return plan.withNewChildren(Plans.scalaList(List.of(ordered)));
    } catch (Exception | LinkageError e) {
      warnOnce(store + " failed", "writes into {} are not clustered by zskip (they are written as Spark made them): {}",
          table.name(), String.valueOf(e).split("\n")[0]);
      return plan;
    }
  }

  /** The Iceberg table {@code relation} writes, or {@code null}. */
  private static SparkTable target(Object relation) {
    // the table as loaded when the plan was made: a streaming query's relation keeps the state it
    // started from, and every write goes to the table's current state whatever its relation pins
    if (relation instanceof DataSourceV2Relation v2 && v2.table().getClass() == SparkTable.class
        && Bridge.dataTable(v2.table())) {
      return (SparkTable) v2.table();
    }
    return null;
  }

  /** Whether the write's options ask for the rows as they come: zskip's and Iceberg's rewrites do. */
  private static boolean asksNoOrdering(V2WriteCommand write) {
    scala.collection.Map<String, String> options = null;
    if (write instanceof AppendData append) {
      options = append.writeOptions();
    } else if (write instanceof OverwriteByExpression overwrite) {
      options = overwrite.writeOptions();
    } else if (write instanceof OverwritePartitionsDynamic overwrite) {
      options = overwrite.writeOptions();
    }
    if (options == null) {
      return false;
    }
    scala.collection.Iterator<scala.Tuple2<String, String>> it = options.iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> option = it.next();
      String key = option._1().toLowerCase(Locale.ROOT);
      if ((key.equals("use-table-distribution-and-ordering") && option._2().trim().equalsIgnoreCase("false"))
          || key.equals("rewritten-file-scan-task-set-id")) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code query} is already in the curve key's order (the rule runs until the plan stops changing). */
  private static boolean keyed(LogicalPlan query) {
    if (!(query instanceof Sort sort)) {
      return false;
    }
    for (SortOrder order : Plans.javaList(sort.order())) {
      if (order.child() instanceof ScalaUDF udf && udf.udfName().isDefined() && KEY_NAME.equals(udf.udfName().get())) {
        return true;
      }
    }
    return false;
  }

  /**
   * {@code query} sorted by {@code keys}'s curve key after the order Iceberg asked for (if any), first
   * distributed by ranges of the key cut at the recorded bounds (modes auto and range, when Iceberg asks
   * no other order) or of that whole order (mode range otherwise).  The key's expression is resolved by
   * Spark's analyzer against a relation with the query's own attributes, then put over the query.
   */
  private static LogicalPlan ordered(
      SparkSession session, LogicalPlan query, WriteKeys keys, String carriers, String mode, boolean rewrite) {
    UserDefinedFunction udf = functions.udf(new CurveKeys.Key(keys.payload), DataTypes.LongType).withName(KEY_NAME);
    Column key = udf.apply(functions.expr(carriers));
    Dataset<Row> rows = SparkLine.ofRows(session, SparkLine.empty(query));
    boolean range = mode.equals("range"); // Spark's range partitioning is analysed only where it may be used
    Sort template = (Sort) SparkLine.execution(range ? rows.repartitionByRange(key).sortWithinPartitions(key)
        : rows.sortWithinPartitions(key)).analyzed();
    SortOrder keyOrder = Plans.javaList(template.order()).get(0);

    List<SortOrder> orders = new ArrayList<>();
    LogicalPlan below = query;
    if (query instanceof Sort iceberg && !iceberg.global()) { // Iceberg's order for the write
      for (SortOrder order : Plans.javaList(iceberg.order())) {
        // a copy-on-write rewrite keeps the rows of the files it rewrites in their old order (file,
        // position) only to keep a layout: the curve key gives them one
        if (!(rewrite && order.child() instanceof Attribute column && POSITIONS.contains(column.name()))) {
          orders.add(order);
        }
      }
      below = iceberg.child();
    }
    if (!mode.equals("sort")) {
      // Iceberg's distribution (hash or rebalance by partition, file) gives way to ranges
      RepartitionByExpression repartition = range ? (RepartitionByExpression) template.child() : null;
      List<Expression> distributed = List.of();
      LogicalPlan undistributed = below;
      if (below instanceof RepartitionByExpression distribution) {
        distributed = Plans.javaList(distribution.partitionExpressions());
        repartition = distribution;
        undistributed = distribution.child();
      } else if (below instanceof RebalancePartitions rebalance) {
        distributed = Plans.javaList(rebalance.partitionExpressions());
        undistributed = rebalance.child();
      }
      if (orders.isEmpty() && onlyPositions(distributed, rewrite) && keys.rangeBounds.length > 0) {
        // ranges of the key alone: cut at the recorded bounds, with no sampling job
        RepartitionByExpression byBounds = byRecordedRanges(session, rows, keys, carriers);
        if (byBounds != null) {
          orders.add(keyOrder);
          LogicalPlan distributedByBounds = copy(byBounds, byBounds.partitionExpressions(), undistributed);
          return copy(template, Plans.scalaList(orders), distributedByBounds);
        }
      }
      if (range) { // Spark's range partitioning, over Iceberg's order (or distribution) and the key
        if (orders.isEmpty()) {
          for (Expression expression : distributed) {
            orders.add(expression instanceof SortOrder order ? order : (SortOrder) copy(keyOrder, expression));
          }
        }
        orders.add(keyOrder);
        List<Expression> ranges = new ArrayList<>(orders);
        return copy(template, Plans.scalaList(orders), copy(repartition, Plans.scalaList(ranges), undistributed));
      }
    }
    // sort (and auto where Iceberg asks an order): Iceberg's distribution stays, each task sorts
    orders.add(keyOrder);
    return copy(template, Plans.scalaList(orders), below);
  }

  /**
   * A hash repartition of {@code rows} that sends each range of the curve key between the recorded
   * bounds to a partition in key order ({@link WriteRanges}); {@code null} if Spark would not make it
   * with the partition count the ranges were mapped to.
   */
  private static RepartitionByExpression byRecordedRanges(
      SparkSession session, Dataset<Row> rows, WriteKeys keys, String carriers) {
    int partitions = session.sessionState().conf().numShufflePartitions();
    UserDefinedFunction range = functions.udf(new WriteRanges(keys.payload, keys.rangeBounds, partitions),
        DataTypes.IntegerType).withName(WriteRanges.NAME);
    LogicalPlan made = SparkLine.execution(rows.repartition(range.apply(functions.expr(carriers)))).analyzed();
    if (made instanceof RepartitionByExpression repartition && repartition.optNumPartitions().isEmpty()
        && repartition.numPartitions() == partitions && repartition.partitioning() instanceof HashPartitioning) {
      return repartition;
    }
    return null;
  }

  /** Whether Iceberg's distribution is only by the place of the rows a copy-on-write rewrite rewrites. */
  private static boolean onlyPositions(List<Expression> distributed, boolean rewrite) {
    for (Expression expression : distributed) {
      if (!(rewrite && expression instanceof Attribute column && POSITIONS.contains(column.name()))) {
        return false;
      }
    }
    return true;
  }

  /** {@code order} (ascending, as the key's) of {@code expression} instead. */
  private static Expression copy(SortOrder order, Expression expression) {
    Object[] args = new Object[order.productArity()];
    for (int i = 0; i < args.length; i++) {
      args[i] = i == 0 ? expression : order.productElement(i);
    }
    return (Expression) order.makeCopy(args);
  }

  /** {@code node} (a Sort or a RepartitionByExpression) with its first field and its child replaced. */
  private static LogicalPlan copy(LogicalPlan node, Object first, LogicalPlan child) {
    Object[] args = new Object[node.productArity()];
    for (int i = 0; i < args.length; i++) {
      Object arg = node.productElement(i);
      args[i] = i == 0 ? first : arg instanceof LogicalPlan ? child : arg;
    }
    return (LogicalPlan) node.makeCopy(args);
  }

  private static void warnOnce(String key, String message, Object... arguments) {
    if (WARNED.add(key)) {
      LOG.warn(message, arguments);
    }
  }
}
