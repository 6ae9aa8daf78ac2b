package io.zskip.hosted;

import io.zskip.settings.ZskipSettings;
import static io.zskip.settings.ZskipSettings.ENABLED;
import static io.zskip.settings.ZskipSettings.PLANNER_PYTHON;
import static io.zskip.settings.ZskipSettings.PLANNER_START_TIMEOUT;
import static io.zskip.settings.ZskipSettings.PLANNER_START_WAIT;
import static io.zskip.settings.ZskipSettings.PLANNER_TIMEOUT;
import static io.zskip.settings.ZskipSettings.PROCEDURES_MAX_CONCURRENT;
import static io.zskip.settings.ZskipSettings.PROCEDURES_TIMEOUT;
import io.zskip.bridge.Bridge;
import io.zskip.rule.Planner;
import io.zskip.scan.Scans;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.api.python.Py4JServer;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * zskip's planner in a Python process this JVM starts and supervises, for the sessions zskip's Spark
 * extension turns zskip on in ({@code spark.sql.extensions=io.zskip.extensions.ZskipSparkSessionExtensions})
 * where no Python driver enabled zskip: Spark Connect and Thrift servers, {@code spark-sql}, Scala and
 * Java jobs, PySpark jobs that never import zskip.
 *
 * <p>The process is {@code <python> -m zskip.hosted}: it reaches this JVM through a py4j
 * gateway of PySpark's own kind ({@link Py4JServer}: the loopback interface, a secret it gets in its
 * environment), wraps the session zskip's extension first saw as a PySpark session, and registers its
 * planner ({@link #register}).  Queries then ask it as a Python driver's rule asks its driver.  Only
 * the application's configuration (never a session's SET) names the interpreter, and the process runs
 * nothing but {@code zskip.hosted}.
 *
 * <p>Never worse than Spark: while the process is starting (unless {@code spark.zskip.planner.startWait} says to wait
 * for it), after it died, when it takes longer than {@code spark.zskip.planner.timeout} to plan or cannot be started,
 * queries keep Spark's plans (answers the rule remembers still apply).  Each such incident is logged
 * once, as a warning, and the process is started again, after 1 s, then 2, 4, ... up to 60 s while it
 * keeps failing.
 */
public final class HostedPlanner implements Planner {
  public static final HostedPlanner INSTANCE = new HostedPlanner();
  private static final Logger LOG = LoggerFactory.getLogger("zskip.planner");
  private static final long FIRST_BACKOFF_MS = 1_000;
  private static final long MAX_BACKOFF_MS = 60_000;

  /** What the application's configuration says (read once: a session cannot change it). */
  record Settings(String python, long timeoutMs, long startWaitMs, long startTimeoutMs, int maxProcedures, long procedureTimeoutMs) {
    static Settings of(SparkConf conf) {
      String workers = conf.get("spark.pyspark.python", System.getenv().getOrDefault("PYSPARK_PYTHON", "python3"));
      return new Settings(
          conf.get(PLANNER_PYTHON.key(), workers),
          conf.getTimeAsMs(PLANNER_TIMEOUT.key(), PLANNER_TIMEOUT.defaultValue()),
          conf.getTimeAsMs(PLANNER_START_WAIT.key(), PLANNER_START_WAIT.defaultValue()),
          conf.getTimeAsMs(PLANNER_START_TIMEOUT.key(), PLANNER_START_TIMEOUT.defaultValue()),
          Math.max(1, conf.getInt(PROCEDURES_MAX_CONCURRENT.key(), Integer.parseInt(PROCEDURES_MAX_CONCURRENT.defaultValue()))),
          positive(conf.getTimeAsMs(PROCEDURES_TIMEOUT.key(), PROCEDURES_TIMEOUT.defaultValue())));
    }

    /** The bound of a procedure called in {@code session}: the application's, or the session's if shorter. */
    long procedureTimeoutMs(SparkSession session) {
      String own = session.conf().get(PROCEDURES_TIMEOUT.key(), null);
      if (own == null) {
        return procedureTimeoutMs;
      }
      long ms;
      try {
        ms = new SparkConf(false).set(PROCEDURES_TIMEOUT.key(), own).getTimeAsMs(PROCEDURES_TIMEOUT.key());
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(PROCEDURES_TIMEOUT.key() + " is '" + own + "', which is not a duration: give one like 90s, 30min or 2h");
      }
      return Math.min(procedureTimeoutMs, positive(ms));
    }

    private static long positive(long ms) {
      return ms <= 0 ? Long.MAX_VALUE : ms; // 0: no bound
    }
  }

  /**
   * The planner a process registered: py4j proxies of its functions, and its procedures (a function of
   * "name\narguments as JSON", and their declarations as JSON: zskip.procedures).
   */
  record Registered(
      int generation,
      Function<Scans, String> plan,
      Function<List<Scans>, String> record,
      BiFunction<SparkSession, String, String> procedures,
      String procedureSpecs) {}

  private final ScheduledExecutorService supervisor = Executors.newSingleThreadScheduledExecutor(daemon("zskip-planner-supervisor"));
  private final ExecutorService calls = Executors.newCachedThreadPool(daemon("zskip-planner-call"));
  private final ProcedureRelay relay = new ProcedureRelay(calls, new ProcedureRelay.Host() {
    @Override
    public Registered planner(String what) {
      return awaitRegistered(what);
    }

    @Override
    public Settings settings() {
      synchronized (HostedPlanner.this) {
        return settings;
      }
    }

    @Override
    public void unreachable(int generation, String why) {
      failed(generation, why);
    }

    @Override
    public void allEnded() {
      proceduresEnded();
    }
  });
  /** A call that overran the timeout while procedures ran in the process (it is not restarted for it). */
  private record Overrun(int generation, java.util.concurrent.atomic.AtomicBoolean finished, String what) {}

  private volatile Overrun overrun;
  /** Where the process is in its life; replaced (never edited) under this object's lock. */
  private volatile PlannerState<Process, Registered> state = PlannerState.initial();
  private volatile String[] properties = new String[0]; // the last registered planner's: kept while it restarts
  private final Deque<String> output = new ArrayDeque<>();
  // guarded by this
  private SparkSession session;
  private Settings settings;
  private Py4JServer gateway;
  private boolean incident; // an incident is under way: warned once, quiet until the planner is back
  private boolean firstStart; // the application's first start is under way, not failed yet: START_WAIT applies
  private long backoffMs = FIRST_BACKOFF_MS;
  private long startedNanos;
  private int starts;

  private HostedPlanner() {}

  private static ThreadFactory daemon(String name) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      // the loader of zskip's own classes (spark.jars): py4j's threads, started from here, find them
      // through it, whichever thread of a server (a Thrift session's, say) first needed the planner
      thread.setContextClassLoader(HostedPlanner.class.getClassLoader());
      return thread;
    };
  }

  /** Start the planner process for {@code session}'s application, unless it is started. */
  public synchronized void ensureStarted(SparkSession session) {
    if (this.session != null && !this.session.sparkContext().isStopped()) {
      return;
    }
    stopProcess(); // the application the process served stopped: a new one starts
    this.session = session;
    this.settings = Settings.of(session.sparkContext().getConf());
    this.backoffMs = FIRST_BACKOFF_MS;
    this.incident = false;
    this.firstStart = true;
    org.apache.spark.SparkContext context = session.sparkContext();
    context.addSparkListener(new SparkListener() {
      @Override
      public void onApplicationEnd(SparkListenerApplicationEnd end) {
        stop();
      }

      @Override
      public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart start) {
        relay.cancelIfOverran(context, start);
      }
    });
    if (starts == 0) {
      Runtime.getRuntime().addShutdownHook(new Thread(this::stop, "zskip-planner-stop"));
    }
    schedule(0);
  }

  private static final java.util.concurrent.atomic.AtomicBoolean EARLY = new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * Start the planner process as soon as the application has its first session, rather than at its
   * first query: zskip's extension calls this when Spark applies it (the session it is applied for is
   * not built yet, so a thread of its own waits for the application's default session, at most
   * {@code spark.zskip.planner.startTimeout}).  A server's first client is then pruned without waiting for the planner.
   * Nothing starts when the application's configuration sets {@code spark.zskip.enabled=false}.
   */
  public static void startWithApplication() {
    if (!EARLY.compareAndSet(false, true)) {
      return;
    }
    Thread waiting = new Thread(() -> {
      long deadline = System.nanoTime() + 120_000_000_000L;
      try {
        while (System.nanoTime() < deadline) {
          scala.Option<SparkSession> found = SparkSession.getDefaultSession();
          if (found.isDefined() && !found.get().sparkContext().isStopped()) {
            SparkSession session = found.get();
            if (ZskipSettings.flag(session.sparkContext().getConf().get(ENABLED.key(), null), true)) {
              INSTANCE.ensureStarted(session);
            }
            return;
          }
          Thread.sleep(100);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) { // the first query starts it then, as before
        LOG.warn("zskip's planner could not be started with the application: {}", e.toString());
      }
    }, "zskip-planner-early-start");
    waiting.setDaemon(true);
    waiting.setContextClassLoader(HostedPlanner.class.getClassLoader());
    waiting.start();
  }

  /** The session the planner process plans in (the first its application's extension saw). */
  public static SparkSession session() {
    synchronized (INSTANCE) {
      return INSTANCE.session;
    }
  }

  /**
   * Called by the planner process once it is ready: its planning and recording functions and the table
   * properties that mark zskip's tables.  False when {@code generation} is not the process this JVM
   * last started (an old one, which then exits).
   */
  public static boolean register(
      int generation,
      Function<Scans, String> plan,
      Function<List<Scans>, String> record,
      String properties,
      BiFunction<SparkSession, String, String> procedures,
      String procedureSpecs) {
    synchronized (INSTANCE) {
      if (!INSTANCE.state.is(generation)) {
        return false;
      }
      INSTANCE.properties = Bridge.split(properties);
      INSTANCE.state = INSTANCE.state.registered(generation, new Registered(generation, plan, record, procedures, procedureSpecs));
      INSTANCE.backoffMs = FIRST_BACKOFF_MS;
      long millis = (System.nanoTime() - INSTANCE.startedNanos) / 1_000_000;
      if (INSTANCE.incident) {
        LOG.info("zskip's planner is back (process {}, started in {} ms): queries are pruned again", INSTANCE.state.process().pid(), millis);
      } else {
        LOG.info("zskip's planner is ready (process {}, started in {} ms)", INSTANCE.state.process().pid(), millis);
      }
      INSTANCE.incident = false;
      INSTANCE.firstStart = false;
      INSTANCE.notifyAll();
      return true;
    }
  }

  /** "state generation pid starts": {@code ready}, {@code starting}, {@code waiting} (to restart) or {@code stopped}. */
  public static String status() {
    synchronized (INSTANCE) {
      PlannerState<Process, Registered> now = INSTANCE.state;
      return now.name() + " " + now.generation() + " " + (now.process() == null ? -1 : now.process().pid()) + " " + INSTANCE.starts;
    }
  }

  @Override
  public String[] properties() {
    return properties;
  }

  @Override
  public boolean ready() {
    if (state.planner() != null) {
      return true;
    }
    synchronized (this) {
      if (settings == null || settings.startWaitMs() <= 0 || !firstStart) {
        return state.planner() != null; // only the first start is waited for: a restart is an incident
      }
      long deadline = System.nanoTime() + settings.startWaitMs() * 1_000_000;
      try {
        while (state.planner() == null && firstStart && System.nanoTime() < deadline) {
          wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return state.planner() != null;
    }
  }

  @Override
  public String plan(Scans scans) {
    Registered planner = state.planner();
    if (planner == null) {
      throw new Unavailable("zskip's planner is not running");
    }
    if (overrun != null) {
      throw new Unavailable("zskip's planner has not answered a query that overran " + PLANNER_TIMEOUT.key() + " yet");
    }
    return call(planner, scans.session(), () -> planner.plan().apply(scans), "plan a query");
  }

  @Override
  public String record(List<Scans> batch) {
    Registered planner = state.planner();
    if (planner == null) {
      throw new Unavailable("zskip's planner is not running");
    }
    return call(planner, null, () -> planner.record().apply(batch), "record the workload");
  }

  /**
   * {@code work} on a thread of the call pool, marked as zskip planning (the queries the planner runs
   * come back on it, py4j pinning each Python thread to the JVM thread that called it), within the
   * timeout: past it, or when the call breaks, the planner is restarted and the query keeps Spark's plan.
   */
  private String call(Registered planner, SparkSession caller, Callable<String> work, String what) {
    long timeout;
    synchronized (this) {
      timeout = settings.timeoutMs();
    }
    java.util.concurrent.atomic.AtomicBoolean finished = new java.util.concurrent.atomic.AtomicBoolean();
    Future<String> answer = calls.submit(() -> {
      Bridge.PLANNING.set(Boolean.TRUE);
      if (caller != null) {
        SparkSession.setActiveSession(caller); // what the planner's calls back into Spark run in
      }
      try {
        return work.call();
      } finally {
        SparkSession.clearActiveSession();
        Bridge.PLANNING.remove();
        finished.set(true);
        answered(finished);
      }
    });
    try {
      return answer.get(timeout, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      if (overran(planner.generation(), finished, timeout, what)) {
        answer.cancel(false); // the call goes on: its answer tells the process is alive
        throw new Unavailable("zskip's planner took longer than " + timeout + " ms");
      }
      answer.cancel(true);
      failed(planner.generation(), "took longer than " + timeout + " ms (" + PLANNER_TIMEOUT.key() + ") to " + what);
      throw new Unavailable("zskip's planner took longer than " + timeout + " ms");
    } catch (ExecutionException e) {
      String why = String.valueOf(e.getCause()).split("\n")[0];
      failed(planner.generation(), "could not be reached to " + what + ": " + why);
      throw new Unavailable("zskip's planner could not be reached: " + why);
    } catch (InterruptedException e) {
      answer.cancel(true);
      Thread.currentThread().interrupt();
      throw new Unavailable("interrupted while zskip's planner planned");
    }
  }

  /**
   * The procedures' declarations (JSON), from the planner process of {@code session}'s application: it
   * is started if it is not, and waited for (at most {@code spark.zskip.planner.startTimeout}).
   */
  public static String procedureSpecs(SparkSession session) {
    INSTANCE.ensureStarted(session);
    return INSTANCE.awaitRegistered("declare zskip's procedures").procedureSpecs();
  }

  /**
   * Runs procedure {@code name} with {@code arguments} (JSON) in the planner process and waits for its
   * answer (JSON), however long it takes: the calling thread's job group and tags go with it, so
   * cancelling the caller's jobs (a Connect interrupt, a Thrift cancel) cancels the procedure's.
   */
  public static String callProcedure(String name, String arguments) {
    return INSTANCE.relay.run(name, arguments);
  }

  private Registered awaitRegistered(String what) {
    Registered planner = state.planner();
    if (planner != null) {
      return planner;
    }
    synchronized (this) {
      long waitMs = settings == null ? 0 : settings.startTimeoutMs();
      long deadline = System.nanoTime() + waitMs * 1_000_000;
      try {
        while (state.planner() == null && !(state instanceof PlannerState.Stopped) && System.nanoTime() < deadline) {
          wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (state.planner() == null) {
        throw new IllegalStateException("zskip's planner process is not running, so it cannot " + what
            + " (see the WARN lines of zskip.planner in the driver's log; " + PLANNER_PYTHON.key() + " names its Python)");
      }
      return state.planner();
    }
  }

  /**
   * A call of {@code generation} overran the timeout: while procedures run in the process it is not
   * restarted (that would end them): queries keep Spark's plans until the call answers, or, if it has
   * not when the last procedure ends, the process is restarted then.  Whether that is the case.
   */
  private synchronized boolean overran(int generation, java.util.concurrent.atomic.AtomicBoolean finished, long timeout, String what) {
    int running = relay.running();
    if (running == 0 || !state.is(generation) || finished.get()) {
      return false;
    }
    overrun = new Overrun(generation, finished, what);
    LOG.warn("zskip's planner (process {}) took longer than {} ms ({}) to {}; {} procedure(s) run in it, so it is "
        + "restarted only if it has not answered when they end; queries keep Spark's plans until it answers",
        state.process().pid(), timeout, PLANNER_TIMEOUT.key(), what, running);
    return true;
  }

  /** A call ended: if it was the one that overran, queries are planned again. */
  private synchronized void answered(java.util.concurrent.atomic.AtomicBoolean finished) {
    Overrun late = overrun;
    if (late != null && late.finished() == finished) {
      overrun = null;
      LOG.info("zskip's planner answered the call that overran (to {}): queries are pruned again", late.what());
    }
  }

  /** The last procedure ended: a process still not answering a call that overran is restarted now. */
  private synchronized void proceduresEnded() {
    Overrun late = overrun;
    if (late != null && !late.finished().get()) {
      failed(late.generation(), "did not answer the call that overran (to " + late.what() + ") by the time its procedures ended");
    }
  }

  /** The process of {@code generation} failed: warn (once per incident) and start it again. */
  private synchronized void failed(int generation, String why) {
    if (!state.is(generation)) {
      return; // an incident already being handled
    }
    overrun = null;
    Process failing = state.process();
    warn("zskip's planner (process " + failing.pid() + ") " + why);
    state = state.failed();
    failing.destroyForcibly();
    schedule(nextBackoff());
  }

  private void warn(String what) {
    firstStart = false; // queries waiting for the first start stop waiting
    notifyAll();
    if (incident) {
      LOG.debug("{}", what);
      return;
    }
    incident = true;
    LOG.warn("{}; queries run with Spark's own plans until it is back (restarting in {} s)", what, backoffMs / 1000);
  }

  private long nextBackoff() {
    long delay = backoffMs;
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
    return delay;
  }

  private synchronized void schedule(long delayMs) {
    state = state.scheduled();
    supervisor.schedule(this::start, delayMs, TimeUnit.MILLISECONDS);
  }

  private void start() {
    int started;
    Process launched;
    synchronized (this) {
      if (session == null || !(state instanceof PlannerState.Waiting)) {
        return; // stopped, or already started
      }
      starts++;
      started = state.generation() + 1;
      startedNanos = System.nanoTime();
      try {
        if (gateway == null) {
          gateway = new Py4JServer(session.sparkContext().getConf());
          gateway.start();
        }
        launched = PlannerProcess.launch(settings.python(), session.sparkContext().applicationId(), gateway, started, output);
        state = state.launched(launched);
      } catch (IOException | RuntimeException e) {
        state = state.launchFailed();
        warn("zskip's planner could not be started with " + PLANNER_PYTHON.key() + "=" + settings.python() + ": " + e.getMessage());
        schedule(nextBackoff());
        return;
      }
    }
    launched.onExit().thenRun(() -> exited(started, launched));
    supervisor.schedule(() -> notStarted(started), settings.startTimeoutMs(), TimeUnit.MILLISECONDS);
  }

  private synchronized void notStarted(int generation) {
    if (state instanceof PlannerState.Starting && state.is(generation)) {
      failed(generation, "did not start within " + settings.startTimeoutMs() + " ms (" + PLANNER_START_TIMEOUT.key() + ")");
    }
  }

  private synchronized void exited(int generation, Process ended) {
    if (!state.is(generation) || state.process() != ended) {
      return; // stopped on purpose, or replaced
    }
    String last;
    synchronized (output) {
      last = output.isEmpty() ? "" : ": " + output.peekLast();
    }
    state = state.failed();
    overrun = null;
    warn("zskip's planner (process " + ended.pid() + ") exited with code " + ended.exitValue() + last);
    schedule(nextBackoff());
  }

  private synchronized void stopProcess() {
    Process stopping = state.process();
    state = state.stopped();
    if (stopping != null) {
      stopping.destroy(); // its stdin closes too: it exits
    }
  }

  /** Stop the process for good (the application ended); the next session of a new application starts one again. */
  synchronized void stop() {
    stopProcess();
    firstStart = false;
    session = null;
    notifyAll();
  }
}
