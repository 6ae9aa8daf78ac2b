/**
 * A query's Iceberg scans and the row groups they read: {@link io.zskip.scan.Scans} describes them in
 * one call and applies the planner's answer, as staged task sets or behind a {@link
 * io.zskip.scan.ScanView}; a kept byte range of a file is a {@link io.zskip.scan.RowGroupRange}; a
 * snapshot's file list is kept per table state ({@link io.zskip.scan.SnapshotFiles}); what a run read
 * is measured from its tasks ({@link io.zskip.scan.ReadMeasure}).
 */
package io.zskip.scan;
