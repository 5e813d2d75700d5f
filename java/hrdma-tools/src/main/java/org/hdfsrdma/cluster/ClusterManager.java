package org.hdfsrdma.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.datanode.PluginStatus;
import org.hdfsrdma.datanode.disk.DiskStatus;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

/**
 * start / stop / status of the local cluster in one directory (see {@link ClusterLayout}).
 * start and stop hold DIR/.lock while they work; status only reads.
 */
public final class ClusterManager {
  /** Log lines that mean the plugin gave up while its DataNode keeps running (RdmaDataNodePlugin). */
  static final List<String> PLUGIN_FAILURES = List.of("hrdma datanode plugin: cannot listen",
      "hrdma datanode plugin: bad configuration", "hrdma datanode plugin: not starting",
      "hrdma datanode plugin: the DataNode's dataset and UUID did not appear");
  private static final int TAIL_LINES = 30;
  private static final long POLL_MS = 250;
  private static final long PROGRESS_EVERY_MS = 10_000;

  private final ClusterLayout layout;
  private final PrintStream out;

  public ClusterManager(Path dir, PrintStream out) {
    this.layout = new ClusterLayout(dir);
    this.out = out;
  }

  public ClusterLayout layout() {
    return layout;
  }

  // ------------------------------------------------------------------ start

  public ClusterState start(StartOptions o) throws ClusterException, IOException, InterruptedException {
    Files.createDirectories(layout.dir());
    try (DirLock lock = DirLock.acquire(layout)) {
      ClusterState prev = ClusterState.load(layout.stateFile());
      checkNotRunning(prev);
      lock.held();
      ClusterState state = plan(prev, o);
      new ClusterConfig(layout, state).writeAll();
      Files.createDirectories(layout.logDir());
      Files.createDirectories(layout.tmpDir());
      for (int i = 1; i <= state.dataNodes().size(); i++) {
        Files.createDirectories(layout.dataDir(i));
      }
      return launch(state, o);
    }
  }

  /** Refuses a DIR whose recorded daemons, or any JVM marked with DIR, still run. */
  void checkNotRunning(ClusterState prev) throws ClusterException {
    List<String> running = new ArrayList<>();
    Set<Long> known = new HashSet<>();
    if (prev != null) {
      for (DaemonState d : prev.daemons()) {
        Daemons.find(layout, d).ifPresent(h -> {
          running.add(d.name() + " pid " + h.pid());
          known.add(h.pid());
        });
      }
    }
    for (ProcessHandle h : Daemons.allOf(layout)) {
      if (!known.contains(h.pid())) {
        running.add("unrecorded JVM pid " + h.pid());
      }
    }
    if (!running.isEmpty()) {
      throw new ClusterException(layout.dir() + " is in use by a running cluster (" + String.join(", ", running)
          + "); see 'hrdma cluster status --dir " + layout.dir() + "', or stop it with 'hrdma cluster stop --dir "
          + layout.dir() + "'");
    }
  }

  /** Settings (options over the previous start over defaults) and free ports, previous ports first. */
  ClusterState plan(ClusterState prev, StartOptions o) throws ClusterException, IOException {
    return plan(prev, o, PortPicker.forHost(ClusterConfig.HOST));
  }

