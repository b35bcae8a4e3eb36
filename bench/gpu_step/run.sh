#!/usr/bin/env bash
# GPU training step, dtf beside PyTorch on the same GPU in the same run:
#   bash bench/gpu_step/run.sh [BUILD_DIR]
# Builds gpu_step_bench (needs -DDTF_BUILD_BENCH=ON and nvcc), installs
# PyTorch into BUILD_DIR/venv-torch when missing, runs both and prints a
# table. Exits 2, saying why, on a machine without a CUDA device.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
# build_bench.
source "$here/../build_bench.sh"
build_bench "$root" "$build" gpu_step_bench >/dev/null
set +e
dtf_json=$("$build/bench/gpu_step_bench" --steps 100 --warmup 10)
rc=$?
set -e
if [[ $rc -ne 0 ]]; then exit "$rc"; fi
venv=$build/venv-torch
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch
fi
torch_json=$("$venv/bin/python" "$here/torch_step.py" --steps 100 --warmup 10)
python3 - "$dtf_json" "$torch_json" <<'PY'
import json, sys
d, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"GPU: {d['gpu']}  (PyTorch {t['torch']})")
print("| | steps/s | examples/s |")
print("|---|--:|--:|")
print(f"| dtf | {d['steps_per_sec']:.1f} | {d['examples_per_sec']:.0f} |")
print(f"| PyTorch | {t['steps_per_sec']:.1f} | {t['examples_per_sec']:.0f} |")
print(f"dtf / PyTorch: {d['steps_per_sec'] / t['steps_per_sec']:.2%}")
print(f"dense layers {d['dense_layers_tflops']:.1f} TFLOP/s, whole step "
      f"{d['step_tflops']:.1f} TFLOP/s, cuBLAS SGEMM 8192^3 "
      f"{d['cublas_sgemm_8192_tflops']:.1f} TFLOP/s")
print(f"loss {d['first_loss']:.4f} -> {d['last_loss']:.4f}")
PY
