package io.zskip.extensions;

import io.zskip.hosted.HostedPlanner;
import io.zskip.rule.TurnOn;
import io.zskip.spark.SparkLine;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.SparkSessionExtensionsProvider;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * zskip for every session of an application, from its configuration alone:
 * {@code spark.sql.extensions=io.zskip.extensions.ZskipSparkSessionExtensions} with zskip's jar on the
 * classpath ({@code zskip jars --extension} prints the lines).  Each session gets zskip's optimizer rule
 * on its first query ({@link TurnOn}), planning through the Python planner zskip hosts for the
 * application, which starts with the application ({@link HostedPlanner#startWithApplication}); {@code spark.zskip.enabled=false} (also as a session's {@code SET}) turns it off.  A
 * Python driver that enables zskip itself ({@code zskip.session()}, {@code zskip.enable}) keeps
 * planning in the driver, as without the extension.
 */
public class ZskipSparkSessionExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit>
    implements SparkSessionExtensionsProvider {
  private static final long serialVersionUID = 1L;

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPostHocResolutionRule(TurnOn.BUILDER);
    SparkLine.extend(extensions); // Spark 3.5: CALL for zskip's procedures
    HostedPlanner.startWithApplication(); // ready before the first client's first query
    return BoxedUnit.UNIT;
  }
}
