package io.zskip.hosted;

import io.zskip.bridge.Bridge;
import io.zskip.rule.PlanHook;
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
 * <p>Never worse than Spark: while the process is starting (unless {@value #START_WAIT} says to wait
 * for it), after it died, when it takes longer than {@value #TIMEOUT} to plan or cannot be started,
 * queries keep Spark's plans (answers the rule remembers still apply).  Each such incident is logged
 * once, as a warning, and the process is started again, after 1 s, then 2, 4, ... up to 60 s while it
 * keeps failing.
 */
public final class HostedPlanner implements Planner {
  /** The Python interpreter (with zskip and PySpark) to run the planner with; default: PySpark's workers' one. */
  public static final String PYTHON = "spark.zskip.planner.python";
  /** How long a query waits for an answer before it keeps Spark's plan and the planner is restarted. */
  public static final String TIMEOUT = "spark.zskip.planner.timeout";
  /**
   * How long a query waits for the planner's first start (default 30 s; the process starts with the
   * application, so a query seldom waits; a failed start ends the wait at once).
   */
  public static final String START_WAIT = "spark.zskip.planner.startWait";
  /** How long the process may take to start and register before it is restarted. */
  public static final String START_TIMEOUT = "spark.zskip.planner.startTimeout";
  /** How many procedures (CALL zskip.system.*) may run at once in the application; a CALL past it is refused. */
  public static final String MAX_PROCEDURES = "spark.zskip.procedures.maxConcurrent";
  /**
   * How long a procedure may run before its Spark jobs are cancelled and the CALL fails (default 24 h);
   * a session may set a shorter bound for its own calls, never a longer one.
   */
  public static final String PROCEDURE_TIMEOUT = "spark.zskip.procedures.timeout";
  static final String MODULE = "zskip.hosted";
  public static final HostedPlanner INSTANCE = new HostedPlanner();
  private static final Logger LOG = LoggerFactory.getLogger("zskip.planner");
  private static final long FIRST_BACKOFF_MS = 1_000;
  private static final long MAX_BACKOFF_MS = 60_000;
  private static final int OUTPUT_KEPT = 20; // the process's last lines, quoted when it exits

  /** What the application's configuration says (read once: a session cannot change it). */
  record Settings(String python, long timeoutMs, long startWaitMs, long startTimeoutMs, int maxProcedures, long procedureTimeoutMs) {
    static Settings of(SparkConf conf) {
      String workers = conf.get("spark.pyspark.python", System.getenv().getOrDefault("PYSPARK_PYTHON", "python3"));
      return new Settings(
          conf.get(PYTHON, workers),
          conf.getTimeAsMs(TIMEOUT, "30s"),
          conf.getTimeAsMs(START_WAIT, "30s"),
          conf.getTimeAsMs(START_TIMEOUT, "120s"),
          Math.max(1, conf.getInt(MAX_PROCEDURES, 8)),
          positive(conf.getTimeAsMs(PROCEDURE_TIMEOUT, "24h")));
    }

    /** The bound of a procedure called in {@code session}: the application's, or the session's if shorter. */
    long procedureTimeoutMs(SparkSession session) {
      String own = session.conf().get(PROCEDURE_TIMEOUT, null);
      if (own == null) {
        return procedureTimeoutMs;
      }
      long ms;
      try {
        ms = new SparkConf(false).set(PROCEDURE_TIMEOUT, own).getTimeAsMs(PROCEDURE_TIMEOUT);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(PROCEDURE_TIMEOUT + " is '" + own + "', which is not a duration: give one like 90s, 30min or 2h");
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
  private record Registered(
      int generation,
      Function<Scans, String> plan,
      Function<List<Scans>, String> record,
      BiFunction<SparkSession, String, String> procedures,
      String procedureSpecs) {}

  /** Local properties a call carries to the thread that runs it: job group and tags (cancelling them cancels it), description, pool. */
  private static final List<String> CARRIED = List.of(
      "spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel", "spark.scheduler.pool", "spark.job.tags");

  private final ScheduledExecutorService supervisor = Executors.newSingleThreadScheduledExecutor(daemon("zskip-planner-supervisor"));
  private final ExecutorService calls = Executors.newCachedThreadPool(daemon("zskip-planner-call"));
  private final AtomicInteger runningProcedures = new AtomicInteger();
  private final AtomicInteger procedureCalls = new AtomicInteger();
  /** The tags of procedures past their bound that have not ended yet: a job they start is cancelled. */
  private final java.util.Set<String> overranProcedures = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** A call that overran the timeout while procedures ran in the process (it is not restarted for it). */
  private record Overrun(int generation, java.util.concurrent.atomic.AtomicBoolean finished, String what) {}

  private volatile Overrun overrun;
  private volatile Registered registered;
  private volatile String[] properties = new String[0]; // the last registered planner's: kept while it restarts
  private final Deque<String> output = new ArrayDeque<>();
  // guarded by this
  private SparkSession session;
  private Settings settings;
  private Py4JServer gateway;
  private Process process;
  private int generation;
  private boolean starting;
  private boolean incident; // an incident is under way: warned once, quiet until the planner is back
  private boolean firstStart; // the application's first start is under way, not failed yet: START_WAIT applies
  private long backoffMs = FIRST_BACKOFF_MS;
  private long startedNanos;
  private int starts;
  private File workingDirectory; // the process's: empty, private to this JVM's user

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
        cancelIfOverran(context, start);
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
   * {@value #START_TIMEOUT}).  A server's first client is then pruned without waiting for the planner.
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
            if (session.sparkContext().getConf().getBoolean(PlanHook.ENABLED, true)) {
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
      if (generation != INSTANCE.generation || INSTANCE.process == null) {
        return false;
      }
      INSTANCE.properties = Bridge.split(properties);
      INSTANCE.registered = new Registered(generation, plan, record, procedures, procedureSpecs);
      INSTANCE.starting = false;
      INSTANCE.backoffMs = FIRST_BACKOFF_MS;
      long millis = (System.nanoTime() - INSTANCE.startedNanos) / 1_000_000;
      if (INSTANCE.incident) {
        LOG.info("zskip's planner is back (process {}, started in {} ms): queries are pruned again", INSTANCE.process.pid(), millis);
      } else {
        LOG.info("zskip's planner is ready (process {}, started in {} ms)", INSTANCE.process.pid(), millis);
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
      HostedPlanner p = INSTANCE;
      String state = p.registered != null ? "ready" : p.process != null ? "starting" : p.starting ? "waiting" : "stopped";
      return state + " " + p.generation + " " + (p.process == null ? -1 : p.process.pid()) + " " + p.starts;
    }
  }

  @Override
  public String[] properties() {
    return properties;
  }

  @Override
  public boolean ready() {
    if (registered != null) {
      return true;
    }
    synchronized (this) {
      if (settings == null || settings.startWaitMs() <= 0 || !firstStart) {
        return registered != null; // only the first start is waited for: a restart is an incident
      }
      long deadline = System.nanoTime() + settings.startWaitMs() * 1_000_000;
      try {
        while (registered == null && firstStart && System.nanoTime() < deadline) {
          wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return registered != null;
    }
  }

  @Override
  public String plan(Scans scans) {
    Registered planner = registered;
    if (planner == null) {
      throw new Unavailable("zskip's planner is not running");
    }
    if (overrun != null) {
      throw new Unavailable("zskip's planner has not answered a query that overran " + TIMEOUT + " yet");
    }
    return call(planner, scans.session(), () -> planner.plan().apply(scans), "plan a query");
  }

  @Override
  public String record(List<Scans> batch) {
    Registered planner = registered;
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
      failed(planner.generation(), "took longer than " + timeout + " ms (" + TIMEOUT + ") to " + what);
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
   * is started if it is not, and waited for (at most {@value #START_TIMEOUT}).
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
    return INSTANCE.runProcedure(name, arguments);
  }

  private String runProcedure(String name, String arguments) {
    Registered planner = awaitRegistered("run " + name);
    int limit;
    synchronized (this) {
      limit = settings.maxProcedures();
    }
    if (runningProcedures.incrementAndGet() > limit) {
      runningProcedures.decrementAndGet();
      throw new IllegalStateException("zskip runs at most " + limit + " procedures at once in this application ("
          + MAX_PROCEDURES + "), and that many are running: call " + name + " again when one has ended");
    }
    try {
      return runProcedureNow(planner, name, arguments);
    } finally {
      if (runningProcedures.decrementAndGet() == 0) {
        proceduresEnded();
      }
    }
  }

  private String runProcedureNow(Registered planner, String name, String arguments) {
    SparkSession caller = SparkSession.active(); // the session the CALL runs in: the procedure runs there too
    org.apache.spark.SparkContext context = caller.sparkContext();
    long bound;
    synchronized (this) {
      bound = settings.procedureTimeoutMs(caller);
    }
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
      LOG.warn("zskip's {} ran longer than {} ms ({}): its Spark jobs are cancelled", name, bound, PROCEDURE_TIMEOUT);
      stop(answer, tag, context, name);
      throw new IllegalStateException("zskip's " + name + " ran longer than " + bound + " ms (" + PROCEDURE_TIMEOUT
          + "): its Spark jobs are cancelled, and what it had not committed is not published; call it again "
          + "with a longer bound");
    } catch (ExecutionException e) {
      String why = String.valueOf(e.getCause()).split("\n")[0];
      failed(planner.generation(), "could not be reached to run " + name + ": " + why);
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

  private Registered awaitRegistered(String what) {
    Registered planner = registered;
    if (planner != null) {
      return planner;
    }
    synchronized (this) {
      long waitMs = settings == null ? 0 : settings.startTimeoutMs();
      long deadline = System.nanoTime() + waitMs * 1_000_000;
      try {
        while (registered == null && (process != null || starting) && System.nanoTime() < deadline) {
          wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (registered == null) {
        throw new IllegalStateException("zskip's planner process is not running, so it cannot " + what
            + " (see the WARN lines of zskip.planner in the driver's log; " + PYTHON + " names its Python)");
      }
      return registered;
    }
  }

  /**
   * A call of {@code generation} overran the timeout: while procedures run in the process it is not
   * restarted (that would end them): queries keep Spark's plans until the call answers, or, if it has
   * not when the last procedure ends, the process is restarted then.  Whether that is the case.
   */
  private synchronized boolean overran(int generation, java.util.concurrent.atomic.AtomicBoolean finished, long timeout, String what) {
    int running = runningProcedures.get();
    if (running == 0 || generation != this.generation || process == null || finished.get()) {
      return false;
    }
    overrun = new Overrun(generation, finished, what);
    LOG.warn("zskip's planner (process {}) took longer than {} ms ({}) to {}; {} procedure(s) run in it, so it is "
        + "restarted only if it has not answered when they end; queries keep Spark's plans until it answers",
        process.pid(), timeout, TIMEOUT, what, running);
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

  /** A job of a procedure past its bound is cancelled as it starts. */
  private void cancelIfOverran(org.apache.spark.SparkContext context, org.apache.spark.scheduler.SparkListenerJobStart start) {
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

  /** The process of {@code generation} failed: warn (once per incident) and start it again. */
  private synchronized void failed(int generation, String why) {
    if (generation != this.generation || process == null) {
      return; // an incident already being handled
    }
    overrun = null;
    warn("zskip's planner (process " + process.pid() + ") " + why);
    Process failing = process;
    process = null;
    registered = null;
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
    starting = true;
    supervisor.schedule(this::start, delayMs, TimeUnit.MILLISECONDS);
  }

  private void start() {
    int started;
    Process launched;
    synchronized (this) {
      if (session == null || process != null) {
        return; // stopped, or already started
      }
      generation++;
      starts++;
      started = generation;
      output.clear();
      startedNanos = System.nanoTime();
      try {
        if (gateway == null) {
          gateway = new Py4JServer(session.sparkContext().getConf());
          gateway.start();
        }
        // -s: not the user's site directory; a private, empty working directory: Python puts the
        // working directory first on sys.path for -m, and the server's (where anyone may have left an
        // argparse.py) must not be imported from
        ProcessBuilder builder = new ProcessBuilder(
            settings.python(), "-s", "-m", MODULE, "--application", session.sparkContext().applicationId());
        builder.directory(privateDirectory());
        Map<String, String> env = builder.environment();
        env.remove("SPARK_CONNECT_MODE_ENABLED"); // the process drives this JVM's session, not a Connect client
        env.put("PYSPARK_GATEWAY_PORT", String.valueOf(gateway.getListeningPort()));
        env.put("PYSPARK_GATEWAY_SECRET", gateway.secret());
        env.put("PYSPARK_PIN_THREAD", System.getenv().getOrDefault("PYSPARK_PIN_THREAD", "true")); // as Py4JServer chose
        env.put("ZSKIP_PLANNER_GENERATION", String.valueOf(started));
        builder.redirectErrorStream(true);
        launched = builder.start();
        process = launched;
      } catch (IOException | RuntimeException e) {
        warn("zskip's planner could not be started with " + PYTHON + "=" + settings.python() + ": " + e.getMessage());
        schedule(nextBackoff());
        return;
      }
    }
    Thread pump = new Thread(() -> pump(launched), "zskip-planner-output");
    pump.setDaemon(true);
    pump.start();
    launched.onExit().thenRun(() -> exited(started, launched));
    supervisor.schedule(() -> notStarted(started), settings.startTimeoutMs(), TimeUnit.MILLISECONDS);
  }

  /** An empty directory only this JVM's user can enter, made once per JVM and removed at exit. */
  private File privateDirectory() throws IOException {
    if (workingDirectory == null || !workingDirectory.isDirectory()) {
      Path made = Files.createTempDirectory("zskip-planner-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      workingDirectory = made.toFile();
      workingDirectory.deleteOnExit();
    }
    return workingDirectory;
  }

  private synchronized void notStarted(int generation) {
    if (generation == this.generation && registered == null && process != null) {
      failed(generation, "did not start within " + settings.startTimeoutMs() + " ms (" + START_TIMEOUT + ")");
    }
  }

  private synchronized void exited(int generation, Process ended) {
    if (generation != this.generation || process != ended) {
      return; // stopped on purpose, or replaced
    }
    String last;
    synchronized (output) {
      last = output.isEmpty() ? "" : ": " + output.peekLast();
    }
    process = null;
    registered = null;
    overrun = null;
    warn("zskip's planner (process " + ended.pid() + ") exited with code " + ended.exitValue() + last);
    schedule(nextBackoff());
  }

  /** The process's output into the log, its last lines kept for the warning when it exits. */
  private void pump(Process from) {
    try (BufferedReader lines = new BufferedReader(new InputStreamReader(from.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = lines.readLine()) != null) {
        LOG.info("planner: {}", line);
        synchronized (output) {
          if (output.size() == OUTPUT_KEPT) {
            output.removeFirst();
          }
          output.addLast(line);
        }
      }
    } catch (IOException e) {
      LOG.debug("zskip's planner output ended: {}", e.toString());
    }
  }

  private synchronized void stopProcess() {
    registered = null;
    if (process != null) {
      Process stopping = process;
      process = null;
      stopping.destroy(); // its stdin closes too: it exits
    }
  }

  /** Stop the process for good (the application ended); the next session of a new application starts one again. */
  synchronized void stop() {
    stopProcess();
    starting = false;
    firstStart = false;
    session = null;
    notifyAll();
  }
}
