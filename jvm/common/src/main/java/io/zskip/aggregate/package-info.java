/**
 * Aggregates answered in part from zskip's knowledge of row groups: the shape of an aggregate over a
 * filtered scan that the planner may answer ({@link io.zskip.aggregate.AggregateShape}), and the plan
 * that merges its answers with what the scan still reads ({@link io.zskip.aggregate.PartialRows}).
 */
package io.zskip.aggregate;
