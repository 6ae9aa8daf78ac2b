/**
 * The Python planner process the JVM hosts for sessions zskip's extension turned zskip on in ({@link
 * io.zskip.hosted.HostedPlanner}): its start, supervision and restarts, the secret its callback
 * channel checks ({@link io.zskip.hosted.Callbacks}).
 */
package io.zskip.hosted;
