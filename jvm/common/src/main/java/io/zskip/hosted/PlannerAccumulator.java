package io.zskip.hosted;

import java.util.List;
import org.apache.spark.api.python.PythonAccumulatorV2;
import org.apache.spark.util.AccumulatorV2;

/**
 * The Python accumulator of the UDFs the planner process runs (a PySpark driver's UDFs carry one): it
 * keeps its tasks' updates from reaching the process.  PySpark's own sends each finished task's updates
 * to the driver process over a socket and waits for its answer on the DAGScheduler's thread, so a
 * planner process that stalls (or is stopped) while one of its UDFs' tasks ends would stop every job of
 * the application.  zskip's planner uses no accumulator: nothing is lost.
 */
public final class PlannerAccumulator extends PythonAccumulatorV2 {
  public PlannerAccumulator() {
    super("127.0.0.1", 0, ""); // never connected to: merge sends nothing
  }

  @Override
  public PlannerAccumulator copyAndReset() {
    return new PlannerAccumulator();
  }

  @Override
  public void merge(AccumulatorV2<byte[], List<byte[]>> other) {
    // the planner process reads no accumulator: a task's updates are dropped here, on the driver
  }
}
