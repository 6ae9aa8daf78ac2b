/**
 * The Python planner process the JVM hosts for sessions zskip's extension turned zskip on in ({@link
 * io.zskip.hosted.HostedPlanner}): its supervision and restarts, its life as one {@link
 * io.zskip.hosted.PlannerState} (stopped, waiting, starting, ready), its launch ({@link
 * io.zskip.hosted.PlannerProcess}), the procedures relayed to it ({@link io.zskip.hosted.ProcedureRelay}),
 * and the secret its callback channel checks ({@link io.zskip.hosted.Callbacks}).
 */
package io.zskip.hosted;
