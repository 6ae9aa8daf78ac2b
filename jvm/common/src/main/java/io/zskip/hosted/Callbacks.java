package io.zskip.hosted;

import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;
import javax.net.SocketFactory;
import py4j.CallbackClient;
import py4j.Gateway;
import py4j.GatewayServer;
import py4j.Py4JJavaServer;
import py4j.Py4JPythonClient;
import py4j.PythonClient;

/**
 * The JVM's half of an authenticated py4j callback channel: the client this JVM calls a Python
 * process's callback server with (zskip's planner, its procedures) sends the application's secret on
 * every connection it opens, and the Python side refuses a connection that does not.
 *
 * <p>Why this exists: PySpark starts its callback server on a free port and then points the JVM's
 * client at it with {@code GatewayServer.resetCallbackClient}, which copies the client without its
 * token ({@code PythonClient.copyWith} drops it, py4j 0.10.9), so the callback server of a PySpark
 * process takes unauthenticated calls from any local process.  zskip's Python side arms its callback
 * server with the gateway's own secret before it starts ({@code zskip.iceberg.callbacks}), then has
 * this class swap the JVM's client for one that carries that secret.  py4j has no setter for the
 * gateway's client, so its field is set by reflection (py4j is on the class path, not a named module).
 */
public final class Callbacks {
  private Callbacks() {}

  /**
   * Point {@code server}'s gateway at the callback server it now calls (the address and port of its
   * current client) with a client that authenticates with {@code token} (as py4j stores it: escaped).
   */
  public static synchronized void authenticate(GatewayServer server, String token) throws ReflectiveOperationException {
    if (token == null || token.isEmpty()) {
      throw new IllegalArgumentException("a callback channel needs the gateway's secret");
    }
    Gateway gateway = server.getGateway();
    Py4JPythonClient current = gateway.getCallbackClient();
    Py4JPythonClient authenticated;
    if (current instanceof PythonClient pinned) { // PYSPARK_PIN_THREAD (the default): a ClientServer
      authenticated = new PythonClient(gateway, server.getCustomCommands(), pinned.getPort(), pinned.getAddress(),
          CallbackClient.DEFAULT_MIN_CONNECTION_TIME, TimeUnit.SECONDS, SocketFactory.getDefault(),
          (Py4JJavaServer) server, pinned.isMemoryManagementEnabled(), pinned.getReadTimeout(), token);
    } else if (current instanceof CallbackClient plain) {
      authenticated = new CallbackClient(plain.getPort(), plain.getAddress(), token,
          CallbackClient.DEFAULT_MIN_CONNECTION_TIME, TimeUnit.SECONDS, SocketFactory.getDefault(),
          plain.isMemoryManagementEnabled(), plain.getReadTimeout());
    } else {
      throw new IllegalStateException("py4j's gateway has no callback client to authenticate: " + current);
    }
    Field client = Gateway.class.getDeclaredField("cbClient");
    client.setAccessible(true);
    client.set(gateway, authenticated);
    current.shutdown(); // its pooled connections (none authenticated) are closed
  }
}
