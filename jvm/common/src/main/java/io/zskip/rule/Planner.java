package io.zskip.rule;

import io.zskip.bridge.Bridge;
import io.zskip.hosted.HostedPlanner;
import io.zskip.scan.Scans;
import java.util.List;
import java.util.function.Function;

/**
 * Where zskip's rule ({@link PlanHook}) gets its answers: zskip's Python planner, either in the Python
 * driver that enabled zskip ({@link #ofDriver}) or in the Python process zskip's Spark extension hosts
 * ({@link HostedPlanner}).  The planner is the one Python implementation; this is only how it is reached.
 */
public interface Planner {
  /** Whether the planner can be asked now (a hosted one may wait a little for its process to start). */
  default boolean ready() {
    return true;
  }

  /** The answer {@link Scans#hooked} takes for one plan's scans; throws {@link Unavailable} when the planner went away while asked. */
  String plan(Scans scans);

  /** Records the scans the rule decided alone ({@link WorkloadRecords}); for each, the answers of those it planned. */
  String record(List<Scans> batch);

  /** The table properties that mark a table zskip plans (none: no planner has said yet). */
  String[] properties();

  /** The planner went away while asked: the query keeps Spark's plan, without a warning of its own (its supervisor warned once). */
  final class Unavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Unavailable(String why) {
      super(why, null, false, false);
    }
  }

  /** The planner of a Python driver that enabled zskip: py4j proxies of its planning and recording functions. */
  static Planner ofDriver(Function<Scans, String> plan, Function<List<Scans>, String> record, String properties) {
    String[] marks = Bridge.split(properties);
    return new Planner() {
      @Override
      public String plan(Scans scans) {
        return plan.apply(scans);
      }

      @Override
      public String record(List<Scans> batch) {
        return record.apply(batch);
      }

      @Override
      public String[] properties() {
        return marks;
      }
    };
  }
}
