package org.hdfsrdma.bench.mr;

import java.util.OptionalDouble;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What RandomWriter, Sort and SortValidator print on standard output. */
public final class JobOutput {
  private JobOutput() {}

  private static final Pattern TOOK = Pattern.compile("The job took (\\d+) seconds\\.");

  /** RandomWriter's and Sort's "The job took N seconds." (whole seconds), the last one printed. */
  public static OptionalDouble jobSeconds(String stdout) {
    Matcher m = TOOK.matcher(stdout);
    OptionalDouble r = OptionalDouble.empty();
    while (m.find()) {
      r = OptionalDouble.of(Double.parseDouble(m.group(1)));
    }
    return r;
  }

  /** SortValidator's verdict line. */
  public static boolean sortValidated(String stdout) {
    return stdout.contains("SUCCESS! Validated the MapReduce framework's 'sort' successfully.");
  }
}
