package org.hdfsrdma.cluster.conf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.TestConfigurationFieldsBase;
import org.apache.hadoop.fs.StorageType;
import org.hdfsrdma.client.HrdmaClientKeys;
import org.hdfsrdma.cluster.HrdmaClusterKeys;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.protocol.HrdmaConfiguration;
import org.hdfsrdma.protocol.HrdmaProtocolKeys;
import org.hdfsrdma.transport.HrdmaTransportKeys;
import org.junit.jupiter.api.Test;

/**
 * The key registries, hrdma-default.xml, the code and docs/configuration.md agree. Hadoop's
 * TestConfigurationFieldsBase (inherited) checks registry against defaults file both ways; the
 * tests here add what it cannot: defaults equal, every {@code "hrdma.*"} name in the sources is a
 * registry key, every registry key is used by code, and the doc is generated from the file.
 */
class ConfigurationRegistryTest extends TestConfigurationFieldsBase {
  static final List<Class<?>> REGISTRIES = List.of(HrdmaTransportKeys.class, HrdmaProtocolKeys.class,
      HrdmaDataNodeKeys.class, HrdmaClientKeys.class, HrdmaClusterKeys.class);
  /** Keys whose default is computed at run time: their value in the defaults file is empty. */
  static final Set<String> COMPUTED_DEFAULTS = Set.of(HrdmaTransportKeys.TCP_IO_THREADS_KEY,
      HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY, HrdmaTransportKeys.TRANSPORT_HELLO_TIMEOUT_KEY);
  /** Source trees scanned for {@code "hrdma.*"} names: every module's main code. */
  static final List<String> SOURCE_ROOTS = List.of("java", "benchmarks");
  private static final Pattern LITERAL = Pattern.compile("\"(hrdma\\.[A-Za-z0-9_.-]*)\"");

  @Override
  public void initializeMemberVariables() {
    xmlFilename = HrdmaConfiguration.DEFAULT_RESOURCE;
    configurationClasses = REGISTRIES.toArray(new Class<?>[0]);
    errorIfMissingConfigProps = true;
    errorIfMissingXmlProps = true;
    // hrdma.datanode.disk.policy.<type>, .write-mode.<type>: one entry per storage type, one prefix
    // constant in code
    xmlPropsToSkipCompare = new HashSet<>(policyKeys());
  }

  /**
   * The per-storage-type keys the defaults file lists under DISK_POLICY_KEY_PREFIX and
   * DISK_WRITE_MODE_KEY_PREFIX.
   */
  static Set<String> policyKeys() {
    Set<String> s = new HashSet<>();
    for (StorageType t : StorageType.values()) {
      s.add(HrdmaDataNodeKeys.DISK_POLICY_KEY_PREFIX + t.name().toLowerCase(Locale.ROOT));
      s.add(HrdmaDataNodeKeys.DISK_WRITE_MODE_KEY_PREFIX + t.name().toLowerCase(Locale.ROOT));
    }
    return s;
  }

  /** Every {@code _KEY} constant of the registries: key to "Registry.NAME". */
  static Map<String, String> registryKeys() {
    Map<String, String> m = new TreeMap<>();
    for (Class<?> c : REGISTRIES) {
      for (Field f : c.getFields()) {
        if (f.getName().endsWith("_KEY") && Modifier.isStatic(f.getModifiers())) {
          String before = m.put(constant(f), c.getSimpleName() + "." + f.getName());
          assertTrue(before == null, constant(f) + " is defined twice: " + before + " and "
              + c.getSimpleName() + "." + f.getName() + "; keep one");
        }
      }
    }
    return m;
  }

  static Set<String> prefixes() {
    Set<String> s = new HashSet<>();
    for (Class<?> c : REGISTRIES) {
      for (Field f : c.getFields()) {
        if (f.getName().endsWith("_PREFIX")) {
          s.add(constant(f));
        }
      }
    }
    return s;
  }

  private static String constant(Field f) {
    try {
      return String.valueOf(f.get(null));
    } catch (IllegalAccessException e) {
      throw new AssertionError(e);
    }
  }

