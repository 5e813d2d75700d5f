package org.hdfsrdma.datanode;

import org.hdfsrdma.protocol.Message;

/**
 * Handles the messages of one operation (read, write, local path, shared memory) on an
 * admitted connection. Called on the transport's I/O thread after the {@link RequestDispatcher}
 * has decoded the message and checked its size: must not block (disk work goes to an
 * executor). Takes over the message: releases it, or hands it to a task that does.
 * Implementations hold only the {@link OpContext} and are thread-safe.
 */
interface OpHandler {
  void handle(Connection c, Message m);
}
