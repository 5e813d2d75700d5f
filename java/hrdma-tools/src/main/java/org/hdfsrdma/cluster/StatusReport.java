package org.hdfsrdma.cluster;

import java.util.List;
import org.hdfsrdma.datanode.PluginStatus;
import org.hdfsrdma.datanode.disk.DiskStatus;

/**
 * What {@code hrdma cluster status} found: per daemon whether its pid is alive, what the
 * NameNode says (NameNode: {@code up} when it answered RPC; DataNode: {@code live},
 * {@code dead} or {@code unregistered}; {@code unknown} when the NameNode did not
 * answer) and whether the plugin port accepts connections.
 */
public record StatusReport(String dir, String phase, String fsDefaultFs, String safeMode,
    List<DaemonStatus> daemons) {

  public static final String UP = "up";
  public static final String LIVE = "live";
  public static final String DEAD = "dead";
  public static final String UNREGISTERED = "unregistered";
  public static final String UNKNOWN = "unknown";

  /**
   * One daemon's line. {@code pluginReachable} is null for the NameNode; {@code volumes}: a
   * DataNode's per-volume disk scheduler figures (from its JMX), empty when unknown;
   * {@code plugin}: its plugin's counters (from its JMX), null when unknown.
   */
  public record DaemonStatus(DaemonState daemon, boolean alive, String nameNodeView, Boolean pluginReachable,
      List<DiskStatus.Volume> volumes, PluginStatus.Figures plugin) {
    public DaemonStatus {
      volumes = List.copyOf(volumes);
    }

    public DaemonStatus(DaemonState daemon, boolean alive, String nameNodeView, Boolean pluginReachable,
        List<DiskStatus.Volume> volumes) {
      this(daemon, alive, nameNodeView, pluginReachable, volumes, null);
    }

    public DaemonStatus(DaemonState daemon, boolean alive, String nameNodeView, Boolean pluginReachable) {
      this(daemon, alive, nameNodeView, pluginReachable, List.of());
    }

    public boolean healthy() {
      if (!alive) {
        return false;
      }
      if (daemon.isNameNode()) {
        return UP.equals(nameNodeView);
      }
      return LIVE.equals(nameNodeView) && Boolean.TRUE.equals(pluginReachable);
    }
  }

  public StatusReport {
    daemons = List.copyOf(daemons);
  }

  public boolean healthy() {
    return !daemons.isEmpty() && daemons.stream().allMatch(DaemonStatus::healthy);
  }

  public String format() {
    StringBuilder b = new StringBuilder();
    b.append("cluster ").append(dir).append(" (").append(phase).append("), fs.defaultFS ").append(fsDefaultFs)
        .append(", safe mode ").append(safeMode).append('\n');
    b.append(String.format("%-6s %-8s %-6s %-13s %-7s %-7s %s%n", "daemon", "pid", "alive", "at namenode",
        "plugin", "health", "ports"));
    for (DaemonStatus s : daemons) {
      DaemonState d = s.daemon();
      b.append(String.format("%-6s %-8s %-6s %-13s %-7s %-7s %s%n", d.name(), d.pid() > 0 ? d.pid() : "-",
          s.alive() ? "yes" : "no", s.nameNodeView(),
          s.pluginReachable() == null ? "-" : s.pluginReachable() ? "yes" : "no",
          s.healthy() ? "ok" : "BAD", d.describePorts()));
    }
    boolean pluginHeader = false;
    for (DaemonStatus s : daemons) {
      if (s.plugin() != null) {
        if (!pluginHeader) {
          b.append("plugins:\n");
          pluginHeader = true;
        }
        b.append(s.daemon().name()).append('\n').append(PluginStatus.format(s.plugin())).append('\n');
      }
    }
    boolean header = false;
    for (DaemonStatus s : daemons) {
      if (!s.volumes().isEmpty()) {
        if (!header) {
          b.append("disk schedulers (per volume):\n").append(DiskStatus.header()).append('\n');
          header = true;
        }
        b.append(s.daemon().name()).append('\n');
        for (DiskStatus.Volume v : s.volumes()) {
          b.append(DiskStatus.format(v)).append('\n');
        }
      }
    }
    b.append(healthy() ? "healthy" : "NOT healthy").append('\n');
    return b.toString();
  }
}