  private static Map<String, String> xmlValues() {
    Map<String, String> m = new TreeMap<>();
    for (ConfigurationDoc.Property p : readXml()) {
      m.put(p.name(), p.value());
    }
    return m;
  }

  private static List<ConfigurationDoc.Property> readXml() {
    try {
      return ConfigurationDoc.read(HrdmaConfiguration.DEFAULT_RESOURCE);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void defaultsFileHoldsEachRegistryDefault() throws Exception {
    Map<String, String> xml = xmlValues();
    List<String> wrong = new ArrayList<>();
    for (String k : policyKeys()) {
      if (!xml.containsKey(k)) {
        wrong.add(k + " (a storage type's disk policy or write mode) is missing from hrdma-default.xml");
      }
    }
    for (Class<?> c : REGISTRIES) {
      for (Field f : c.getFields()) {
        if (!f.getName().endsWith("_KEY")) {
          continue;
        }
        String key = constant(f);
        String defName = f.getName().replaceFirst("_KEY$", "_DEFAULT");
        Field d;
        try {
          d = c.getField(defName);
        } catch (NoSuchFieldException e) {
          wrong.add(c.getSimpleName() + "." + f.getName() + " has no " + defName + " beside it");
          continue;
        }
        String expected = COMPUTED_DEFAULTS.contains(key) ? "" : String.valueOf(d.get(null));
        String actual = xml.get(key);
        if (actual != null && !expected.equals(actual)) {
          wrong.add(key + ": hrdma-default.xml says '" + actual + "', " + c.getSimpleName() + "." + defName
              + " is '" + expected + "'" + (COMPUTED_DEFAULTS.contains(key) ? " (computed: leave the value empty)" : ""));
        }
      }
    }
    assertTrue(wrong.isEmpty(), "defaults disagree:\n  " + String.join("\n  ", wrong));
  }

  /** Each {@code "hrdma.x"} literal in main code outside the registries, with where it is. */
  static Map<String, List<String>> literalsInCode(Path root) throws IOException {
    Map<String, List<String>> found = new TreeMap<>();
    for (Path src : mainSources(root)) {
      if (isRegistry(src)) {
        continue;
      }
      List<String> lines = Files.readAllLines(src, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = LITERAL.matcher(lines.get(i));
        while (m.find()) {
          found.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(root.relativize(src) + ":" + (i + 1));
        }
      }
    }
    return found;
  }

  /** What a literal in code must be: a registry key, a registry prefix, "hrdma." itself or a system property. */
  static List<String> unregistered(Map<String, List<String>> literals) {
    Set<String> known = new HashSet<>(registryKeys().keySet());
    known.addAll(prefixes());
    known.add("hrdma.");
    known.addAll(ConfigurationDoc.SYSTEM_PROPERTIES.keySet());
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : literals.entrySet()) {
      if (!known.contains(e.getKey())) {
        String k = e.getKey();
        String area = k.split("\\.").length > 1 ? k.split("\\.")[1] : "?";
        out.add(k + " (used at " + String.join(", ", e.getValue()) + ") is in no registry. Add\n"
            + "      public static final String NAME_KEY = \"" + k + "\";\n"
            + "      public static final TYPE NAME_DEFAULT = ...;\n"
            + "    to the registry of its module (" + registryFor(area) + "), use NAME_KEY where the literal is, and add\n"
            + "      <property><name>" + k + "</name><value>DEFAULT</value><description>...</description></property>\n"
            + "    to java/hrdma-protocol/src/main/resources/hrdma-default.xml, then run make docs");
      }
    }
    return out;
  }

  private static String registryFor(String area) {
    return switch (area) {
      case "datanode" -> "HrdmaDataNodeKeys";
      case "client" -> "HrdmaClientKeys";
      case "cluster" -> "HrdmaClusterKeys";
      default -> "HrdmaTransportKeys";
    };
  }

  @Test
  void everyNameInCodeIsRegistered() throws IOException {
    Map<String, List<String>> literals = literalsInCode(repoRoot());
    assertTrue(literals.size() > 0, "no hrdma.* literal found: is the source scan looking in the right place?");
    List<String> bad = unregistered(literals);
    assertTrue(bad.isEmpty(), String.join("\n  ", bad));
  }

  /** The check above catches a new literal (its message says what to add). */
  @Test
  void anUnregisteredNameIsReported() {
    Map<String, List<String>> lit = new LinkedHashMap<>();
    lit.put(HrdmaClientKeys.READ_TIMEOUT_MS_KEY, List.of("A.java:1"));
    lit.put("hrdma.client.read.brand-new", List.of("B.java:7"));
    List<String> bad = unregistered(lit);
    assertEquals(1, bad.size(), bad.toString());
    assertTrue(bad.get(0).contains("hrdma.client.read.brand-new (used at B.java:7)")
        && bad.get(0).contains("HrdmaClientKeys") && bad.get(0).contains("<name>hrdma.client.read.brand-new</name>"),
        bad.get(0));
  }

  @Test
  void everyRegistryKeyIsUsedByCode() throws IOException {
    Path root = repoRoot();
    StringBuilder code = new StringBuilder();
    for (Path src : mainSources(root)) {
      if (!isRegistry(src)) {
        code.append(Files.readString(src, StandardCharsets.UTF_8)).append('\n');
      }
    }
    List<String> unused = new ArrayList<>();
    for (Map.Entry<String, String> e : registryKeys().entrySet()) {
      // Registry.FIELD, or a static import of it
      String qualified = Pattern.quote(e.getValue());
      if (!Pattern.compile("\\b" + qualified + "\\b").matcher(code).find()) {
        unused.add(e.getKey() + " (" + e.getValue() + ") is used by no code: remove it from "
            + e.getValue().substring(0, e.getValue().indexOf('.'))
            + " and from hrdma-default.xml (then make docs), or read it where it belongs");
      }
    }
    assertTrue(unused.isEmpty(), String.join("\n  ", unused));
  }

  @Test
  void configurationDocIsGeneratedFromTheDefaults() throws IOException {
    String doc = ConfigurationDoc.render(readXml());
    Path file = repoRoot().resolve("docs/configuration.md");
    if (Boolean.getBoolean("hrdma.docs.write")) {
      Files.writeString(file, doc, StandardCharsets.UTF_8);
    }
    String current = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    assertEquals(doc, current, "docs/configuration.md is stale: run make docs");
  }

  /**
   * The defaults file is not a Hadoop default resource (it would be loaded after the site files
   * and override them; HrdmaConfigurationTest): an unset key reads as unset and the code's
   * _DEFAULT applies, which the checks above hold equal to the file.
   */
  @Test
  void unsetKeysReadAsUnsetAndTheCodesDefaultsApply() {
    Configuration c = new Configuration();
    assertEquals(null, c.get(HrdmaTransportKeys.TRANSPORT_ORDER_KEY));
    assertEquals(HrdmaTransportKeys.TRANSPORT_ORDER_DEFAULT,
        c.get(HrdmaTransportKeys.TRANSPORT_ORDER_KEY, HrdmaTransportKeys.TRANSPORT_ORDER_DEFAULT));
    c.set(HrdmaTransportKeys.TRANSPORT_ORDER_KEY, "tcp");
    assertEquals("tcp", c.get(HrdmaTransportKeys.TRANSPORT_ORDER_KEY, HrdmaTransportKeys.TRANSPORT_ORDER_DEFAULT));
  }

  private static boolean isRegistry(Path src) {
    String n = src.getFileName().toString();
    return REGISTRIES.stream().anyMatch(c -> n.equals(c.getSimpleName() + ".java"));
  }

  private static List<Path> mainSources(Path root) throws IOException {
    List<Path> out = new ArrayList<>();
    for (String r : SOURCE_ROOTS) {
      try (Stream<Path> s = Files.walk(root.resolve(r))) {
        s.filter(p -> p.toString().endsWith(".java"))
            .filter(p -> p.toString().contains("/src/main/java/"))
            .filter(p -> !p.toString().contains("/target/"))
            .forEach(out::add);
      }
    }
    return out;
  }

  /** The repository root: the nearest directory up from here holding bin/hrdma. */
  static Path repoRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("bin/hrdma")) && Files.isDirectory(p.resolve("java"))) {
        return p;
      }
    }
    throw new AssertionError("no repository root above " + Path.of("").toAbsolutePath());
  }
}
