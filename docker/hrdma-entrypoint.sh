#!/bin/bash
# Entry point of the hdfs-rdma images: runs a NameNode, a DataNode or a client JVM on
# Hadoop's jars (/opt/hadoop/lib, plus the plugin jar in the datanode and client images).
#
#   namenode            formats /data/nn on first start, then runs the NameNode
#   datanode            runs a DataNode (the plugin is configured in hdfs-site.xml)
#   verify [ARGS]       writes, reads back and checks a file through RdmaDistributedFileSystem
#                       and fails unless our transport carried the bytes (docker/HrdmaVerify.java)
#   shell ARGS          hadoop fs ARGS (FsShell)
#   java ARGS / CMD     anything else runs as given
#
# Configuration: a mounted $HADOOP_CONF_DIR with core-site.xml is used as it is. Without
# one the entry point writes core-site.xml and hdfs-site.xml there from these variables:
#   HRDMA_NAMENODE         host:port of the NameNode's RPC (default 127.0.0.1:9820)
#   HRDMA_HOST             address this daemon binds and advertises (default 127.0.0.1)
#   HRDMA_NN_HTTP_PORT     NameNode web UI port (9870)
#   HRDMA_DN_PORT          DataNode data-transfer port (9866); ipc +1, http +2 unless
#   HRDMA_DN_IPC_PORT / HRDMA_DN_HTTP_PORT are given. The plugin listens on the
#                          data-transfer port + hrdma.datanode.port-offset (default 1000)
#   HRDMA_REPLICATION      dfs.replication (3)
#   HRDMA_CONF             more settings, whitespace-separated KEY=VALUE pairs, last wins
#                          (e.g. "hrdma.transport.order=ucx,tcp hrdma.ucx.config=TLS=tcp")
#   HRDMA_JAVA_OPTS        extra JVM options (heap size, ...)
set -euo pipefail

CONF_DIR=${HADOOP_CONF_DIR:-/etc/hadoop/conf}
DATA=${HRDMA_DATA_DIR:-/data}
HOST=${HRDMA_HOST:-127.0.0.1}
NAMENODE=${HRDMA_NAMENODE:-127.0.0.1:9820}
DN_PORT=${HRDMA_DN_PORT:-9866}

die() { echo "hrdma-entrypoint: $*" >&2; exit 2; }

# JDK 17 module opens, as Hadoop's own launch scripts add them for Java 17.
JDK17_OPENS=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/sun.security.x509=ALL-UNNAMED)

xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' <<<"$1"; }

# site FILE KEY=VALUE...: a Hadoop configuration file with the pairs in order.
site() {
  local file=$1; shift
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<!-- written by hrdma-entrypoint from HRDMA_* variables; mount a configuration directory at'
    echo "     $CONF_DIR to use your own -->"
    echo '<configuration>'
    local kv
    for kv in "$@"; do
      [[ $kv == *=* ]] || die "not KEY=VALUE: '$kv'"
      echo "  <property><name>$(xml_escape "${kv%%=*}")</name><value>$(xml_escape "${kv#*=}")</value></property>"
    done
    echo '</configuration>'
  } > "$file"
}

write_conf() {
  local role=$1
  local common=("dfs.namenode.rpc-address=$NAMENODE" "dfs.replication=${HRDMA_REPLICATION:-3}")
  local hdfs=("${common[@]}")
  case "$role" in
    namenode)
      hdfs+=("dfs.namenode.name.dir=file://$DATA/nn"
        "dfs.namenode.rpc-bind-host=0.0.0.0"
        "dfs.namenode.http-address=${NAMENODE%:*}:${HRDMA_NN_HTTP_PORT:-9870}"
        "dfs.namenode.datanode.registration.ip-hostname-check=false"
        "dfs.namenode.safemode.extension=0") ;;
    datanode)
      hdfs+=("dfs.datanode.data.dir=file://$DATA/dn"
        "dfs.datanode.address=$HOST:$DN_PORT"
        "dfs.datanode.ipc.address=$HOST:${HRDMA_DN_IPC_PORT:-$((DN_PORT + 1))}"
        "dfs.datanode.http.address=$HOST:${HRDMA_DN_HTTP_PORT:-$((DN_PORT + 2))}"
        "dfs.datanode.hostname=$HOST"
        "dfs.datanode.plugins=org.hdfsrdma.datanode.RdmaDataNodePlugin") ;;
    *)
      hdfs+=("fs.hdfs.impl=org.hdfsrdma.client.RdmaDistributedFileSystem") ;;
  esac
  local extra=()
  # shellcheck disable=SC2206 # word splitting of the pairs is the point
  [ -n "${HRDMA_CONF:-}" ] && extra=(${HRDMA_CONF})
  mkdir -p "$CONF_DIR"
  site "$CONF_DIR/core-site.xml" "fs.defaultFS=hdfs://$NAMENODE" "hadoop.tmp.dir=$DATA/tmp"
  site "$CONF_DIR/hdfs-site.xml" "${hdfs[@]}" "${extra[@]}"
}

log4j() {
  [ -f "$CONF_DIR/log4j.properties" ] && return
  cat > "$CONF_DIR/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
EOF
}

run_java() {
  local proc=$1; shift
  # shellcheck disable=SC2086 # HRDMA_JAVA_OPTS is a list of options
  exec java ${HRDMA_JAVA_OPTS:-} "${JDK17_OPENS[@]}" -Dproc_"$proc" -Djava.net.preferIPv4Stack=true \
    -Dlog4j.configuration="file:$CONF_DIR/log4j.properties" \
    -cp "$CONF_DIR:/opt/hadoop/webapps-root:/opt/hadoop/lib/*:/opt/hrdma/*" "$@"
}

role=${1:-}
[ $# -gt 0 ] && shift
case "$role" in
  namenode|datanode|verify|shell)
    if [ -f "$CONF_DIR/core-site.xml" ] && [ "${HRDMA_WRITE_CONF:-0}" != 1 ]; then
      echo "hrdma-entrypoint: using the configuration in $CONF_DIR" >&2
    else
      write_conf "$role"
    fi
    log4j ;;
esac
case "$role" in
  namenode)
    if [ ! -d "$DATA/nn/current" ]; then
      java "${JDK17_OPENS[@]}" -Djava.net.preferIPv4Stack=true -Dlog4j.configuration="file:$CONF_DIR/log4j.properties" \
        -cp "$CONF_DIR:/opt/hadoop/webapps-root:/opt/hadoop/lib/*" \
        org.apache.hadoop.hdfs.server.namenode.NameNode -format -nonInteractive
    fi
    run_java namenode org.apache.hadoop.hdfs.server.namenode.NameNode "$@" ;;
  datanode) run_java datanode org.apache.hadoop.hdfs.server.datanode.DataNode "$@" ;;
  verify)   run_java client HrdmaVerify "$@" ;;
  shell)    run_java client org.apache.hadoop.fs.FsShell "$@" ;;
  "")       die "usage: namenode | datanode | verify [ARGS] | shell ARGS | COMMAND" ;;
  *)        exec "$role" "$@" ;;
esac
