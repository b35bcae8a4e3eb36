#!/usr/bin/env bash
# spark_env.sh BUILD_DIR: the Python of BUILD_DIR/venv-spark, created once
# with PyPI's pyspark (Spark's jars, spark-class, spark-submit); prints its
# path. Java comes from Debian (scripts/deps.sh --test).
set -euo pipefail
# shellcheck source=tests/testing/venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
dtf_venv "$1" spark pyspark "pyspark==4.3.0"
