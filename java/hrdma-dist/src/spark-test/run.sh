#!/usr/bin/env bash
# make spark-test / hrdma spark-test: PySpark (from PyPI, in build/spark-venv) writes and
# reads a DataFrame on a local cluster ('hrdma cluster start', two DataNodes) through our
# client, given to Spark as spark.jars (the shaded plugin jar) and spark.hadoop.* (the
# cluster's client-site.xml, which sets fs.hdfs.impl). spark_job.py checks the rows and
# that our transport carried the bytes. The cluster is stopped on every exit.
# PYSPARK_VERSION picks another PySpark (default 4.3.0; it must bundle Hadoop 3.5).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
cd "$ROOT"
HERE=java/hrdma-dist/src/spark-test
DIR=build/spark-cluster
START=$(date +%s)
log() { echo "spark-test [$(( $(date +%s) - START ))s]: $*" >&2; }

PYTHON=$(benchmarks/spark/venv.sh)
JAR=$(ls java/hrdma-dist/target/hrdma-hadoop-plugin-*.jar 2>/dev/null | head -1 || true)
TOOLS_JAR=java/hrdma-tools/target/hrdma-tools-0.1.0-SNAPSHOT.jar
if [ -z "$JAR" ] || [ ! -f "$TOOLS_JAR" ] || [ "${HRDMA_REBUILD:-0}" = 1 ]; then
  log "building (mvn -B -q -DskipTests package)"
  bin/setup
  mvn -B -q -DskipTests package
  JAR=$(ls java/hrdma-dist/target/hrdma-hadoop-plugin-*.jar | head -1)
fi

stop() {
  local rc=$?
  set +e
  log "stopping the cluster"
  bin/hrdma cluster stop --dir "$DIR" >/dev/null 2>&1
  log "$([ $rc -eq 0 ] && echo PASSED || echo "FAILED (exit $rc)") in $(( $(date +%s) - START )) s"
  exit $rc
}
trap stop EXIT
trap 'exit 130' INT TERM

rm -rf "$DIR"
log "starting a local cluster in $DIR"
bin/hrdma cluster start --dir "$DIR" --datanodes 2 --jvm-opts "-Xmx384m" >/dev/null
log "running the PySpark job"
"$PYTHON" "$HERE/spark_job.py" "$ROOT/$JAR" "$ROOT/$DIR/client-site.xml"
