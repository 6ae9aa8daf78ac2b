package io.zskip.hosted;

import static io.zskip.settings.ZskipSettings.PROCEDURES_MAX_CONCURRENT;
import static io.zskip.settings.ZskipSettings.PROCEDURES_TIMEOUT;

import io.zskip.bridge.Bridge;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * zskip's procedures ({@code CALL zskip.system.*}), relayed to the hosted planner process: each call
 * runs in the caller's session with the caller's job group and tags, at most {@code
 * spark.zskip.procedures.maxConcurrent} at once, each within its bound ({@code
 * spark.zskip.procedures.timeout}), past which its Spark jobs are cancelled, now and as they start.
 */
final class ProcedureRelay {
  /** What the relay needs of the planner that hosts it. */
  interface Host {
    /** The registered planner, waited for if it is starting; fails with one line saying {@code what} cannot be done. */
    HostedPlanner.Registered planner(String what);

    /** The application's settings. */
    HostedPlanner.Settings settings();

    /** The process of {@code generation} could not be reached: it is restarted. */
    void unreachable(int generation, String why);

    /** The last running procedure ended. */
    void allEnded();
  }

  private static final Logger LOG = LoggerFactory.getLogger("zskip.planner");

  /** Local properties a call carries to the thread that runs it: job group and tags (cancelling them cancels it), description, pool. */
  private static final List<String> CARRIED = List.of(
      "spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel", "spark.scheduler.pool", "spark.job.tags");

  private final AtomicInteger runningProcedures = new AtomicInteger();
  private final AtomicInteger procedureCalls = new AtomicInteger();
  /** The tags of procedures past their bound that have not ended yet: a job they start is cancelled. */
  private final java.util.Set<String> overranProcedures = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final ExecutorService calls;
  private final Host host;

  ProcedureRelay(ExecutorService calls, Host host) {
    this.calls = calls;
    this.host = host;
  }

  /** How many procedures are running now. */
  int running() {
    return runningProcedures.get();
  }

  /**
   * Runs procedure {@code name} with {@code arguments} (JSON) in the planner process and waits for its
   * answer (JSON), at most the call's bound: the calling thread's job group and tags go with it, so
   * cancelling the caller's jobs (a Connect interrupt, a Thrift cancel) cancels the procedure's.
   */
  String run(String name, String arguments) {
    HostedPlanner.Registered planner = host.planner("run " + name);
    int limit = host.settings().maxProcedures();
    if (runningProcedures.incrementAndGet() > limit) {
      runningProcedures.decrementAndGet();
      throw new IllegalStateException("zskip runs at most " + limit + " procedures at once in this application ("
          + PROCEDURES_MAX_CONCURRENT.key() + "), and that many are running: call " + name + " again when one has ended");
    }
    try {
      return runNow(planner, name, arguments);
    } finally {
      if (runningProcedures.decrementAndGet() == 0) {
        host.allEnded();
      }
    }
  }

  private String runNow(HostedPlanner.Registered planner, String name, String arguments) {
    SparkSession caller = SparkSession.active(); // the session the CALL runs in: the procedure runs there too
    org.apache.spark.SparkContext context = caller.sparkContext();
    long bound = host.settings().procedureTimeoutMs(caller);
    java.util.Map<String, String> carried = new java.util.HashMap<>();
    for (String key : CARRIED) {
      String value = context.getLocalProperty(key);
      if (value != null) {
        carried.put(key, value);
      }
    }
    // a tag of this call's own on its jobs: past its bound they are cancelled by it, and the caller's
    // other jobs are left alone
    String tag = "zskip-procedure-" + procedureCalls.incrementAndGet();
    String tags = carried.get("spark.job.tags");
    carried.put("spark.job.tags", tags == null || tags.isEmpty() ? tag : tags + "," + tag);
    Future<String> answer = calls.submit(() -> {
      Bridge.PLANNING.set(Boolean.TRUE); // the procedure's own queries pass zskip's rule untouched
      SparkSession.setActiveSession(caller);
      CARRIED.forEach(key -> context.setLocalProperty(key, carried.get(key)));
      try {
        return planner.procedures().apply(caller, name + "\n" + arguments);
      } finally {
        overranProcedures.remove(tag);
        CARRIED.forEach(key -> context.setLocalProperty(key, null));
        SparkSession.clearActiveSession();
        Bridge.PLANNING.remove();
      }
    });
    try {
      return answer.get(bound, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      LOG.warn("zskip's {} ran longer than {} ms ({}): its Spark jobs are cancelled", name, bound, PROCEDURES_TIMEOUT.key());
      stop(answer, tag, context, name);
      throw new IllegalStateException("zskip's " + name + " ran longer than " + bound + " ms (" + PROCEDURES_TIMEOUT.key()
          + "): its Spark jobs are cancelled, and what it had not committed is not published; call it again "
          + "with a longer bound");
    } catch (ExecutionException e) {
      String why = String.valueOf(e.getCause()).split("\n")[0];
      host.unreachable(planner.generation(), "could not be reached to run " + name + ": " + why);
      throw new IllegalStateException("zskip's planner process could not run " + name + ": " + why, e.getCause());
    } catch (InterruptedException e) {
      stop(answer, tag, context, name);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while zskip's " + name + " ran (its Spark jobs are cancelled with the caller's)");
    }
  }

  /**
   * Stops a procedure its caller no longer waits for: its running jobs are cancelled now, and any it starts
   * later as soon as they start (Spark cancels only the jobs running when asked), so it stops at its next
   * job without committing what it had not; then waits for it to end ({@link #windDown}).
   */
  private void stop(Future<String> answer, String tag, org.apache.spark.SparkContext context, String name) {
    if (!answer.isDone()) {
      overranProcedures.add(tag);
    }
    context.cancelJobsWithTag(tag);
    windDown(answer, name);
  }

  /** How long a procedure whose jobs were cancelled may take to end before its caller is answered anyway. */
  static final long WIND_DOWN_MS = 60_000;

  /**
   * Waits, at most {@link #WIND_DOWN_MS}, for a procedure whose Spark jobs were cancelled to end: it fails at
   * its next job and removes what it wrote and did not commit, and only then does its caller hear that it
   * ended (else the caller could see those files, or start the call again beside them).
   */
  private static void windDown(Future<String> answer, String name) {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WIND_DOWN_MS);
    boolean interrupted = Thread.interrupted();
    try {
      while (!answer.isDone()) {
        long left = until - System.nanoTime();
        if (left <= 0) {
          LOG.warn("zskip's {} had not ended {} s after its Spark jobs were cancelled: files it wrote and did not "
              + "commit may remain until vacuum removes them", name, WIND_DOWN_MS / 1000);
          return;
        }
        try {
          answer.get(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException again) {
          interrupted = true;
        } catch (ExecutionException | TimeoutException | java.util.concurrent.CancellationException ended) {
          // ended (or the bound passed: the loop says so)
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** A job of a procedure past its bound is cancelled as it starts. */
  void cancelIfOverran(org.apache.spark.SparkContext context, org.apache.spark.scheduler.SparkListenerJobStart start) {
    if (overranProcedures.isEmpty() || start.properties() == null) {
      return;
    }
    String tags = start.properties().getProperty("spark.job.tags", "");
    for (String tag : tags.split(",")) {
      if (overranProcedures.contains(tag)) {
        context.cancelJob(start.jobId());
        return;
      }
    }
  }
}
