package org.hdfsrdma.bench.mr;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shape of what a run keeps: CSV columns, JSON lines, the markdown, the plots. */
class ResultsTest {
  @TempDir
  Path tmp;

  /** A block-size sweep of two points, two runs per path; ours is faster at 64M. */
  static Results sweep(String failure) {
    MrOptions o = MrOptions.parse("sweep", new String[] {"--sweep", "block-size=4M,64M", "--runs", "2"});
    List<Point> pts = MrBench.points(o);
    List<Summary.Tagged> s = new ArrayList<>();
    for (Point p : pts) {
      double f = p.blockBytes() == 64L << 20 ? 2 : 1;
      for (int run = 1; run <= 2; run++) {
        s.add(new Summary.Tagged(p, new MrSample("dfsio", "write", "ours", run, 1_000_000_000L, 10, 100 * f + run,
            4, 6, 1_000_000_000L, "TestDFSIO write, \"quoted\"")));
        s.add(new Summary.Tagged(p, new MrSample("dfsio", "write", "stock", run, 1_000_000_000L, 12, 100 + run, 3,
            5, -1, "TestDFSIO write")));
      }
    }
    return new Results(o, LocalDateTime.of(2026, 11, 21, 9, 30, 5), pts, s, Summary.of(s), failure,
        "cores=2 memory=1 kB");
  }

  @Test
  void summaryHasMediansAndRatios() {
    Results r = sweep(null);
    Summary mb = r.find("block-size=64M", "write", Summary.MBPS);
    assertEquals(2, mb.ours().count());
    assertEquals(201.5, mb.ours().median());
    assertEquals(101.5, mb.stock().median());
    assertEquals(201.5 / 101.5, mb.ratio(), 1e-12);
    Summary cpu = r.find("block-size=4M", "write", Summary.CPU_GB);
    assertEquals(10.0, cpu.ours().median());
    assertEquals(8.0, cpu.stock().median());
    assertEquals(100.0, r.find("block-size=4M", "write", Summary.OURS_PCT).ours().median());
    String text = r.text();
    assertTrue(text.contains("largest differences (MB/s, ours/stock furthest from 1):\n  block-size=64M dfsio "
        + "write: ours 201.5, stock 101.5 MB/s, ours/stock 1.99"), text);
  }

  @Test
  void csvAndJsonShape() throws Exception {
    Results r = sweep(null);
    String[] samples = r.samplesCsv().split("\n");
    assertEquals(String.join(",", Results.SAMPLE_COLUMNS), samples[0]);
    assertEquals(1 + 8, samples.length);
    // the detail with a comma and quotes is one quoted cell
    assertTrue(samples[1].endsWith(",\"TestDFSIO write, \"\"quoted\"\"\""), samples[1]);
    assertTrue(samples[1].startsWith("block-size,4M,3,-1,4194304,2,3,dfsio,write,ours,1,1000000000,10,101,4,6,10,"),
        samples[1]);
    String[] summary = r.summaryCsv().split("\n");
    assertEquals(String.join(",", Results.SUMMARY_COLUMNS), summary[0]);
    assertEquals(1 + 2 * Summary.METRICS.size(), summary.length);
    for (String l : summary) {
      assertEquals(Results.SUMMARY_COLUMNS.size(), l.split(",", -1).length, l);
    }
    // stock has no transport counter: empty cells, not NaN
    assertTrue(Arrays.stream(summary).anyMatch(l -> l.startsWith("block-size,4M,dfsio,write,ours transport %,2,"
        + "100,100,100,,,,")), String.join("\n", summary));
    List<String> json = r.jsonLines();
    assertTrue(json.get(0).startsWith("{\"type\": \"config\", \"command\": \"sweep\", \"job\": \"dfsio\""));
    assertEquals(8, json.stream().filter(l -> l.startsWith("{\"type\": \"sample\"")).count());
    assertEquals(8, json.stream().filter(l -> l.startsWith("{\"type\": \"summary\"")).count());
    for (String l : json) {
      assertTrue(l.startsWith("{") && l.endsWith("}") && !l.contains("NaN"), l);
    }
    assertTrue(json.stream().anyMatch(l -> l.contains("\"metric\": \"MB/s\"") && l.contains("\"ours_median\": 201.5")
        && l.contains("\"stock_median\": 101.5")), String.join("\n", json));
  }

  /** A run's --conf settings are in its table's title and its JSON config line: its figures depend on them. */
  @Test
  void settingsAreShown() {
    MrOptions o = MrOptions.parse("dfsio", new String[] {"--mini", "--conf", "hrdma.datanode.share-transports=true",
        "--conf", "a.b=c"});
    Results r = new Results(o, LocalDateTime.of(2026, 11, 21, 9, 30, 5), MrBench.points(o), List.of(), List.of(),
        null, "cores=2");
    assertTrue(r.text().contains("\n# settings: hrdma.datanode.share-transports=true a.b=c\n"), r.text());
    assertTrue(r.jsonLines().get(0).contains("\"mini\": true, \"settings\": \"{hrdma.datanode.share-transports=true, "
        + "a.b=c}\""), r.jsonLines().get(0));
    Results none = new Results(MrOptions.parse("dfsio", new String[] {"--mini"}), LocalDateTime.of(2026, 11, 21, 9,
        30, 5), MrBench.points(o), List.of(), List.of(), null, "cores=2");
    assertTrue(!none.text().contains("# settings"), none.text());
  }

  @Test
  void writesFilesPlotAndMarkdown() throws Exception {
    Results r = sweep("java.io.IOException: boom");
    List<Path> files = r.write(tmp);
    List<String> names = files.stream().map(p -> p.getFileName().toString()).toList();
    assertEquals(List.of("sweep-dfsio-093005-samples.csv", "sweep-dfsio-093005-summary.csv",
        "sweep-dfsio-093005.json", "sweep-dfsio-093005.txt", "sweep-dfsio-093005-block-size.png",
        "sweep-dfsio-093005-summary.md", "machine.txt"), names);
    Path png = tmp.resolve("sweep-dfsio-093005-block-size.png");
    byte[] head = Arrays.copyOf(Files.readAllBytes(png), 8);
    assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, head);
    BufferedImage img = ImageIO.read(png.toFile());
    assertNotNull(img);
    assertEquals(900, img.getWidth());
    String md = Files.readString(tmp.resolve("sweep-dfsio-093005-summary.md"));
    assertTrue(md.contains("| block-size=64M | dfsio | write | 201.5 | 101.5 | 1.99 | 10.00 | 8.00 | 10.0 | 12.0 |"),
        md);
    assertTrue(md.contains("![sweep-dfsio-093005-block-size.png](sweep-dfsio-093005-block-size.png)"), md);
    assertTrue(md.contains("**FAILED:** java.io.IOException: boom"), md);
    assertEquals("cores=2 memory=1 kB\n", Files.readString(tmp.resolve("machine.txt")));
  }
}
