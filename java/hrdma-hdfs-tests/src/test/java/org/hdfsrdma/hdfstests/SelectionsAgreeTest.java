package org.hdfsrdma.hdfstests;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * {@code selection/all.txt} is what {@code make test-hdfs-stock} runs on the
 * stock client to tell our failures from tests that fail anyway; it must hold
 * exactly the classes of {@code fast.txt} and {@code slow.txt} (a class added
 * to one and not to all.txt would never get its stock count). Runs in every
 * selection, so a drift fails the run that follows it.
 */
class SelectionsAgreeTest {
  private static final Path DIR = Paths.get(System.getProperty("basedir", "."), "selection");

  @Test
  void allIsExactlyFastAndSlow() throws IOException {
    Set<String> fast = patterns("fast.txt");
    Set<String> slow = patterns("slow.txt");
    Set<String> all = patterns("all.txt");
    assertTrue(fast.size() > 1 && slow.size() > 1, "selections read from " + DIR.toAbsolutePath());

    Set<String> union = new TreeSet<>(fast);
    union.addAll(slow);
    assertTrue(union.equals(all), "all.txt must be fast.txt + slow.txt; missing from all.txt: "
        + minus(union, all) + ", not in fast or slow: " + minus(all, union));

    Set<String> both = new TreeSet<>(fast);
    both.retainAll(slow);
    both.remove(OURS);
    assertTrue(both.isEmpty(), "classes in both fast.txt and slow.txt run twice: " + both);
  }

  /** Our own classes (this one, HarnessIsOursTest) run in every selection. */
  private static final String OURS = "org/hdfsrdma/hdfstests/*Test.class";

  private static Set<String> patterns(String name) throws IOException {
    Set<String> out = new TreeSet<>();
    List<String> dups = new ArrayList<>();
    for (String line : Files.readAllLines(DIR.resolve(name))) {
      String p = line.trim();
      if (p.isEmpty() || p.startsWith("#")) {
        continue;
      }
      if (!out.add(p)) {
        dups.add(p);
      }
    }
    assertTrue(dups.isEmpty(), name + " lists twice: " + dups);
    return out;
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> d = new TreeSet<>(a);
    d.removeAll(b);
    return d;
  }
}
