package io.zskip.spark;

import io.zskip.scan.SnapshotFiles;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.source.SparkRewriteTable;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;

/**
 * What differs between the Spark lines zskip supports, for Spark 4.1 (Scala 2.13): Spark 4 splits the
 * session and the Dataset into an API and its classic (in-JVM) implementation, and zskip needs the
 * latter's query execution, session state and constructors.  Spark 3.5's module has a class of the same
 * name and methods.
 */
public final class SparkLine {
  /** The name of Iceberg's protected accessor for a batch query scan's pushed filters. */
  public static final String FILTERS = "filters";

  private SparkLine() {}

  static org.apache.spark.sql.classic.SparkSession classic(SparkSession session) {
    return (org.apache.spark.sql.classic.SparkSession) session;
  }

  public static QueryExecution execution(Dataset<?> frame) {
    return ((org.apache.spark.sql.classic.Dataset<?>) frame).queryExecution();
  }

  public static LogicalPlan parse(SparkSession session, String text) throws Exception {
    return classic(session).sessionState().sqlParser().parsePlan(text);
  }

  public static SQLConf conf(SparkSession session) {
    return classic(session).sessionState().conf();
  }

  public static Dataset<Row> ofRows(SparkSession session, LogicalPlan plan) {
    return org.apache.spark.sql.classic.Dataset.ofRows(classic(session), plan);
  }

  /** A DataFrame of {@code execution}, whose rows are {@code like}'s (its encoder serves). */
  public static Dataset<Row> withExecution(Dataset<Row> like, QueryExecution execution) {
    return new org.apache.spark.sql.classic.Dataset<>(execution, like.encoder());
  }

  /** An execution of {@code analysed} that Spark takes as analysed. */
  public static QueryExecution analysed(SparkSession session, LogicalPlan analysed) {
    return new Analysed(classic(session), analysed);
  }

  /** An execution of {@code staged} whose optimized and physical plans are {@code original}'s. */
  public static QueryExecution planned(SparkSession session, LogicalPlan staged, QueryExecution original) {
    return new Planned(classic(session), staged, original);
  }

  public static org.apache.spark.sql.ExperimentalMethods experimental(SparkSession session) {
    return classic(session).experimental();
  }

  /** {@code relation} reading {@code table} instead. */
  public static DataSourceV2Relation withTable(DataSourceV2Relation relation, org.apache.spark.sql.connector.catalog.Table table) {
    return new DataSourceV2Relation(
        table, relation.output(), relation.catalog(), relation.identifier(), relation.options(), relation.timeTravelSpec());
  }

  /** {@code relation} reading the task set {@code setId} staged for {@code table}: Iceberg's Spark 4 runtime reads one through a table of its own. */
  public static DataSourceV2Relation staged(DataSourceV2Relation relation, Table table, String setId) {
    return withTable(relation, new SparkRewriteTable(table, setId));
  }

  /** A relation of {@code output} holding {@code rows} (zskip's answers of an aggregate's row groups). */
  @SuppressWarnings("unchecked")
  public static LogicalPlan localRelation(
      java.util.List<Attribute> output, java.util.List<org.apache.spark.sql.catalyst.InternalRow> rows) {
    return new LocalRelation(io.zskip.rule.Plans.scalaList(output), io.zskip.rule.Plans.scalaList(rows), false,
        LocalRelation.$lessinit$greater$default$4());
  }

  /** {@code Aggregate(grouping, aggregates, child)}, without a hint. */
  public static LogicalPlan aggregate(
      java.util.List<org.apache.spark.sql.catalyst.expressions.Expression> grouping,
      java.util.List<org.apache.spark.sql.catalyst.expressions.NamedExpression> aggregates,
      LogicalPlan child) {
    return new org.apache.spark.sql.catalyst.plans.logical.Aggregate(
        io.zskip.rule.Plans.scalaList(grouping), io.zskip.rule.Plans.scalaList(aggregates), child, scala.Option.empty());
  }

  /** A relation of {@code relation}'s columns (the same attributes) holding no rows. */
  @SuppressWarnings("unchecked")
  public static LogicalPlan empty(LogicalPlan relation) {
    scala.collection.immutable.Seq<Attribute> output = (scala.collection.immutable.Seq<Attribute>) (Object) relation.output();
    return new LocalRelation(output, scala.collection.immutable.List$.MODULE$.empty(), false,
        LocalRelation.$lessinit$greater$default$4());
  }

  /**
   * {@code original} reading through {@link SnapshotFiles}, or {@code null}: Spark 4.1 plans the scans of
   * the table its catalog loads again, not of the table put in the analysed plan, so a listed table would
   * never be asked for a scan, and Iceberg plans its own files.
   */
  public static SparkTable listed(SparkTable original) {
    return null;
  }

  /**
   * What this line's sessions need from zskip's extension beyond its optimizer rule: nothing on Spark
   * 4.1, whose own grammar parses {@code CALL} for any procedure catalog.
   */
  public static void extend(org.apache.spark.sql.SparkSessionExtensions extensions) {}

  /** {@code frame}'s rows as serialized Arrow record batches, as Spark's own Arrow collect makes them. */
  public static org.apache.spark.rdd.RDD<byte[]> arrowBatches(Dataset<Row> frame) {
    return ((org.apache.spark.sql.classic.Dataset<Row>) frame).toArrowBatchRdd();
  }

  /** The Arrow schema of {@link #arrowBatches}' batches: the session's time zone, and its choice of large types. */
  public static org.apache.arrow.vector.types.pojo.Schema arrowSchema(Dataset<Row> frame) {
    SQLConf conf = conf(frame.sparkSession());
    boolean legacy = "legacy".equals(conf.pandasStructHandlingMode());
    return org.apache.spark.sql.util.ArrowUtils.toArrowSchema(frame.schema(), conf.sessionLocalTimeZone(), legacy, conf.arrowUseLargeVarTypes());
  }
}
