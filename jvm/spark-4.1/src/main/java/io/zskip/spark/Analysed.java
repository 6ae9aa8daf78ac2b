package io.zskip.spark;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;

/** An analysed plan taken as it is: Spark does not analyse it again. */
final class Analysed extends QueryExecution {
  Analysed(SparkSession session, LogicalPlan analysed) {
    super(session, analysed, QueryExecution.$lessinit$greater$default$3(), QueryExecution.$lessinit$greater$default$4(),
        QueryExecution.$lessinit$greater$default$5(), QueryExecution.$lessinit$greater$default$6());
    analysed.setAnalyzed();
  }

  @Override
  public LogicalPlan analyzed() {
    return logical();
  }
}
