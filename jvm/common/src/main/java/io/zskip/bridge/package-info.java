/**
 * zskip's entry point in the JVM: what the Python planner asks, each question answered in one py4j
 * call ({@link io.zskip.bridge.Bridge}), answers as JSON ({@link io.zskip.bridge.Answers}), results
 * collected as one Arrow stream ({@link io.zskip.bridge.ArrowCollect}).
 */
package io.zskip.bridge;
