#!/usr/bin/env bash
# tf_env.sh BUILD_DIR
#
# Creates (once) a Python virtual environment at BUILD_DIR/venv-tf holding
# TensorFlow (CPU), pandas and TensorBoard, used by the TensorFlow interop
# test, the TensorBoard event file test and the gen-records benchmark. Later
# runs find the stamp file and re-use the venv; when the requirements change,
# a complete venv is updated in place (so that a test using it meanwhile
# keeps working) and an incomplete one is created again.
# Prints the venv's python path on stdout; everything else goes to stderr.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi

TF_VERSION="2.21.0"
PANDAS_VERSION="3.1.1"
# TensorFlow no longer depends on TensorBoard; installed for its loader.
TENSORBOARD_VERSION="2.21.0"
REQUIREMENTS=("tensorflow-cpu==${TF_VERSION}" "pandas==${PANDAS_VERSION}"
              "tensorboard==${TENSORBOARD_VERSION}")

source "$(dirname "${BASH_SOURCE[0]}")/../testing/venv.sh"
dtf_venv "$1" tf "tensorflow, pandas, tensorboard" "${REQUIREMENTS[@]}"
