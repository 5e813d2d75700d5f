package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * PNG plots of a sweep: median MB/s against the swept parameter, one line per path and
 * operation (one color per operation, ours solid with circles, stock dashed with squares),
 * the larger distance from the median to min or max as error bars.
 */
public final class Plot {
  private Plot() {}

  /** Writes {@code file} (.png) for the summaries of one swept parameter. */
  public static void sweep(Path file, String param, List<Summary> sums) throws IOException {
    XYChart c = new XYChartBuilder().width(900).height(560).title(title(param, sums))
        .xAxisTitle(axis(param)).yAxisTitle("MB/s (10^6 bytes), median of runs").build();
    c.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideS);
    c.getStyler().setLegendLayout(org.knowm.xchart.style.Styler.LegendLayout.Horizontal);
    c.getStyler().setXAxisLogarithmic(param.equals("block-size") || param.equals("net"));
    c.getStyler().setYAxisMin(0.0);
    c.getStyler().setxAxisTickLabelsFormattingFunction(x -> tick(param, x));
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
        List<Double> xs = new ArrayList<>();
        List<Double> ys = new ArrayList<>();
        List<Double> err = new ArrayList<>();
        for (Summary s : e.getValue()) {
          org.hdfsrdma.bench.fs.Stats st = path.equals("ours") ? s.ours() : s.stock();
          if (!Double.isNaN(st.median())) {
            xs.add(plotX(param, s.point().x()));
            ys.add(st.median());
            err.add(Math.max(st.max() - st.median(), st.median() - st.min()));
          }
        }
        if (xs.isEmpty()) {
          continue;
        }
        XYSeries ser = c.addSeries(path + " " + e.getKey(), xs, ys, err);
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

  /** The unshaped interconnect (-1) is drawn right of the fastest shaped one. */
  static double plotX(String param, double x) {
    return param.equals("net") && x < 0 ? 100 : x;
  }

  /** One color per operation; ours solid, stock dashed. */
  private static final java.awt.Color[] COLORS = {new java.awt.Color(0x1f77b4), new java.awt.Color(0xd62728),
      new java.awt.Color(0x2ca02c), new java.awt.Color(0x9467bd)};

  private static String title(String param, List<Summary> sums) {
    String job = sums.isEmpty() ? "" : sums.get(0).job();
    return job + ": ours vs stock HDFS against " + param;
  }

  private static String axis(String param) {
    return switch (param) {
      case "block-size" -> "block size (dfs.blocksize), log scale";
      case "datanodes" -> "DataNodes";
      case "clients" -> "concurrent clients (tasks)";
      case "replication" -> "replication";
      case "net" -> "emulated interconnect, Gbit/s (100 = unshaped veth)";
      default -> param;
    };
  }

  private static String tick(String param, double x) {
    if (param.equals("block-size")) {
      return org.hdfsrdma.bench.Sizes.format(Math.round(x / (1 << 20)) << 20);
    }
    if (param.equals("net") && x >= 100) {
      return "unshaped";
    }
    return x == Math.rint(x) ? Long.toString((long) x) : Double.toString(x);
  }
}
