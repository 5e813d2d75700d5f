package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.fs.Stats;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.CategorySeries.CategorySeriesRenderStyle;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * PNG plots of a sweep: median MB/s against the swept parameter, whose values are evenly
 * spaced categories as shown in the table (4M, 16M, 64M...; 1 Gbit/s, 10 Gbit/s,
 * unshaped), one line per path and operation (one color per operation, ours solid with
 * circles, stock dashed with squares), the larger distance from the median to min or max
 * as error bars.
 */
public final class Plot {
  private Plot() {}

  /** One color per operation. */
  private static final java.awt.Color[] COLORS = {new java.awt.Color(0x1f77b4), new java.awt.Color(0xd62728),
      new java.awt.Color(0x2ca02c), new java.awt.Color(0x9467bd)};

  /** Writes {@code file} (.png) for the summaries of one swept parameter. */
  public static void sweep(Path file, String param, List<Summary> sums) throws IOException {
    CategoryChart c = new CategoryChartBuilder().width(900).height(560).title(title(param, sums))
        .xAxisTitle(axis(param)).yAxisTitle("MB/s (10^6 bytes), median of runs").build();
    c.getStyler().setDefaultSeriesRenderStyle(CategorySeriesRenderStyle.Line);
    c.getStyler().setOverlapped(true); // every line's point of a category at the category, not side by side
    c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    c.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
    c.getStyler().setYAxisMin(0.0);
    Map<String, List<Summary>> lines = new LinkedHashMap<>();
    for (Summary s : sums) {
      if (s.metric().equals(Summary.MBPS)) {
        lines.computeIfAbsent(s.job() + " " + s.op(), k -> new ArrayList<>()).add(s);
      }
    }
    int line = 0;
    for (Map.Entry<String, List<Summary>> e : lines.entrySet()) {
      java.awt.Color color = COLORS[line++ % COLORS.length];
      for (String path : List.of("ours", "stock")) {
        List<String> xs = new ArrayList<>();
        List<Double> ys = new ArrayList<>();
        List<Double> err = new ArrayList<>();
        for (Summary s : e.getValue()) {
          Stats st = path.equals("ours") ? s.ours() : s.stock();
          boolean none = Double.isNaN(st.median());
          xs.add(s.point().value());
          ys.add(none ? 0 : st.median());
          err.add(none ? 0 : Math.max(st.max() - st.median(), st.median() - st.min()));
        }
        CategorySeries ser = c.addSeries(path + " " + e.getKey(), xs, ys, err);
        ser.setMarker(path.equals("ours") ? SeriesMarkers.CIRCLE : SeriesMarkers.SQUARE);
        ser.setLineColor(color);
        ser.setMarkerColor(color);
        if (path.equals("stock")) {
          ser.setLineStyle(new java.awt.BasicStroke(2f, java.awt.BasicStroke.CAP_BUTT,
              java.awt.BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        }
      }
    }
    BitmapEncoder.saveBitmap(c, file.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static String title(String param, List<Summary> sums) {
    String job = sums.isEmpty() ? "" : sums.get(0).job();
    return job + ": ours vs stock HDFS against " + param;
  }

  private static String axis(String param) {
    return switch (param) {
      case "block-size" -> "block size (dfs.blocksize)";
      case "datanodes" -> "DataNodes";
      case "clients" -> "concurrent clients (tasks)";
      case "replication" -> "replication";
      case "net" -> "emulated interconnect (tc-shaped veth links)";
      default -> param;
    };
  }
}
