/**
 * What zskip reads of Iceberg's classes that they do not make public, in one place ({@link
 * io.zskip.iceberg.Members}), and how a table's files are reached ({@link
 * io.zskip.iceberg.StorageSettings}).
 */
package io.zskip.iceberg;
