/**
 * zskip's procedures ({@code CALL zskip.system.*}): their declarations and calls ({@link
 * io.zskip.procedures.Procedures}), relayed to the hosted planner, and the procedure catalog of each
 * Spark line.
 */
package io.zskip.procedures;
