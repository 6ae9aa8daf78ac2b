/**
 * Star joins: the joins of a query's plan ({@link io.zskip.join.JoinFinder}), each side ({@link
 * io.zskip.join.JoinSide}), and the dimension keys a filtered side matches, run as a bounded Spark job
 * ({@link io.zskip.join.JoinKeys}).
 */
package io.zskip.join;
