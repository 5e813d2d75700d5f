package org.hdfsrdma.bench.mr;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.hdfsrdma.tools.fs.Stats;

/**
 * One metric of one (point, job, op) over its runs: ours and stock side by side.
 * Immutable.
 */
public record Summary(Point point, String job, String op, String metric, Stats ours, Stats stock) {
  public static final String MBPS = "MB/s";
  public static final String JOB_S = "job s";
  public static final String CPU_GB = "CPU s/GB";
  public static final String OURS_PCT = "ours transport %";
  public static final List<String> METRICS = List.of(MBPS, JOB_S, CPU_GB, OURS_PCT);

  public double ratio() {
    return Stats.ratio(ours.median(), stock.median());
  }

  /** A sample and the point it was measured at. */
  public record Tagged(Point point, MrSample sample) {}

  /** Per (point, job, op) in the order the samples came, every metric. */
  public static List<Summary> of(List<Tagged> samples) {
    List<Summary> out = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    for (Tagged t : samples) {
      String k = key(t);
      if (!keys.contains(k)) {
        keys.add(k);
      }
    }
    List<ToDoubleFunction<MrSample>> fns = List.of(MrSample::mbPerSec, MrSample::wallSeconds, MrSample::cpuPerGB,
        s -> s.oursBytes() < 0 || s.bytes() <= 0 ? Double.NaN : Math.min(100, 100.0 * s.oursBytes() / s.bytes()));
    for (String k : keys) {
      List<Tagged> group = samples.stream().filter(t -> key(t).equals(k)).toList();
      Tagged first = group.get(0);
      for (int i = 0; i < METRICS.size(); i++) {
        ToDoubleFunction<MrSample> f = fns.get(i);
        double[] ours = group.stream().map(Tagged::sample).filter(s -> s.path().equals("ours")).mapToDouble(f)
            .toArray();
        double[] stock = group.stream().map(Tagged::sample).filter(s -> s.path().equals("stock")).mapToDouble(f)
            .toArray();
        out.add(new Summary(first.point(), first.sample().job(), first.sample().op(), METRICS.get(i),
            Stats.of(ours), Stats.of(stock)));
      }
    }
    return out;
  }

  private static String key(Tagged t) {
    return t.point().label() + "|" + t.sample().job() + "|" + t.sample().op();
  }
}
