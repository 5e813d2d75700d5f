#!/usr/bin/env bash
# make docker-test / hrdma docker-test: builds the images, brings up docker-compose.yml's
# NameNode, three DataNodes and client, and passes only when the client wrote, read back
# and checked a file with our transport carrying the bytes (docker/HrdmaVerify.java).
# Tears the containers and volumes down on every exit, failure included.
#
# As root on Debian 12 it installs what it needs (docker.io, docker-compose, debootstrap)
# and starts dockerd (vfs storage) when none answers, stopping it again at the end. With no
# registry reachable the base image is made from Debian packages (debootstrap, once;
# kept as hrdma-base:bookworm); HRDMA_BASE_IMAGE=debian:bookworm-slim uses a registry's.
# The images are kept for the next run (their layers are the slow part), and so are the
# untagged images of the "hadoop" and "verify" build stages: they are the build cache of the
# Maven download (docker image prune would throw it away). HRDMA_DOCKER_CLEAN=1 removes the
# tagged images at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="$ROOT/build/docker"
mkdir -p "$WORK"
PROJECT=${HRDMA_COMPOSE_PROJECT:-hrdmatest}
COMPOSE=(docker-compose -p "$PROJECT" -f docker/docker-compose.yml)
START=$(date +%s)
# With the vfs storage driver creating a container copies the image's whole file tree: on a
# loaded machine that takes longer than docker-compose's default 60 s HTTP timeout.
export COMPOSE_HTTP_TIMEOUT=${COMPOSE_HTTP_TIMEOUT:-900} DOCKER_CLIENT_TIMEOUT=${DOCKER_CLIENT_TIMEOUT:-900}
log() { echo "docker-test [$(( $(date +%s) - START ))s]: $*" >&2; }

# The Debian mirror this machine's apt uses (the images' apt-get uses the same one).
mirror() {
  local m
  m=$(grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
      /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 \
      | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*//')
  echo "${m:-http://deb.debian.org/debian}"
}
security_mirror() {
  local m
  m=$(grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
      /etc/apt/sources.list 2>/dev/null | grep security | head -1 \
      | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*//')
  echo "${m:-http://deb.debian.org/debian-security}"
}
export HRDMA_DEBIAN_MIRROR=${HRDMA_DEBIAN_MIRROR:-$(mirror)}
export HRDMA_DEBIAN_SECURITY_MIRROR=${HRDMA_DEBIAN_SECURITY_MIRROR:-$(security_mirror)}

install_tools() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || { echo "docker-test: needs ${missing[*]} (run as root to install them)" >&2; exit 2; }
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
}

DOCKERD_PID=""
start_dockerd() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  [ "$(id -u)" -eq 0 ] || { echo "docker-test: no docker daemon answers (and not root to start one)" >&2; exit 2; }
  log "starting dockerd (storage driver vfs; log $WORK/dockerd.log)"
  # dockerd sets the host's FORWARD policy to DROP, which cuts traffic between network
  # namespaces (bin/hrdma bench --net, NetLabTest): remember it, and put it back at the end
  FORWARD_POLICY=$(iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3; exit}')
  dockerd --storage-driver=vfs >"$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && return
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -20 "$WORK/dockerd.log" >&2; exit 1; }
    sleep 1
  done
  echo "docker-test: dockerd did not answer within 60 s" >&2
  exit 1
}

base_image() {
  if [ -n "${HRDMA_BASE_IMAGE:-}" ]; then
    return
  fi
  export HRDMA_BASE_IMAGE=hrdma-base:bookworm
  docker image inspect "$HRDMA_BASE_IMAGE" >/dev/null 2>&1 && return
  local dir="$WORK/rootfs"
  log "making $HRDMA_BASE_IMAGE with debootstrap from $HRDMA_DEBIAN_MIRROR"
  rm -rf "$dir"
  debootstrap --variant=minbase bookworm "$dir" "$HRDMA_DEBIAN_MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  tar -C "$dir" -c . | docker import - "$HRDMA_BASE_IMAGE" >/dev/null
  rm -rf "$dir"
}

# The host's extra CAs (a TLS-inspecting proxy's) for Maven inside the build.
CA_COPIED=()
extra_cas() {
  local f
  for f in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$f" ] || continue
    [ -e "docker/ca-certificates/$(basename "$f")" ] && continue
    cp "$f" docker/ca-certificates/
    CA_COPIED+=("docker/ca-certificates/$(basename "$f")")
  done
}

plugin_jar() {
  local jar
  jar=$(ls java/hrdma-dist/target/hrdma-hadoop-plugin-*.jar 2>/dev/null | head -1 || true)
  if [ -z "$jar" ] || [ "${HRDMA_REBUILD:-0}" = 1 ]; then
    log "building the plugin jar (mvn -B -q -DskipTests package -pl java/hrdma-dist -am)"
    "$ROOT/bin/setup"
    mvn -B -q -DskipTests package -pl java/hrdma-dist -am
    jar=$(ls java/hrdma-dist/target/hrdma-hadoop-plugin-*.jar | head -1)
  fi
  export HRDMA_PLUGIN_JAR=$jar
}

teardown() {
  local rc=$?
  set +e
  if [ -n "${COMPOSE_UP:-}" ]; then
    if [ $rc -ne 0 ]; then
      log "FAILED: the daemons' last log lines"
      "${COMPOSE[@]}" logs --no-color --tail=40 namenode dn1 dn2 dn3 >&2
    fi
    log "tearing down (containers, volumes)"
    "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1
  fi
  if [ "${HRDMA_DOCKER_CLEAN:-0}" = 1 ]; then
    docker image rm -f hrdma-namenode:latest hrdma-datanode:latest hrdma-client:latest >/dev/null 2>&1
  fi
  [ ${#CA_COPIED[@]} -gt 0 ] && rm -f "${CA_COPIED[@]}"
  if [ -n "$DOCKERD_PID" ]; then
    log "stopping the dockerd it started (pid $DOCKERD_PID)"
    kill "$DOCKERD_PID" 2>/dev/null
    wait "$DOCKERD_PID" 2>/dev/null
    if [ -n "${FORWARD_POLICY:-}" ]; then
      iptables -P FORWARD "$FORWARD_POLICY" 2>/dev/null || true
    fi
  fi
  log "$([ $rc -eq 0 ] && echo PASSED || echo "FAILED (exit $rc)") in $(( $(date +%s) - START )) s"
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

install_tools
start_dockerd
base_image
plugin_jar
extra_cas
log "building the images (base $HRDMA_BASE_IMAGE, mirror $HRDMA_DEBIAN_MIRROR, jar $HRDMA_PLUGIN_JAR)"
"${COMPOSE[@]}" build namenode dn1 client
COMPOSE_UP=1
"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true # a killed run's leftovers
log "starting the NameNode and three DataNodes"
"${COMPOSE[@]}" up -d --no-build namenode dn1 dn2 dn3
log "running the client's check"
"${COMPOSE[@]}" run --rm --no-deps client
