package io.zskip.join;

import java.util.List;
import org.apache.iceberg.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.read.Scan;

/**
 * An equi-join of a fact scan's column to a key of a filtered dimension table: every row the join
 * outputs has a fact key among the keys the dimension side yields.
 *
 * @param scan the fact scan (an index into the query's scans)
 * @param column the fact column the join compares
 * @param side the dimension side: Projects and deterministic Filters over one Iceberg scan
 * @param key the dimension's key
 * @param dimensionScan that Iceberg scan
 * @param filter the side's conditions as Spark SQL (or, without any, the filters pushed to its scan)
 * @param allPushed whether every condition of the side reached Iceberg
 * @param conditions the side's conditions and pushed filters, as text: what its keys depend on
 * @param named the dimension columns the conditions name
 * @param pushed the filters pushed to the dimension's scan
 */
public record JoinSide(
    int scan,
    String column,
    LogicalPlan side,
    Attribute key,
    Scan dimensionScan,
    String filter,
    boolean allPushed,
    String conditions,
    List<String> named,
    List<Expression> pushed) {}
