package io.zskip.spark;

import io.zskip.scan.SnapshotFiles;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.source.SparkScanBuilder;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** An Iceberg table whose batch scans take their tasks from {@link SnapshotFiles}' list (Spark 3.5). */
final class ListedTable extends SparkTable {
  ListedTable(Table table, boolean refreshEagerly) {
    super(table, (Long) null, refreshEagerly, false);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    ScanBuilder builder = super.newScanBuilder(options);
    return builder instanceof SparkScanBuilder ? new Builder((SparkScanBuilder) builder) : builder;
  }

  /** Iceberg's scan builder, unchanged but for the tasks its batch scans start with. */
  static final class Builder implements ScanBuilder, SupportsPushDownAggregates, SupportsPushDownV2Filters,
      SupportsPushDownRequiredColumns, SupportsReportStatistics {
    private final SparkScanBuilder iceberg;

    Builder(SparkScanBuilder iceberg) {
      this.iceberg = iceberg;
    }

    @Override
    public Scan build() {
      Scan scan = iceberg.build();
      SnapshotFiles.seed(scan);
      return scan;
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
      return iceberg.pushPredicates(predicates);
    }

    @Override
    public Predicate[] pushedPredicates() {
      return iceberg.pushedPredicates();
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
      return iceberg.pushAggregation(aggregation);
    }

    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
      return iceberg.supportCompletePushDown(aggregation);
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      iceberg.pruneColumns(requiredSchema);
    }

    @Override
    public Statistics estimateStatistics() {
      Scan scan = build();
      return scan instanceof SupportsReportStatistics
          ? ((SupportsReportStatistics) scan).estimateStatistics()
          : iceberg.estimateStatistics();
    }

    @Override
    public StructType readSchema() {
      return iceberg.readSchema();
    }
  }
}
