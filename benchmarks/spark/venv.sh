#!/usr/bin/env bash
# Makes sure build/spark-venv holds PySpark (from PyPI) and prints its python's path.
# PYSPARK_VERSION picks another PySpark (default 4.3.0; it must bundle Hadoop 3.5).
# Used by 'hrdma spark-test' and 'hrdma bench spark'.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION=${PYSPARK_VERSION:-4.3.0}
VENV="$ROOT/build/spark-venv"
if ! "$VENV/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$VERSION')" 2>/dev/null; then
  echo "installing pyspark==$VERSION into $VENV (PyPI)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "pyspark==$VERSION" >&2
fi
echo "$VENV/bin/python"
