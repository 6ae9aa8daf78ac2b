package io.zskip.spark;

import io.zskip.iceberg.Members;
import io.zskip.procedures.ProcedureCallParser;
import io.zskip.scan.SnapshotFiles;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * What differs between the Spark lines zskip supports, for Spark 3.5 (Scala 2.12): the session and the
 * Dataset are one class each, Iceberg reads a staged task set by a read option, and its tables may be
 * put in a plan reading through {@link SnapshotFiles}.  Spark 4.1's module has a class of the same name
 * and methods.
 */
public final class SparkLine {
  /** The name of Iceberg's protected accessor for a batch query scan's pushed filters. */
  public static final String FILTERS = "filterExpressions";

  private SparkLine() {}

  public static QueryExecution execution(Dataset<?> frame) {
    return frame.queryExecution();
  }

  public static LogicalPlan parse(SparkSession session, String text) throws Exception {
    return session.sessionState().sqlParser().parsePlan(text);
  }

  public static SQLConf conf(SparkSession session) {
    return session.sessionState().conf();
  }

  public static Dataset<Row> ofRows(SparkSession session, LogicalPlan plan) {
    return Dataset.ofRows(session, plan);
  }

  /** A DataFrame of {@code execution}, whose rows are {@code like}'s (its encoder serves). */
  public static Dataset<Row> withExecution(Dataset<Row> like, QueryExecution execution) {
    return new Dataset<>(execution, like.encoder());
  }

  /** An execution of {@code analysed} that Spark takes as analysed. */
  public static QueryExecution analysed(SparkSession session, LogicalPlan analysed) {
    return new Analysed(session, analysed);
  }

  /** An execution of {@code staged} whose optimized and physical plans are {@code original}'s. */
  public static QueryExecution planned(SparkSession session, LogicalPlan staged, QueryExecution original) {
    return new Planned(session, staged, original);
  }

  public static ExperimentalMethods experimental(SparkSession session) {
    return session.experimental();
  }

  /** {@code relation} reading {@code table} instead. */
  public static DataSourceV2Relation withTable(DataSourceV2Relation relation, org.apache.spark.sql.connector.catalog.Table table) {
    return new DataSourceV2Relation(table, relation.output(), relation.catalog(), relation.identifier(), relation.options());
  }

  /** {@code relation} reading the task set {@code setId} staged for {@code table}: Iceberg's Spark 3.5 tables read one by option. */
  public static DataSourceV2Relation staged(DataSourceV2Relation relation, Table table, String setId) {
    Map<String, String> options = new HashMap<>(relation.options().asCaseSensitiveMap());
    options.put("scan-task-set-id", setId);
    return new DataSourceV2Relation(relation.table(), relation.output(), relation.catalog(), relation.identifier(),
        new CaseInsensitiveStringMap(options));
  }

  /** A relation of {@code output} holding {@code rows} (zskip's answers of an aggregate's row groups). */
  public static LogicalPlan localRelation(
      java.util.List<Attribute> output, java.util.List<org.apache.spark.sql.catalyst.InternalRow> rows) {
    return new LocalRelation(io.zskip.rule.Plans.scalaList(output), io.zskip.rule.Plans.scalaList(rows), false);
  }

  /** {@code Aggregate(grouping, aggregates, child)}. */
  public static LogicalPlan aggregate(
      java.util.List<org.apache.spark.sql.catalyst.expressions.Expression> grouping,
      java.util.List<org.apache.spark.sql.catalyst.expressions.NamedExpression> aggregates,
      LogicalPlan child) {
    return new org.apache.spark.sql.catalyst.plans.logical.Aggregate(
        io.zskip.rule.Plans.scalaList(grouping), io.zskip.rule.Plans.scalaList(aggregates), child);
  }

  /** A relation of {@code relation}'s columns (the same attributes) holding no rows. */
  @SuppressWarnings("unchecked")
  public static LogicalPlan empty(LogicalPlan relation) {
    scala.collection.Seq<Attribute> output = (scala.collection.Seq<Attribute>) (Object) relation.output();
    return new LocalRelation(output, scala.collection.immutable.List$.MODULE$.empty(), false);
  }

  /**
   * {@code original} reading through {@link SnapshotFiles}, or {@code null}: a table at another snapshot
   * or branch, or one being rewritten, keeps Iceberg's own planning.
   */
  public static SparkTable listed(SparkTable original) {
    if (original.getClass() != SparkTable.class || original.branch() != null || original.snapshotId() != null) {
      return null;
    }
    try {
      // private fields of Iceberg's table: whether it is read for a rewrite, and how it refreshes
      if ((Boolean) Members.field(original, "isTableRewrite")) {
        return null;
      }
      return new ListedTable(original.table(), (Boolean) Members.field(original, "refreshEagerly"));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /**
   * What this line's sessions need from zskip's extension beyond its optimizer rule: on Spark 3.5, a
   * parser that reads {@code CALL}s of zskip's procedure catalog (Spark 3.5 parses no CALL of its own).
   */
  public static void extend(org.apache.spark.sql.SparkSessionExtensions extensions) {
    extensions.injectParser(new scala.runtime.AbstractFunction2<SparkSession,
        org.apache.spark.sql.catalyst.parser.ParserInterface, org.apache.spark.sql.catalyst.parser.ParserInterface>() {
      @Override
      public org.apache.spark.sql.catalyst.parser.ParserInterface apply(
          SparkSession session, org.apache.spark.sql.catalyst.parser.ParserInterface delegate) {
        return new ProcedureCallParser(session, delegate);
      }
    });
  }

  /** {@code frame}'s rows as serialized Arrow record batches, as Spark's own Arrow collect makes them. */
  public static org.apache.spark.rdd.RDD<byte[]> arrowBatches(Dataset<Row> frame) {
    return frame.toArrowBatchRdd();
  }

  /** The Arrow schema of {@link #arrowBatches}' batches: the session's time zone, and its choice of large types. */
  public static org.apache.arrow.vector.types.pojo.Schema arrowSchema(Dataset<Row> frame) {
    SQLConf conf = conf(frame.sparkSession());
    boolean legacy = "legacy".equals(conf.pandasStructHandlingMode());
    return org.apache.spark.sql.util.ArrowUtils.toArrowSchema(frame.schema(), conf.sessionLocalTimeZone(), legacy, false);
  }
}
