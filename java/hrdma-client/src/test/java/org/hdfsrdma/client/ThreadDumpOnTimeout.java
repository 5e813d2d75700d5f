package org.hdfsrdma.client;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * Prints every thread's stack, with the locks held and waited for, when a test times out,
 * then rethrows: a hang seen once in a CI run can then be read from its report.
 */
final class ThreadDumpOnTimeout implements TestExecutionExceptionHandler {
  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable t) throws Throwable {
    if (t instanceof TimeoutException) {
      StringBuilder b = new StringBuilder("hrdma test: threads at the timeout of " + context.getDisplayName() + "\n");
      for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
        b.append(info.getThreadName()).append(' ').append(info.getThreadState());
        if (info.getLockName() != null) {
          b.append(" on ").append(info.getLockName()).append(" held by ").append(info.getLockOwnerName());
        }
        b.append('\n');
        for (StackTraceElement e : info.getStackTrace()) {
          b.append("\tat ").append(e).append('\n');
        }
      }
      System.err.print(b);
    }
    throw t;
  }
}
