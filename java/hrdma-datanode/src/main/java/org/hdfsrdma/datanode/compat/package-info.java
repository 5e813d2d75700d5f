/**
 * The only package that touches Hadoop-internal DataNode classes
 * ({@code DataNode}, {@code FsDatasetSpi}, {@code BlockPoolTokenSecretManager},
 * {@code ReplicaHandler}, the DataNode's IPC server for {@code evictWriters} and
 * {@code shutdownDatanode}, its socket factory and SASL client for a write forwarded over
 * stock's protocol). Public methods and fields only, no reflection: when a Hadoop
 * release changes one of them, this package is what has to change.
 *
 * <p>Verified against Apache Hadoop 3.5.0.
 */
package org.hdfsrdma.datanode.compat;
