#!/usr/bin/env bash
# k8s_env.sh BUILD_DIR
#
# Creates (once) the Python virtual environment BUILD_DIR/venv-k8s holding
# kubernetes-validate (Kubernetes' OpenAPI schemas, for the rendered
# manifests) and jsonschema (for the TFJob against its CRD's schema), and
# PyYAML to read both. Prints the venv's python path on stdout.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi

REQUIREMENTS=("kubernetes-validate==1.34.1" "jsonschema==4.23.0"
              "PyYAML==6.0.2")

source "$(dirname "${BASH_SOURCE[0]}")/../testing/venv.sh"
dtf_venv "$1" k8s "kubernetes_validate, jsonschema, yaml" "${REQUIREMENTS[@]}"
