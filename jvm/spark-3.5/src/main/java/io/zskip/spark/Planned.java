package io.zskip.spark;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * The execution of a staged query whose first plan is the one Spark already built for the original
 * query, its Iceberg scans reset to the kept tasks (Iceberg's own hook for runtime filtering): running
 * it costs no second optimization or physical planning.  Its analysed plan is the staged one, so every
 * DataFrame derived from it reads the staged tasks through its own plan.
 */
final class Planned extends QueryExecution {
  private final QueryExecution original;

  Planned(SparkSession session, LogicalPlan staged, QueryExecution original) {
    super(session, staged, QueryExecution.$lessinit$greater$default$3(), QueryExecution.$lessinit$greater$default$4());
    this.original = original;
    staged.setAnalyzed();
  }

  /** The staged plan as it is: the original's analysed plan with resolved relations swapped in. */
  @Override
  public LogicalPlan analyzed() {
    return logical();
  }

  @Override
  public LogicalPlan optimizedPlan() {
    return original.optimizedPlan();
  }

  @Override
  public SparkPlan sparkPlan() {
    return original.sparkPlan();
  }

  @Override
  public SparkPlan executedPlan() {
    return original.executedPlan();
  }

  @Override
  public RDD<InternalRow> toRdd() {
    return original.toRdd();
  }
}
