package org.hdfsrdma.client;

/**
 * {@link PlacedWriteTest} with data transfer protection: sealing keeps a message's layout and
 * the receiver opens it in place, so the placed data is still written without staging.
 */
class PlacedSealedWriteTest extends PlacedWriteTest {
  @Override
  protected boolean sealed() {
    return true;
  }
}