  static ClusterState plan(ClusterState prev, StartOptions o, PortPicker ports) throws ClusterException, IOException {
    int n = o.dataNodes() > 0 ? o.dataNodes() : prev != null ? prev.dataNodes().size() : StartOptions.DEFAULT_DATANODES;
    int offset = o.portOffset() != null ? o.portOffset()
        : prev != null ? prev.portOffset() : ClusterConfig.PORT_OFFSET_DEFAULT;
    if (offset == 0) {
      throw new ClusterException("--port-offset must not be 0 (the plugin port would be the xfer port)");
    }
    String order = o.transportOrder() != null ? o.transportOrder() : prev != null ? prev.transportOrder() : "";
    String jvmOpts = o.jvmOpts() != null ? o.jvmOpts() : prev != null && !prev.jvmOpts().isEmpty() ? prev.jvmOpts()
        : StartOptions.DEFAULT_JVM_OPTS;
    Map<String, String> conf = new TreeMap<>(prev != null ? prev.extraConf() : Map.of());
    conf.putAll(o.conf());

    int rpc;
    if (o.nameNodePort() > 0) {
      if (!ports.tryReserve(o.nameNodePort())) {
        throw new ClusterException("port conflict: --namenode-port " + o.nameNodePort() + " on "
            + ClusterConfig.HOST + " is in use by another process");
      }
      rpc = o.nameNodePort();
    } else {
      rpc = ports.reuseOrPick(prev != null ? prev.nameNode().rpcPort() : 0);
    }
    int http = ports.reuseOrPick(prev != null ? prev.nameNode().httpPort() : 0);
    DaemonState nn = DaemonState.nameNode(rpc, http);
    List<DaemonState> dns = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      DaemonState p = prev != null && i <= prev.dataNodes().size() ? prev.dataNodes().get(i - 1) : null;
      int xfer = ports.pickXferWithPlugin(offset, p != null && prev.portOffset() == offset ? p.xferPort() : 0);
      int ipc = ports.reuseOrPick(p != null ? p.ipcPort() : 0);
      int dnHttp = ports.reuseOrPick(p != null ? p.httpPort() : 0);
      dns.add(DaemonState.dataNode(i, xfer, ipc, dnHttp, xfer + offset));
    }
    return new ClusterState(ClusterState.STARTING, ClusterConfig.fsDefaultFs(
        o.hosts().getOrDefault(ClusterLayout.NAMENODE, ClusterConfig.HOST), rpc), offset, order, jvmOpts, conf, nn,
        dns, o.hosts());
  }

  private ClusterState launch(ClusterState planned, StartOptions o)
      throws ClusterException, IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(o.timeoutMs());
    Launched launched = new Launched();
    java.util.concurrent.atomic.AtomicReference<ClusterState> current = new java.util.concurrent.atomic.AtomicReference<>(planned);
    // SIGINT / SIGTERM of this CLI during start: stop what it started, record that
    Thread hook = new Thread(() -> {
      if (!launched.killAll().isEmpty()) {
        try {
          current.get().withoutProcesses().withPhase(ClusterState.STOPPED).store(layout.stateFile());
        } catch (IOException e) {
          // exiting anyway; the next start or stop finds the pids dead
        }
      }
    }, "hrdma-cluster-cleanup");
    Runtime.getRuntime().addShutdownHook(hook);
    ClusterState state = planned;
    boolean ok = false;
    try {
      state.store(layout.stateFile());
      boolean formatted = formatIfNeeded(state, o, launched, deadline);
      DaemonState nn = start(state.nameNode(), state, o, launched);
      List<DaemonState> dns = new ArrayList<>();
      for (DaemonState d : state.dataNodes()) {
        dns.add(start(d, state, o, launched));
        state = state.withDaemons(nn, pad(dns, state.dataNodes()));
        current.set(state);
        state.store(layout.stateFile());
      }
      state = state.withDaemons(nn, dns);
      current.set(state);
      state.store(layout.stateFile());
      waitHealthy(state, launched, deadline, o.timeoutMs());
      state = state.withPhase(ClusterState.RUNNING);
      state.store(layout.stateFile());
      launched.commit();
      ok = true;
      printStarted(state, formatted);
      return state;
    } finally {
      if (!ok) {
        List<Long> pids = launched.killAll();
        if (!pids.isEmpty()) {
          out.println("hrdma cluster: start failed; stopped what it had started (pids " + pids + ")");
        }
        state.withoutProcesses().withPhase(ClusterState.STOPPED).store(layout.stateFile());
      }
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // the JVM is shutting down: the hook runs anyway
      }
    }
  }

  private static List<DaemonState> pad(List<DaemonState> started, List<DaemonState> all) {
    List<DaemonState> l = new ArrayList<>(started);
    l.addAll(all.subList(started.size(), all.size()));
    return l;
  }

  /** The processes a start launched, killed by a failed start or by the shutdown hook. */
  private static final class Launched {
    private final Map<String, Process> procs = new LinkedHashMap<>();
    private boolean committed;

    synchronized void add(String name, Process p) {
      procs.put(name, p);
    }

    synchronized Map<String, Process> snapshot() {
      return new LinkedHashMap<>(procs);
    }

    synchronized void remove(String name) {
      procs.remove(name);
    }

    /** Kills everything started (SIGTERM, 5 s, SIGKILL) unless the start succeeded. */
    synchronized List<Long> killAll() {
      if (committed) {
        return List.of();
      }
      committed = true; // once
      List<ProcessHandle> hs = new ArrayList<>();
      for (Process p : procs.values()) {
        ProcessHandle h = p.toHandle();
        if (Daemons.isLive(h)) {
          hs.add(h);
        }
      }
      Daemons.stop(hs, 5_000);
      return hs.stream().map(ProcessHandle::pid).toList();
    }

    synchronized void commit() {
      committed = true;
    }
  }

  private boolean formatIfNeeded(ClusterState state, StartOptions o, Launched launched, long deadline)
      throws ClusterException, IOException, InterruptedException {
    if (Files.exists(layout.nameVersionFile())) {
      return false;
    }
    for (int i = 1; i <= state.dataNodes().size(); i++) {
      Path data = layout.dataDir(i);
      if (Files.isDirectory(data) && !isEmpty(data)) {
        out.println("hrdma cluster: " + data + " holds blocks of a namespace that no longer exists"
            + " (no " + layout.nameVersionFile() + "); removing them");
        deleteTree(data);
        Files.createDirectories(data);
      }
    }
    out.println("hrdma cluster: formatting the NameNode in " + layout.nameDir());
    String name = "nn-format";
    List<String> cmd = Daemons.command(layout, name, ClusterLayout.NAMENODE, state.nameNode().mainClass(),
        o.classpath(), state.jvmOpts(), "-format", "-force", "-nonInteractive");
    Process p = Daemons.launch(cmd, layout.log(name), layout.dir(), false);
    launched.add(name, p);
    long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    if (!p.waitFor(left, TimeUnit.MILLISECONDS)) {
      throw new ClusterException("timeout: formatting the NameNode took longer than " + o.timeoutMs()
          + " ms; last lines of " + layout.log(name) + ":\n" + Daemons.tail(layout.log(name), TAIL_LINES));
    }
    launched.remove(name);
    if (p.exitValue() != 0 || !Files.exists(layout.nameVersionFile())) {
      throw new ClusterException("formatting the NameNode failed (exit code " + p.exitValue() + "); last lines of "
          + layout.log(name) + ":\n" + Daemons.tail(layout.log(name), TAIL_LINES));
    }
    return true;
  }

  private DaemonState start(DaemonState d, ClusterState state, StartOptions o, Launched launched) throws IOException {
    List<String> cmd = new ArrayList<>(o.launchPrefix().getOrDefault(d.name(), List.of()));
    cmd.addAll(Daemons.command(layout, d.name(), d.name(), d.mainClass(), o.classpath(), state.jvmOpts()));
    Process p = Daemons.launch(cmd, layout.log(d.name()), layout.dir(), true);
    launched.add(d.name(), p);
    return d.withProcess(p.pid(), Daemons.startMillis(p.toHandle()));
  }

  private void waitHealthy(ClusterState state, Launched launched, long deadline, long timeoutMs)
      throws ClusterException, InterruptedException, IOException {
    Configuration conf = clientConf(layout);
    DistributedFileSystem dfs = null;
    long nextProgress = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PROGRESS_EVERY_MS);
    try {
      while (true) {
        for (Map.Entry<String, Process> e : launched.snapshot().entrySet()) {
          if (!e.getValue().isAlive()) {
            throw died(state, e.getKey(), e.getValue());
          }
        }
        String nnError = null;
        Set<Integer> live = Set.of();
        Boolean safeMode = null;
        if (dfs == null && canConnect(state.host(ClusterLayout.NAMENODE), state.nameNode().rpcPort(), 500)) {
          dfs = (DistributedFileSystem) FileSystem.newInstance(URI.create(state.fsDefaultFs()), conf);
        }
        if (dfs != null) {
          try {
            live = reportedXferPorts(dfs);
            safeMode = dfs.isInSafeMode();
          } catch (IOException e) {
            nnError = e.toString();
          }
        }
        List<String> notServing = new ArrayList<>();
        for (DaemonState d : state.dataNodes()) {
          if (!canConnect(state.host(d.name()), d.pluginPort(), 500)) {
            notServing.add(d.name());
            String failure = pluginFailure(d);
            if (failure != null) {
              throw new ClusterException(d.name() + ": the plugin is not serving on port " + d.pluginPort() + ": "
                  + failure + "\nlast lines of " + layout.log(d.name()) + ":\n"
                  + Daemons.tail(layout.log(d.name()), TAIL_LINES));
            }
          }
        }
        List<String> notLive = new ArrayList<>();
        for (DaemonState d : state.dataNodes()) {
          if (!live.contains(d.xferPort())) {
            notLive.add(d.name());
          }
        }
        if (dfs != null && nnError == null && notLive.isEmpty() && notServing.isEmpty()
            && Boolean.FALSE.equals(safeMode)) {
          return;
        }
        String progress = (dfs == null ? "NameNode RPC not up yet" : nnError != null ? "NameNode: " + nnError
            : "NameNode up" + (Boolean.TRUE.equals(safeMode) ? " (in safe mode)" : ""))
            + "; DataNodes not live (or not reported their blocks) yet: " + (notLive.isEmpty() ? "none" : notLive)
            + "; plugins not serving yet: " + (notServing.isEmpty() ? "none" : notServing);
        long now = System.nanoTime();
        if (now > deadline) {
          StringBuilder b = new StringBuilder("timeout: the cluster was not healthy after " + timeoutMs / 1000
              + " s (--timeout): " + progress);
          Set<String> lagging = new java.util.LinkedHashSet<>();
          if (dfs == null || nnError != null || Boolean.TRUE.equals(safeMode)) {
            lagging.add(ClusterLayout.NAMENODE);
          }
          lagging.addAll(notLive);
          lagging.addAll(notServing);
          for (String name : lagging) {
            b.append("\nlast lines of ").append(layout.log(name)).append(":\n")
                .append(Daemons.tail(layout.log(name), 15));
          }
          throw new ClusterException(b.toString());
        }
        if (now > nextProgress) {
          out.println("hrdma cluster: waiting: " + progress);
          nextProgress = now + TimeUnit.MILLISECONDS.toNanos(PROGRESS_EVERY_MS);
        }
        Thread.sleep(POLL_MS);
      }
    } finally {
      if (dfs != null) {
        dfs.close();
      }
    }
  }

  private ClusterException died(ClusterState state, String name, Process p) {
    Path log = layout.log(name);
    String tail = Daemons.tail(log, TAIL_LINES);
    String ports = state.daemons().stream().filter(d -> d.name().equals(name)).findFirst()
        .map(DaemonState::describePorts).orElse("");
    String what = name + " (pid " + p.pid() + ") exited with code " + p.exitValue() + " during start";
    if (tail.contains("BindException") || tail.contains("Address already in use")) {
      what = "port conflict: " + what + ": one of its ports (" + ports + ") was taken by another process after"
          + " 'hrdma cluster' checked it; run start again (it picks other ports)";
    }
    return new ClusterException(what + "\nlast lines of " + log + ":\n" + tail);
  }

  /** The plugin's own error line in the DataNode's log, or null. */
  private String pluginFailure(DaemonState d) {
    String tail = Daemons.tail(layout.log(d.name()), 400);
    for (String line : tail.split("\n")) {
      for (String f : PLUGIN_FAILURES) {
        int at = line.indexOf(f);
        if (at >= 0) {
          return line.substring(at);
        }
      }
    }
    return null;
  }

  private void printStarted(ClusterState state, boolean formatted) {
    ClusterConfig cfg = new ClusterConfig(layout, state);
    out.println("hrdma cluster: started a NameNode and " + state.dataNodes().size() + " DataNode"
        + (state.dataNodes().size() == 1 ? "" : "s") + " with " + ClusterConfig.PLUGIN_CLASS + " in " + layout.dir()
        + (formatted ? " (newly formatted)" : " (data of the previous start kept)"));
    out.println("fs.defaultFS=" + state.fsDefaultFs());
    out.println("client configuration: " + layout.clientSite() + "  (or HADOOP_CONF_DIR=" + layout.clientConfDir()
        + ")");
    for (Map.Entry<String, String> e : cfg.clientSite().entrySet()) {
      out.println("  " + e.getKey() + "=" + e.getValue());
    }
    out.println("NameNode web UI: http://" + state.host(ClusterLayout.NAMENODE) + ":" + state.nameNode().httpPort()
        + "/");
    for (DaemonState d : state.daemons()) {
      out.println("  " + d.name() + " pid " + d.pid() + ": " + d.describePorts() + ", log " + layout.log(d.name()));
    }
    out.println("stop: bin/hrdma cluster stop --dir " + layout.dir() + "   status: bin/hrdma cluster status --dir "
        + layout.dir());
  }

  // ------------------------------------------------------------------ stop

  /** Stops every daemon of DIR (DataNodes first); true when something was running. */
  public boolean stop(long timeoutMs) throws ClusterException, IOException {
    if (!Files.isDirectory(layout.dir())) {
      out.println("hrdma cluster: " + layout.dir() + " does not exist; nothing to stop");
      return false;
    }
    try (DirLock lock = DirLock.acquire(layout)) {
      lock.held();
      ClusterState st = ClusterState.load(layout.stateFile());
      Map<String, ProcessHandle> dataNodes = new LinkedHashMap<>();
      ProcessHandle nn = null;
      Set<Long> known = new HashSet<>();
      if (st != null) {
        for (DaemonState d : st.dataNodes()) {
          Daemons.find(layout, d).ifPresent(h -> dataNodes.put(d.name(), h));
        }
        nn = Daemons.find(layout, st.nameNode()).orElse(null);
      }
      dataNodes.values().forEach(h -> known.add(h.pid()));
      if (nn != null) {
        known.add(nn.pid());
      }
      for (ProcessHandle h : Daemons.allOf(layout)) {
        if (!known.contains(h.pid())) {
          dataNodes.put("unrecorded JVM", h);
        }
      }
      if (dataNodes.isEmpty() && nn == null) {
        out.println("hrdma cluster: no daemon of " + layout.dir() + " is running");
      } else {
        long t0 = System.nanoTime();
        List<Long> killed = new ArrayList<>(Daemons.stop(dataNodes.values(), timeoutMs));
        if (nn != null) {
          killed.addAll(Daemons.stop(List.of(nn), timeoutMs));
        }
        List<String> names = new ArrayList<>();
        dataNodes.forEach((k, h) -> names.add(k + " (pid " + h.pid() + ")"));
        if (nn != null) {
          names.add(0, "nn (pid " + nn.pid() + ")");
        }
        out.printf("hrdma cluster: stopped %s in %.1f s%s; data kept in %s%n", String.join(", ", names),
            (System.nanoTime() - t0) / 1e9, killed.isEmpty() ? "" : " (SIGKILL after " + timeoutMs / 1000
                + " s: pids " + killed + ")", layout.dir());
      }
      if (st != null) {
        st.withoutProcesses().withPhase(ClusterState.STOPPED).store(layout.stateFile());
      }
      return !(dataNodes.isEmpty() && nn == null);
    }
  }

  // ------------------------------------------------------------------ status

  public StatusReport status() throws ClusterException, IOException {
    ClusterState st = ClusterState.load(layout.stateFile());
    if (st == null) {
      throw new ClusterException("no cluster in " + layout.dir() + " (no " + layout.stateFile() + ")");
    }
    return statusOf(st);
  }

  /** Probes the daemons recorded in {@code st}. */
  StatusReport statusOf(ClusterState st) {
    Map<String, Boolean> alive = new LinkedHashMap<>();
    for (DaemonState d : st.daemons()) {
      alive.put(d.name(), Daemons.find(layout, d).isPresent());
    }
    String nnView = "down";
    String safeMode = StatusReport.UNKNOWN;
    Map<Integer, String> dnViews = new TreeMap<>();
    if (alive.get(ClusterLayout.NAMENODE) && canConnect(st.host(ClusterLayout.NAMENODE), st.nameNode().rpcPort(),
        1000)) {
      try (DistributedFileSystem dfs = (DistributedFileSystem) FileSystem.newInstance(
          URI.create(st.fsDefaultFs()), clientConf(layout))) {
        for (int p : liveXferPorts(dfs)) {
          dnViews.put(p, StatusReport.LIVE);
        }
        for (DatanodeInfo d : dfs.getDataNodeStats(DatanodeReportType.DEAD)) {
          dnViews.putIfAbsent(d.getXferPort(), StatusReport.DEAD);
        }
        safeMode = dfs.isInSafeMode() ? "on" : "off";
        nnView = StatusReport.UP;
      } catch (IOException e) {
        nnView = "no answer";
      }
    }
    List<StatusReport.DaemonStatus> rows = new ArrayList<>();
    for (DaemonState d : st.daemons()) {
      boolean a = alive.get(d.name());
      if (d.isNameNode()) {
        rows.add(new StatusReport.DaemonStatus(d, a, nnView, null));
      } else {
        String view = StatusReport.UP.equals(nnView) ? dnViews.getOrDefault(d.xferPort(), StatusReport.UNREGISTERED)
            : StatusReport.UNKNOWN;
        List<DiskStatus.Volume> volumes = List.of();
        PluginStatus.Figures plugin = null;
        if (a) {
          try {
            volumes = DiskStatus.fetch(st.host(d.name()), d.httpPort(), d.xferPort(), 2000);
            plugin = PluginStatus.fetch(st.host(d.name()), d.httpPort(), d.xferPort(), 2000);
          } catch (IOException e) {
            // no figures: the status line above says what is wrong
          }
        }
        rows.add(new StatusReport.DaemonStatus(d, a, view, canConnect(st.host(d.name()), d.pluginPort(), 1000), volumes,
            plugin));
      }
    }
    return new StatusReport(layout.dir().toString(), st.phase(), st.fsDefaultFs(), safeMode, rows);
  }

  // ------------------------------------------------------------------ helpers

  private static Set<Integer> liveXferPorts(DistributedFileSystem dfs) throws IOException {
    Set<Integer> s = new HashSet<>();
    for (DatanodeInfo d : dfs.getDataNodeStats(DatanodeReportType.LIVE)) {
      s.add(d.getXferPort());
    }
    return s;
  }

  /**
   * The xfer ports of the live DataNodes whose first block report the NameNode has: before it,
   * a restarted cluster's NameNode may have left safe mode (a small namespace's threshold
   * rounds down to no block) while it knows no replica of the blocks, and reads wait.
   */
  private static Set<Integer> reportedXferPorts(DistributedFileSystem dfs) throws IOException {
    Set<Integer> s = new HashSet<>();
    for (DatanodeInfo d : dfs.getDataNodeStats(DatanodeReportType.LIVE)) {
      if (d.getLastBlockReportTime() > 0) {
        s.add(d.getXferPort());
      }
    }
    return s;
  }

  /** A client Configuration for this cluster that fails fast when the NameNode is not there. */
  static Configuration clientConf(ClusterLayout layout) {
    Configuration c = new Configuration();
    c.addResource(new org.apache.hadoop.fs.Path(layout.clientSite().toUri()));
    c.set("fs.hdfs.impl", DistributedFileSystem.class.getName());
    c.setInt("ipc.client.connect.max.retries", 0);
    c.setInt("ipc.client.connect.max.retries.on.timeouts", 0);
    c.setInt("ipc.client.connect.timeout", 2000);
    c.setInt("ipc.client.rpc-timeout.ms", 10_000);
    return c;
  }

  static boolean canConnect(String host, int port, int timeoutMs) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), timeoutMs);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean isEmpty(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.findAny().isEmpty();
    }
  }

  private static void deleteTree(Path root) throws IOException {
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
        Files.delete(p);
      }
    }
  }

  /** DIR/.lock, held while a start or stop works on DIR. */
  static final class DirLock implements AutoCloseable {
    private final FileChannel channel;
    private final FileLock lock;

    private DirLock(FileChannel channel, FileLock lock) {
      this.channel = channel;
      this.lock = lock;
    }

    static DirLock acquire(ClusterLayout layout) throws IOException, ClusterException {
      FileChannel ch = FileChannel.open(layout.lockFile(), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      FileLock l;
      try {
        l = ch.tryLock();
      } catch (OverlappingFileLockException e) {
        l = null;
      }
      if (l == null) {
        ch.close();
        throw new ClusterException("another 'hrdma cluster' command is working on " + layout.dir()
            + " right now; wait for it to finish");
      }
      return new DirLock(ch, l);
    }

    void held() {
      if (!lock.isValid()) {
        throw new IllegalStateException("lost " + channel);
      }
    }

    @Override
    public void close() throws IOException {
      try {
        lock.release();
      } finally {
        channel.close();
      }
    }
  }

}
