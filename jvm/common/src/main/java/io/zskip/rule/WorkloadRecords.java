package io.zskip.rule;

import com.fasterxml.jackson.databind.JsonNode;
import io.zskip.bridge.Answers;
import io.zskip.scan.Scans;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workload records zskip's rule leaves to the Python recorder for the scans it decided alone:
 * gathered, and handed over in one call per recorder at most every {@link #DELAY_MS} ms on a thread of
 * their own, so a query neither waits for its record nor pays a py4j call for it.  The recorder answers
 * with the plans it made for the records; those are remembered ({@link RememberedPlans#learn}), so the
 * same query again only repeats its record.  At most {@link #MAX_WAITING} wait; past that, records are
 * dropped and counted.
 */
final class WorkloadRecords {
  static final int MAX_WAITING = 4096;
  static final long DELAY_MS = 500;
  static final AtomicLong DROPPED = new AtomicLong();
  private static final Logger LOG = LoggerFactory.getLogger("zskip.PlanHook");
  private static final ScheduledExecutorService THREAD = Executors.newSingleThreadScheduledExecutor(runnable -> {
    Thread thread = new Thread(runnable, "zskip-workload-records");
    thread.setDaemon(true);
    return thread;
  });

  /** Scans to record, with the recorder of the session they came from and their memory keys. */
  private record Waiting(Planner recorder, Scans scans, RememberedPlans.Keys keys) {}

  private static final List<Waiting> WAITING = new ArrayList<>();
  private static boolean scheduled;

  private WorkloadRecords() {}

  /** Leave {@code scans} (their {@link Scans#recordWork}) to {@code recorder}; false when dropped. */
  static synchronized boolean add(Planner recorder, Scans scans, RememberedPlans.Keys keys) {
    if (WAITING.size() >= MAX_WAITING) {
      DROPPED.incrementAndGet();
      return false;
    }
    WAITING.add(new Waiting(recorder, scans, keys));
    if (!scheduled) {
      scheduled = true;
      THREAD.schedule(WorkloadRecords::handOver, DELAY_MS, TimeUnit.MILLISECONDS);
    }
    return true;
  }

  /** Waits (at most {@code millis} ms) until every record left so far is handed over; whether it is. */
  static boolean await(long millis) throws InterruptedException {
    Future<?> done = THREAD.submit(WorkloadRecords::handOver);
    try {
      done.get(millis, TimeUnit.MILLISECONDS);
      return true;
    } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
      return false;
    }
  }

  private static void handOver() {
    List<Waiting> taken;
    synchronized (WorkloadRecords.class) {
      taken = new ArrayList<>(WAITING);
      WAITING.clear();
      scheduled = false;
    }
    Map<Planner, List<Waiting>> byRecorder = new IdentityHashMap<>();
    for (Waiting waiting : taken) {
      byRecorder.computeIfAbsent(waiting.recorder(), r -> new ArrayList<>()).add(waiting);
    }
    for (Map.Entry<Planner, List<Waiting>> batch : byRecorder.entrySet()) {
      List<Waiting> items = batch.getValue();
      try {
        List<Scans> scans = new ArrayList<>();
        items.forEach(item -> scans.add(item.scans()));
        String answers = batch.getKey().record(scans);
        if (answers == null || answers.isEmpty()) {
          continue;
        }
        JsonNode each = Answers.MAPPER.readTree(answers);
        for (int i = 0; i < items.size() && i < each.size(); i++) {
          if (each.get(i).has("scans")) {
            RememberedPlans.learn(items.get(i).scans(), items.get(i).keys(), each.get(i));
          }
        }
      } catch (Exception e) { // the Python planner went away: nothing to record into
        LOG.debug("zskip's workload recorder failed: {}", e.toString());
      }
    }
  }
}
