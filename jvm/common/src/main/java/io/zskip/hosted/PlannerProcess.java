package io.zskip.hosted;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Deque;
import java.util.Map;
import org.apache.spark.api.python.Py4JServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Launching the hosted planner's Python process: {@code python -s -m zskip.hosted} in an empty
 * directory only this JVM's user can enter, told the gateway's port and secret and its generation
 * through its environment, its output pumped into the log.
 */
final class PlannerProcess {
  static final String MODULE = "zskip.hosted";
  static final int OUTPUT_KEPT = 20; // the process's last lines, quoted when it exits
  private static final Logger LOG = LoggerFactory.getLogger("zskip.planner");
  private static File workingDirectory; // the processes': empty, private to this JVM's user

  private PlannerProcess() {}

  /**
   * Starts generation {@code generation} of the planner with {@code python} for application {@code
   * applicationId}, calling back through {@code gateway}; its last {@link #OUTPUT_KEPT} lines are kept
   * in {@code output} (emptied first), which is locked while written.
   */
  static Process launch(String python, String applicationId, Py4JServer gateway, int generation, Deque<String> output)
      throws IOException {
    // -s: not the user's site directory; a private, empty working directory: Python puts the
    // working directory first on sys.path for -m, and the server's (where anyone may have left an
    // argparse.py) must not be imported from
    ProcessBuilder builder = new ProcessBuilder(
        python, "-s", "-m", MODULE, "--application", applicationId);
    builder.directory(privateDirectory());
    Map<String, String> env = builder.environment();
    env.remove("SPARK_CONNECT_MODE_ENABLED"); // the process drives this JVM's session, not a Connect client
    env.put("PYSPARK_GATEWAY_PORT", String.valueOf(gateway.getListeningPort()));
    env.put("PYSPARK_GATEWAY_SECRET", gateway.secret());
    env.put("PYSPARK_PIN_THREAD", System.getenv().getOrDefault("PYSPARK_PIN_THREAD", "true")); // as Py4JServer chose
    env.put("ZSKIP_PLANNER_GENERATION", String.valueOf(generation));
    builder.redirectErrorStream(true);
    synchronized (output) {
      output.clear();
    }
    Process launched = builder.start();
    Thread pumping = new Thread(() -> pump(launched, output), "zskip-planner-output");
    pumping.setDaemon(true);
    pumping.start();
    return launched;
  }

  /** An empty directory only this JVM's user can enter, made once per JVM and removed at exit. */
  private static synchronized File privateDirectory() throws IOException {
    if (workingDirectory == null || !workingDirectory.isDirectory()) {
      Path made = Files.createTempDirectory("zskip-planner-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      workingDirectory = made.toFile();
      workingDirectory.deleteOnExit();
    }
    return workingDirectory;
  }

  /** The process's output into the log, its last lines kept for the warning when it exits. */
  private static void pump(Process from, Deque<String> output) {
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
}
