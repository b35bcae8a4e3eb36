#!/usr/bin/env bash
# Installs the Debian packages dtf builds and tests with, when missing.
# Usage: scripts/deps.sh [--test]   (--test adds what the test suite needs)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libabsl-dev libfmt-dev libcli11-dev libtomlplusplus-dev libssh-dev
  nlohmann-json3-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libeigen3-dev zlib1g-dev libfarmhash-dev libzip-dev libssl-dev libgloo-dev
  libcurl4-openssl-dev libgtest-dev libgmock-dev
)
if [[ "${1:-}" == "--test" ]]; then
  # skopeo, umoci and podman read the OCI image `dtf pack image` writes
  # (tests/launch/pack/pack_image_test.cc).
  # curl and the venv of tests/testing/s3_env.sh: the S3 server of the
  # storage tests (SeaweedFS from PyPI).
  # Java 17: the Spark cluster of the Spark tests (tests/testing/
  # spark_cluster.sh; Spark itself is PyPI's pyspark, in build/venv-spark).
  # iproute2, tcpdump and openssl: the hosts in network namespaces of
  # tests/e2e/attacker.sh, its capture of their traffic and another CA.
  packages+=(python3 python3-venv python3-pip clang-14 libclang-rt-14-dev curl
             bsdutils openssh-server openssh-client skopeo umoci podman
             openjdk-17-jre-headless iproute2 tcpdump openssl)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
echo "deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >&2
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
