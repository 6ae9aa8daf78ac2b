/**
 * zskip's Spark session extension ({@link io.zskip.extensions.ZskipSparkSessionExtensions}): zskip for
 * every session of an application, from its configuration alone.
 */
package io.zskip.extensions;
