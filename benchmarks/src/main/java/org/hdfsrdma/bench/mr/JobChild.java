package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.bench.ChildJvm;

/**
 * A job run in a child JVM: the client of {@code --net} runs, started in the client's
 * network namespace ({@code ip netns exec NS java ... bench job-child SPEC CONF RESULT PIDS}).
 * The child runs {@link MrRunner} on the spec and writes its samples to RESULT as
 * properties; the parent reads them. /proc is shared across network namespaces, so the
 * child measures the DataNodes' CPU itself.
 */
public final class JobChild {
  private JobChild() {}

  static final long TIMEOUT_MINUTES = 120;

  /** Runs {@code s} in a child JVM under {@code prefix}; its samples. */
  static List<MrSample> runIn(List<String> prefix, Path clientConf, JobSpec s, List<Long> dataNodePids, Path work)
      throws IOException, InterruptedException {
    String id = s.job() + "-" + s.path() + "-" + s.run();
    Path spec = work.resolve(id + ".spec");
    Path result = work.resolve(id + ".result");
    Path out = work.resolve(id + ".child.log");
    Files.writeString(spec, s.toText());
    Files.deleteIfExists(result);
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(ChildJvm.command(List.of("bench", "job-child", spec.toString(), clientConf.toString(),
        result.toString(), dataNodePids.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse(""))));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
    try {
      if (!p.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
        throw new IOException("the client JVM ran longer than " + TIMEOUT_MINUTES + " min; output in " + out);
      }
    } finally {
      p.destroyForcibly();
    }
    if (p.exitValue() != 0 || !Files.exists(result)) {
      throw new IOException("the client JVM (" + String.join(" ", prefix) + ") failed with exit " + p.exitValue()
          + "; last lines of " + out + ":\n" + MrRunner.tail(Files.readString(out), 25));
    }
    return parse(Files.readString(result));
  }

  /** {@code bench job-child SPEC CONF RESULT PIDS}: exit 0 and RESULT written, or 1. */
  public static int main(String[] args) {
    if (args.length != 4) {
      System.err.println("usage: bench job-child SPEC CLIENT-CONF RESULT DATANODE-PIDS (started by bench --net)");
      return 2;
    }
    MrBench.quietLogging();
    try {
      JobSpec s = JobSpec.parse(Files.readString(Path.of(args[0])));
      Configuration conf = new Configuration();
      conf.addResource(new org.apache.hadoop.fs.Path(Path.of(args[1]).toUri()));
      List<Long> pids = new ArrayList<>();
      for (String p : args[3].split(",")) {
        if (!p.isBlank()) {
          pids.add(Long.parseLong(p.trim()));
        }
      }
      List<MrSample> out = new MrRunner(conf, pids).run(s);
      Files.writeString(Path.of(args[2]), format(out), StandardCharsets.UTF_8);
      return 0;
    } catch (Exception e) {
      System.err.println("hrdma bench job-child: " + e);
      e.printStackTrace();
      return 1;
    }
  }

  static String format(List<MrSample> samples) {
    Properties p = new Properties();
    p.setProperty("count", Integer.toString(samples.size()));
    for (int i = 0; i < samples.size(); i++) {
      MrSample m = samples.get(i);
      String k = "s." + i + ".";
      p.setProperty(k + "job", m.job());
      p.setProperty(k + "op", m.op());
      p.setProperty(k + "path", m.path());
      p.setProperty(k + "run", Integer.toString(m.run()));
      p.setProperty(k + "bytes", Long.toString(m.bytes()));
      p.setProperty(k + "wall", Double.toString(m.wallSeconds()));
      p.setProperty(k + "mbps", Double.toString(m.mbPerSec()));
      p.setProperty(k + "client-cpu", Double.toString(m.clientCpu()));
      p.setProperty(k + "dn-cpu", Double.toString(m.dataNodeCpu()));
      p.setProperty(k + "ours-bytes", Long.toString(m.oursBytes()));
      p.setProperty(k + "detail", m.detail());
    }
    StringWriter w = new StringWriter();
    try {
      p.store(w, "hrdma bench job-child results");
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    return w.toString();
  }

  static List<MrSample> parse(String text) throws IOException {
    Properties p = new Properties();
    p.load(new StringReader(text));
    List<MrSample> out = new ArrayList<>();
    try {
      int n = Integer.parseInt(p.getProperty("count"));
      for (int i = 0; i < n; i++) {
        String k = "s." + i + ".";
        out.add(new MrSample(p.getProperty(k + "job"), p.getProperty(k + "op"), p.getProperty(k + "path"),
            Integer.parseInt(p.getProperty(k + "run")), Long.parseLong(p.getProperty(k + "bytes")),
            Double.parseDouble(p.getProperty(k + "wall")), Double.parseDouble(p.getProperty(k + "mbps")),
            Double.parseDouble(p.getProperty(k + "client-cpu")), Double.parseDouble(p.getProperty(k + "dn-cpu")),
            Long.parseLong(p.getProperty(k + "ours-bytes")), p.getProperty(k + "detail")));
      }
    } catch (RuntimeException e) {
      throw new IOException("unreadable job-child result (" + e + "):\n" + text, e);
    }
    return out;
  }
}
