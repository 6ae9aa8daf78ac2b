package io.zskip.scan;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.spark.sql.connector.read.Scan;

/**
 * A scan zskip planned, seen through a proxy of every interface it has: its description (what explain
 * and the Spark UI print) ends with what zskip kept, and it (and its batch) equals only a view of an
 * equal scan that keeps the same tasks, so Spark never reuses the output of a scan that kept other
 * tasks (or all of them) in its place.  Everything else is the scan's own.
 */
final class ScanView implements InvocationHandler {
  private final Object target;
  private final String note;
  private final String kept; // "all", or a digest of the kept tasks

  private ScanView(Object target, String note, String kept) {
    this.target = target;
    this.note = note;
    this.kept = kept;
  }

  static Scan of(Scan target, String note, String kept) {
    return (Scan) proxy(target, new ScanView(target, note, kept));
  }

  /** The scan behind {@code scan} when it is a view of one, else {@code scan} itself. */
  static Object unwrap(Object scan) {
    ScanView view = viewOf(scan);
    return view == null ? scan : view.target;
  }

  private static Object proxy(Object target, InvocationHandler handler) {
    Set<Class<?>> interfaces = new LinkedHashSet<>();
    for (Class<?> cls = target.getClass(); cls != null; cls = cls.getSuperclass()) {
      interfaces.addAll(Arrays.asList(cls.getInterfaces()));
    }
    return Proxy.newProxyInstance(target.getClass().getClassLoader(), interfaces.toArray(new Class<?>[0]), handler);
  }

  private static ScanView viewOf(Object other) {
    if (other != null && Proxy.isProxyClass(other.getClass())
        && Proxy.getInvocationHandler(other) instanceof ScanView view) {
      return view;
    }
    return null;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    int arity = args == null ? 0 : args.length;
    if (name.equals("equals") && arity == 1) {
      ScanView other = viewOf(args[0]);
      return other != null && kept.equals(other.kept) && target.equals(other.target);
    }
    if (name.equals("hashCode") && arity == 0) {
      return target.hashCode() * 31 + kept.hashCode();
    }
    if (name.equals("description") && arity == 0) {
      return invoked(method, args) + " " + note;
    }
    if (name.equals("toString") && arity == 0) {
      return target + " " + note;
    }
    Object result = invoked(method, args);
    if (name.equals("toBatch") && arity == 0 && result != null) {
      return proxy(result, new ScanView(result, note, kept)); // its equality is the scan's
    }
    return result;
  }

  private Object invoked(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
