package io.zskip.join;

import static io.zskip.settings.ZskipSettings.SMALL_JOIN_SIDE;
import io.zskip.iceberg.Members;
import io.zskip.rule.Plans;
import io.zskip.spark.SparkLine;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.BatchScan;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.And;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.Or;
import org.apache.iceberg.expressions.UnboundPredicate;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;

/**
 * The distinct keys a join's dimension side yields, handed to the planner in a local file: "L:path"
 * (64-bit integers: whole numbers, a date's days since 1970-01-01, a timestamp's microseconds since the
 * epoch) or "S:path" (text: strings, and decimals as Spark writes them); "" when there are more than
 * the planner's cap.
 */
public final class JoinKeys {
  // a join's dimension side Spark estimates at most this big sends its keys without a distinct

  private JoinKeys() {}

  public static String of(SparkSession session, JoinSide join, int cap) throws Exception {
    Attribute key = join.key();
    String name = "`" + key.name().replace("`", "``") + "`";
    String type = key.dataType().typeName();
    boolean text = type.equals("string") || type.startsWith("decimal");
    String value = JoinFinder.integral(key.dataType()) ? "CAST(" + name + " AS BIGINT)"
        : type.equals("date") ? "unix_date(" + name + ")"
        : type.equals("timestamp") ? "unix_micros(" + name + ")"
        : "CAST(" + name + " AS STRING)";
    long small = Long.parseLong(session.conf().get(SMALL_JOIN_SIDE.key(), SMALL_JOIN_SIDE.defaultValue()));
    boolean smallSide = estimatedBytes(join.side()) <= small;
    Set<Object> distinct = smallSide && join.allPushed() ? onDriver(join.dimensionScan(), key, cap) : null;
    if (distinct == null) {
      List<Attribute> columns = List.of(key);
      @SuppressWarnings("unchecked")
      var projected = (scala.collection.immutable.List<org.apache.spark.sql.catalyst.expressions.NamedExpression>)
          (Object) Plans.scalaList(columns);
      Dataset<Row> keys = SparkLine.ofRows(session, new Project(projected, join.side()));
      Dataset<Row> selected = keys.where(name + " IS NOT NULL").selectExpr(value);
      // a small dimension side sends its keys to the driver in one stage, without the shuffle of a
      // distinct (which costs more than the rows it would save); the driver drops the repeats
      List<Row> rows = smallSide ? selected.collectAsList() : selected.distinct().limit(cap + 1).collectAsList();
      distinct = new HashSet<>();
      for (int i = 0; i < rows.size() && distinct.size() <= cap; i++) {
        Row row = rows.get(i);
        distinct.add(text ? row.getString(0) : (Object) ((Number) row.get(0)).longValue());
      }
    }
    if (distinct.size() > cap) {
      return "";
    }
    return (text ? "S:" : "L:") + write(distinct, text).getAbsolutePath();
  }

  /** Spark's estimate of what {@code plan} yields, in bytes (Long.MAX_VALUE when it has none). */
  private static long estimatedBytes(LogicalPlan plan) {
    try {
      return plan.stats().sizeInBytes().longValue();
    } catch (RuntimeException e) {
      return Long.MAX_VALUE;
    }
  }

  private static File write(Set<Object> keys, boolean text) throws IOException {
    File file = File.createTempFile("zskip-keys-", ".bin");
    try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(file)))) {
      if (text) { // the count, every length, then every key's UTF-8 bytes: Python reads them as one Arrow array
        List<byte[]> encoded = new ArrayList<>();
        for (Object key : keys) {
          encoded.add(((String) key).getBytes(StandardCharsets.UTF_8));
        }
        out.writeInt(encoded.size());
        for (byte[] bytes : encoded) {
          out.writeInt(bytes.length);
        }
        for (byte[] bytes : encoded) {
          out.write(bytes);
        }
      } else {
        for (Object key : keys) {
          out.writeLong((Long) key);
        }
      }
    }
    return file;
  }

  /**
   * The distinct non-NULL keys of a small dimension side whose every condition reached Iceberg, read in
   * the driver by Iceberg's own reader (the scan's snapshot, its filters evaluated row by row, delete
   * files applied): a few reads instead of a Spark job.  At most {@code cap + 1} keys; {@code null} when
   * the key's type is one whose values this reader and Spark's text of them could tell apart (only whole
   * numbers, dates and strings are read here), or this reader fails where Spark's job would not.
   */
  static Set<Object> onDriver(org.apache.spark.sql.connector.read.Scan scan, Attribute key, int cap) throws Exception {
    String type = key.dataType().typeName();
    boolean whole = JoinFinder.integral(key.dataType());
    Object planned = Members.icebergScan(scan);
    if ((!whole && !type.equals("date") && !type.equals("string")) || !(planned instanceof BatchScan iceberg)) {
      return null; // an incremental read, or a key type this reader and Spark might write apart
    }
    Snapshot snapshot = iceberg.snapshot(); // the query's own: its time travel, branch or tag
    Set<Object> distinct = new HashSet<>();
    if (snapshot == null) {
      return distinct; // a table without a snapshot has no rows
    }
    Table table = iceberg.table();
    IcebergGenerics.ScanBuilder read = IcebergGenerics.read(table)
        .where(nullsNeverMatch(Expressions.rewriteNot(iceberg.filter())))
        .select(List.of(key.name()));
    Snapshot current = table.currentSnapshot();
    if (current == null || current.snapshotId() != snapshot.snapshotId()) {
      read = read.useSnapshot(snapshot.snapshotId()); // the current one reads in the table's schema, as Spark does
    }
    try (CloseableIterable<Record> records = (iceberg.isCaseSensitive() ? read : read.caseInsensitive()).build()) {
      for (Record record : records) {
        Object value = record.getField(key.name());
        if (value != null) {
          distinct.add(whole ? (Object) ((Number) value).longValue()
              : type.equals("date") ? (Object) ((LocalDate) value).toEpochDay()
              : value.toString());
        }
        if (distinct.size() > cap) {
          break;
        }
      }
    } catch (RuntimeException e) {
      // a column or filter this reader binds or evaluates differently: Spark's own job reads the keys
      return null;
    }
    return distinct;
  }

  /**
   * {@code filter} (its NOTs pushed to the predicates) as SQL's WHERE reads it: a comparison of a NULL
   * is never true.  Iceberg's row evaluator is two-valued and not made for NULLs (an IN of a NULL string
   * throws), where Spark leaves a row out of the join whenever its condition is NULL; with every NOT at a
   * predicate, AND and OR of predicates true only on values give exactly the rows SQL keeps.
   */
  static Expression nullsNeverMatch(Expression filter) {
    if (filter instanceof And and) {
      return Expressions.and(nullsNeverMatch(and.left()), nullsNeverMatch(and.right()));
    }
    if (filter instanceof Or or) {
      return Expressions.or(nullsNeverMatch(or.left()), nullsNeverMatch(or.right()));
    }
    if (!(filter instanceof UnboundPredicate<?> predicate)) {
      return filter; // true, false, or a bound predicate (left as it is; an error falls back to Spark's job)
    }
    Expression.Operation op = predicate.op();
    if (op == Expression.Operation.IS_NULL || op == Expression.Operation.NOT_NULL
        || op == Expression.Operation.IS_NAN || op == Expression.Operation.NOT_NAN) {
      return predicate; // true or false on NULLs too, as in SQL
    }
    return Expressions.and(Expressions.notNull(predicate.term()), predicate);
  }
}
