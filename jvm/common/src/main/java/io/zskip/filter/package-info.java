/**
 * Iceberg filters as JSON for the planner ({@link io.zskip.filter.ExpressionJson}), bound once per
 * scan ({@link io.zskip.filter.BoundFilters}), and when a table's min/max alone answers them ({@link
 * io.zskip.filter.MinMaxSuffices}).
 */
package io.zskip.filter;
