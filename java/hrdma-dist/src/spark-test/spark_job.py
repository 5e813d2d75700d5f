"""PySpark through our client: writes a DataFrame to hdfs:// as Parquet, reads it back,
checks its content, and checks from the client's counters (the JVM's cached
RdmaDistributedFileSystem, the one Spark's tasks used) that our transport carried the bytes.

usage: spark_job.py PLUGIN_JAR CLIENT_SITE_XML
Exit code 0 only when all of it holds.
"""
import sys
import xml.etree.ElementTree as ET

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

OURS = "org.hdfsrdma.client.RdmaDistributedFileSystem"
ROWS = 300_000


def fail(why):
    print(f"spark-test: FAILED: {why}", file=sys.stderr)
    sys.exit(1)


def main():
    jar, client_site = sys.argv[1], sys.argv[2]
    props = {p.findtext("name"): p.findtext("value") or "" for p in ET.parse(client_site).getroot().iter("property")}
    if props.get("fs.hdfs.impl") != OURS:
        fail(f"{client_site} does not select our client (fs.hdfs.impl={props.get('fs.hdfs.impl')})")
    # spark.jars: Spark loads the jar in a class loader of its own, below Hadoop's; the client places
    # its input stream's base in Hadoop's package at start (StreamBaseLoader)
    b = SparkSession.builder.master("local[2]").appName("hrdma-spark-test")
    b = b.config("spark.jars", jar)
    b = b.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    b = b.config("spark.driver.memory", "1g")
    for k, v in props.items():
        b = b.config("spark.hadoop." + k, v)
    # every byte read crosses the transport (no short-circuit or shared-memory reads of the replicas)
    b = b.config("spark.hadoop.hrdma.client.read.local", "false").config("spark.hadoop.hrdma.client.read.shm", "false")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        jvm = spark._jvm
        print(f"spark-test: Spark {spark.version}, Hadoop {jvm.org.apache.hadoop.util.VersionInfo.getVersion()}")
        root = props["fs.defaultFS"]
        path = root + "/spark-test/table"
        df = (spark.range(0, ROWS, numPartitions=4)
              .withColumn("h", F.sha2(F.col("id").cast("string"), 256))
              .withColumn("pad", F.expr("repeat(h, 4)")))
        df.write.mode("overwrite").parquet(path)
        back = spark.read.parquet(path)
        n = back.count()
        if n != ROWS:
            fail(f"{n} rows read back, {ROWS} written")
        agg = back.agg(F.sum("id").alias("s"), F.countDistinct("h").alias("d")).collect()[0]
        if agg["s"] != ROWS * (ROWS - 1) // 2 or agg["d"] != ROWS:
            fail(f"content differs: sum(id)={agg['s']}, distinct h={agg['d']}")
        if back.exceptAll(df).count() != 0 or df.exceptAll(back).count() != 0:
            fail("the rows read back differ from those written")

        conf = spark._jsc.hadoopConfiguration()
        fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(root), conf)
        name = fs.getClass().getName()
        if name != OURS:
            fail(f"hdfs:// is served by {name}, not {OURS}")
        w, r, s, fb = fs.rdmaBytesWritten(), fs.rdmaBytesRead(), fs.stockBytesRead(), fs.stockWriteFallbacks()
        print(f"spark-test: {n} rows written and read back; counters: hrdma bytes written {w}, hrdma bytes read {r}, "
              f"stock bytes read {s}, stock write fallbacks {fb}")
        size = fs.getContentSummary(jvm.org.apache.hadoop.fs.Path(path)).getLength()
        if w < size or fb != 0:
            fail(f"the table ({size} bytes) was not written over hrdma (written {w}, fallbacks {fb})")
        if r < size or s != 0:
            fail(f"the table ({size} bytes) was not read over hrdma (read {r}, through the stock path {s})")
        print("spark-test: OK")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
