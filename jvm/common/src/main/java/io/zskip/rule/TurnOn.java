package io.zskip.rule;

import io.zskip.hosted.HostedPlanner;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.Function1;
import scala.runtime.AbstractFunction1;

/**
 * The analyzer rule zskip's Spark extension puts in each session: on the session's first analysis it
 * puts zskip's optimizer rule, planning through the hosted planner ({@link HostedPlanner}), among the
 * session's extra optimizations (unless a Python driver already enabled zskip there) and has the
 * planner process started.  Spark's extensions cannot place a rule where zskip's runs (after the scans
 * have their pushed filters), and the session's optimizer is not built yet while extensions are
 * applied; the first analysis comes before the first optimization.  It changes no plan.
 */
public final class TurnOn extends Rule<LogicalPlan> {
  public static final Function1<SparkSession, Rule<LogicalPlan>> BUILDER = new Builder();

  private final SparkSession session;
  private volatile boolean done;

  private TurnOn(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!done) {
      turnOn();
    }
    return plan;
  }

  private synchronized void turnOn() {
    if (done) {
      return;
    }
    done = true;
    try {
      if (PlanHook.installHosted(session)) {
        HostedPlanner.INSTANCE.ensureStarted(session);
      }
    } catch (RuntimeException e) { // never fail a query: the session runs without zskip
      org.slf4j.LoggerFactory.getLogger("zskip.planner").warn("zskip could not turn itself on in a session: {}", e.toString());
    }
  }

  private static final class Builder extends AbstractFunction1<SparkSession, Rule<LogicalPlan>> implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public Rule<LogicalPlan> apply(SparkSession session) {
      return new TurnOn(session);
    }
  }
}
