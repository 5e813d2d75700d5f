#!/bin/sh
# Points apt at the given Debian 12 mirror (and security mirror), replacing whatever
# sources the base image had: a debootstrap'ed image and debian:bookworm-slim alike.
# usage: hrdma-apt-sources MIRROR [SECURITY_MIRROR]   (SECURITY_MIRROR "-" leaves it out)
set -eu
mirror=$1
security=${2:-http://deb.debian.org/debian-security}
rm -f /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list
{
  echo "deb $mirror bookworm main"
  echo "deb $mirror bookworm-updates main"
  [ "$security" = "-" ] || echo "deb $security bookworm-security main"
} > /etc/apt/sources.list
# Images are rebuilt, not upgraded in place: no recommends, no caches.
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > /etc/apt/apt.conf.d/90hrdma
