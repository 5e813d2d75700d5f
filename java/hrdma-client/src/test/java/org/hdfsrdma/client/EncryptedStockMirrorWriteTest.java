package org.hdfsrdma.client;

import org.apache.hadoop.conf.Configuration;

/**
 * {@link StockMirrorWriteTest} on an encrypted cluster ({@code dfs.encrypt.data.transfer}, block
 * tokens on): the forwarding DataNode negotiates with the plugin-less one through stock's SASL
 * client, with its data encryption key for the block, as stock's DataXceiver does toward its mirror.
 */
class EncryptedStockMirrorWriteTest extends StockMirrorWriteTest {
  @Override
  Configuration conf() {
    return WireProtectionTest.encrypted(super.conf());
  }
}
