package org.hdfsrdma.cluster.conf;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Renders docs/configuration.md from hrdma-default.xml (the one place a key's default and
 * description are written). ConfigurationRegistryTest compares the file with this output and
 * rewrites it under {@code -Dhrdma.docs.write=true} ({@code make docs}).
 */
final class ConfigurationDoc {
  /** One {@code <property>} of the defaults file. */
  record Property(String name, String value, String description) {}

  /** JVM system properties ({@code -Dname=value}), not configuration keys: not in the defaults file. */
  static final Map<String, String> SYSTEM_PROPERTIES = new LinkedHashMap<>();

  static {
    SYSTEM_PROPERTIES.put("hrdma.native.library",
        "Path of libhrdma.so to load instead of the copy inside the hrdma-native jar.");
    SYSTEM_PROPERTIES.put("hrdma.cluster.classpath",
        "Class path the demo and bench fs give the daemons they start (bin/hrdma sets it).");
    SYSTEM_PROPERTIES.put("hrdma.root",
        "The repository's root: where the demo and bench fs find the daemons' class path when hrdma.cluster.classpath is unset.");
    SYSTEM_PROPERTIES.put("hrdma.cluster",
        "Marks a daemon JVM started by hrdma cluster (its value: the daemon's directory), so status and stop find it.");
  }

  private ConfigurationDoc() {}

  static List<Property> read(String resource) throws IOException {
    try (InputStream in = ConfigurationDoc.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException(resource + " is not on the class path");
      }
      NodeList props = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in)
          .getElementsByTagName("property");
      List<Property> out = new ArrayList<>();
      for (int i = 0; i < props.getLength(); i++) {
        Element p = (Element) props.item(i);
        out.add(new Property(text(p, "name"), text(p, "value"), text(p, "description")));
      }
      return out;
    } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
      throw new IOException(resource + ": " + e.getMessage(), e);
    }
  }

  private static String text(Element p, String tag) {
    NodeList l = p.getElementsByTagName(tag);
    return l.getLength() == 0 ? "" : l.item(0).getTextContent().trim().replaceAll("\\s+", " ");
  }

  /** The section a key is listed under: by its second name component. */
  static String section(String key) {
    String area = key.split("\\.")[1];
    return switch (area) {
      case "transport", "ucx", "buffer", "tcp" -> "Transports (DataNode and client)";
      case "datanode" -> key.startsWith("hrdma.datanode.disk.") ? "DataNode plugin: disk scheduler"
          : key.startsWith("hrdma.datanode.port") ? "DataNode plugin: port (DataNode and client)"
          : "DataNode plugin";
      case "client" -> "Client (RdmaDistributedFileSystem)";
      case "cluster" -> "Local cluster tool (hrdma cluster)";
      default -> "Other";
    };
  }

  static String render(List<Property> props) {
    StringBuilder b = new StringBuilder();
    b.append("# Configuration\n\n")
        .append("<!-- Generated from java/hrdma-protocol/src/main/resources/hrdma-default.xml by `make docs`;"
            + " do not edit. -->\n\n")
        .append("Every `hrdma.*` key, its default and what it does. The defaults ship in the hrdma-protocol jar\n")
        .append("as `hrdma-default.xml` (equal to the code's `_DEFAULT` constants, which apply when a key is\n")
        .append("unset); set a key in `hdfs-site.xml` (or `core-site.xml`) to override it. The tools take\n")
        .append("`--conf KEY=VALUE`. An empty default is computed or means unset (see the description).\n")
        .append("In code each key is a `_KEY`/`_DEFAULT` pair in a registry class: `HrdmaTransportKeys`,\n")
        .append("`HrdmaProtocolKeys`, `HrdmaDataNodeKeys`, `HrdmaClientKeys`, `HrdmaClusterKeys`.\n");
    Map<String, List<Property>> bySection = new LinkedHashMap<>();
    for (Property p : props) {
      bySection.computeIfAbsent(section(p.name()), k -> new ArrayList<>()).add(p);
    }
    for (Map.Entry<String, List<Property>> e : bySection.entrySet()) {
      b.append("\n## ").append(e.getKey()).append("\n\n| key | default | description |\n|---|---|---|\n");
      for (Property p : e.getValue()) {
        b.append("| `").append(p.name()).append("` | ")
            .append(p.value().isEmpty() ? "" : "`" + p.value() + "`").append(" | ")
            .append(p.description().replace("|", "\\|")).append(" |\n");
      }
    }
    b.append("\n## JVM system properties\n\nSet with `-Dname=value` (the tools' `HRDMA_JAVA_OPTS`), not in a"
        + " Hadoop configuration.\n\n| property | what |\n|---|---|\n");
    for (Map.Entry<String, String> e : SYSTEM_PROPERTIES.entrySet()) {
      b.append("| `").append(e.getKey()).append("` | ").append(e.getValue()).append(" |\n");
    }
    return b.toString();
  }
}
