package io.zskip.scan;

import io.zskip.aggregate.AggregateShape;
import java.util.List;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;

/**
 * One Iceberg batch scan of a query: the scan, its table, the tasks Iceberg planned, the expression
 * ids of its output, and (for the optimized plans zskip's rule sees) the relation holding it and the
 * aggregate over it the planner may answer in part ({@code null}: none).
 */
public record ScanEntry(
    Scan scan, Table table, List<FileScanTask> tasks, List<Long> output, DataSourceV2ScanRelation relation,
    AggregateShape aggregate) {
  public boolean produces(long id) {
    return output.contains(id);
  }
}
