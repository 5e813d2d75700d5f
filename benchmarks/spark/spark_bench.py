"""One run of `hrdma bench spark`: a PySpark job in a fresh JVM that writes a table to hdfs:// as
Parquet, reads it back (a scan touching every column) and prints one JSON line with the timings.

usage: spark_bench.py ours|stock CLIENT_SITE_XML PATH ROWS [PLUGIN_JAR]

ours: Spark gets the plugin jar (spark.jars) and every setting of CLIENT_SITE_XML (fs.hdfs.impl
among them), as an operator deploys our client; stock: the same settings but fs.hdfs.impl, and no
jar. Everything else is the same for both. The JSON line holds the seconds of the write and of
the scan, the Spark JVM's CPU seconds in each, the table's bytes, the rows counted, and for ours the client's counters (bytes written
and read over hrdma, stock fallbacks), so the harness can check that our path carried the bytes.
Exit code 0 only when the rows read back are the rows written.
"""
import json
import os
import sys
import time
import xml.etree.ElementTree as ET

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

OURS = "org.hdfsrdma.client.RdmaDistributedFileSystem"
# md5's 32 hex digits, 32 times: 1 KiB a row, different in every row, stored as such (uncompressed)
PAD_REPEAT = 32


def cpu_seconds(pid):
    """User + system CPU seconds of process pid so far (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    mode, client_site, path, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    jar = sys.argv[5] if len(sys.argv) > 5 else None
    if mode not in ("ours", "stock") or (mode == "ours") != (jar is not None):
        print("usage: spark_bench.py ours|stock CLIENT_SITE_XML PATH ROWS [PLUGIN_JAR] (the jar for ours only)",
              file=sys.stderr)
        sys.exit(2)
    props = {p.findtext("name"): p.findtext("value") or "" for p in ET.parse(client_site).getroot().iter("property")}
    if mode == "stock":
        props.pop("fs.hdfs.impl", None)
    elif props.get("fs.hdfs.impl") != OURS:
        print(f"spark_bench: {client_site} does not select our client", file=sys.stderr)
        sys.exit(2)
    b = SparkSession.builder.master("local[2]").appName("hrdma-bench-spark-" + mode)
    if jar:
        b = b.config("spark.jars", jar)
    b = b.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    b = b.config("spark.driver.memory", "1g").config("spark.sql.parquet.compression.codec", "uncompressed")
    for k, v in props.items():
        b = b.config("spark.hadoop." + k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = (spark.range(0, rows, numPartitions=4)
              .withColumn("pad", F.expr(f"repeat(md5(cast(id as string)), {PAD_REPEAT})")))
        jvm = spark._jvm
        pid = jvm.java.lang.ProcessHandle.current().pid()
        c0, t0 = cpu_seconds(pid), time.monotonic()
        df.write.mode("overwrite").parquet(path)
        c1, t1 = cpu_seconds(pid), time.monotonic()
        agg = spark.read.parquet(path).agg(F.count(F.lit(1)).alias("n"), F.sum("id").alias("s"),
                                           F.sum(F.length("pad")).alias("p")).collect()[0]
        c2, t2 = cpu_seconds(pid), time.monotonic()
        conf = spark._jsc.hadoopConfiguration()
        fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(props["fs.defaultFS"]), conf)
        out = {
            "mode": mode,
            "write_s": t1 - t0,
            "scan_s": t2 - t1,
            "write_cpu_s": c1 - c0,
            "scan_cpu_s": c2 - c1,
            "rows": agg["n"],
            "bytes": fs.getContentSummary(jvm.org.apache.hadoop.fs.Path(path)).getLength(),
            "fs": fs.getClass().getName(),
        }
        if fs.getClass().getName() == OURS:
            out.update(hrdma_written=fs.rdmaBytesWritten(), hrdma_read=fs.rdmaBytesRead() + fs.localBytesRead(),
                       stock_read=fs.stockBytesRead(), stock_write_fallbacks=fs.stockWriteFallbacks())
        ok = agg["n"] == rows and agg["s"] == rows * (rows - 1) // 2 and agg["p"] == rows * 32 * PAD_REPEAT
        out["content_ok"] = bool(ok)
        print("SPARK_BENCH " + json.dumps(out), flush=True)
        sys.exit(0 if ok else 1)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
