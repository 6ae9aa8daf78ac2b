/**
 * Clustered writes: the curve keys and file routes of {@code zskip.optimize} as Java UDFs on executors
 * ({@link io.zskip.write.CurveKeys}), and the write order zskip gives Iceberg writes of a clustered
 * table ({@link io.zskip.write.ClusteredWrites}).
 */
package io.zskip.write;
