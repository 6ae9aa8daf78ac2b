package io.zskip.iceberg;

import io.zskip.spark.SparkLine;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ScanTask;
import org.apache.iceberg.ScanTaskGroup;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.Scan;

/**
 * The members of Iceberg's Spark scans zskip needs that Iceberg does not make public: a batch query
 * scan's table, tasks, pushed filters and Iceberg scan, and its runtime-filtering hook
 * ({@code resetTasks}).  They are protected or package-private in Iceberg's runtime, so they are
 * reached by reflection, each method looked up once per class.  Everything public is called directly.
 */
public final class Members {
  /** Iceberg's scan of a table's snapshot (runtime filters apply to it; zskip plans only these). */
  static final String BATCH_QUERY_SCAN = "org.apache.iceberg.spark.source.SparkBatchQueryScan";

  private static final ConcurrentHashMap<String, Method> METHODS = new ConcurrentHashMap<>();

  private Members() {}

  public static boolean isBatchQueryScan(Object scan) {
    return scan != null && scan.getClass().getName().equals(BATCH_QUERY_SCAN);
  }

  public static Table table(Scan scan) throws ReflectiveOperationException {
    return (Table) call(scan, "table");
  }

  @SuppressWarnings("unchecked")
  public static List<FileScanTask> tasks(Scan scan) throws ReflectiveOperationException {
    return (List<FileScanTask>) call(scan, "tasks");
  }

  @SuppressWarnings("unchecked")
  public static List<Expression> filters(Scan scan) throws ReflectiveOperationException {
    return (List<Expression>) call(scan, SparkLine.FILTERS);
  }

  /** The Iceberg scan (a {@code BatchScan} of one snapshot, or an incremental scan) behind {@code scan}. */
  public static Object icebergScan(Scan scan) throws ReflectiveOperationException {
    return call(scan, "scan");
  }

  /** The tasks an input partition of an Iceberg scan reads (Iceberg's partition class is package-private). */
  @SuppressWarnings("unchecked")
  public static ScanTaskGroup<ScanTask> taskGroup(InputPartition partition) throws ReflectiveOperationException {
    return (ScanTaskGroup<ScanTask>) call(partition, "taskGroup");
  }

  /** Has {@code scan} read {@code tasks} instead of those it planned (Iceberg's runtime-filtering hook). */
  public static void resetTasks(Scan scan, List<? extends FileScanTask> tasks) throws ReflectiveOperationException {
    Method method = find(scan.getClass(), "resetTasks", List.class);
    invoke(method, scan, tasks);
  }

  /** The value of field {@code name} that {@code target} has or inherits, private or not. */
  public static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> cls = target.getClass(); cls != null; cls = cls.getSuperclass()) {
      try {
        Field found = cls.getDeclaredField(name);
        found.setAccessible(true);
        return found.get(target);
      } catch (NoSuchFieldException e) {
        // declared further up
      }
    }
    throw new NoSuchFieldException(name + " of " + target.getClass().getName());
  }

  /** Calls the no-argument method {@code name} that {@code target} has or inherits, protected or not. */
  public static Object call(Object target, String name) throws ReflectiveOperationException {
    return invoke(find(target.getClass(), name), target);
  }

  private static Method find(Class<?> type, String name, Class<?>... parameters) throws NoSuchMethodException {
    String key = type.getName() + "#" + name + "/" + parameters.length;
    Method known = METHODS.get(key);
    if (known != null) {
      return known;
    }
    for (Class<?> cls = type; cls != null; cls = cls.getSuperclass()) {
      try {
        Method method = cls.getDeclaredMethod(name, parameters);
        method.setAccessible(true);
        METHODS.put(key, method);
        return method;
      } catch (NoSuchMethodException e) {
        // declared further up
      }
    }
    throw new NoSuchMethodException(name + " of " + type.getName());
  }

  private static Object invoke(Method method, Object target, Object... arguments) throws ReflectiveOperationException {
    try {
      return method.invoke(target, arguments);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw e;
    }
  }
}
