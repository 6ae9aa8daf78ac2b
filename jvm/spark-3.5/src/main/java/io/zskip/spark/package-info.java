/**
 * What differs between Spark lines, one class per line in each module's own source folder ({@code
 * jvm/spark-3.5}, {@code jvm/spark-4.1}): {@link io.zskip.spark.SparkLine} and the query executions
 * zskip builds.
 */
package io.zskip.spark;
