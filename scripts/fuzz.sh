#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for
# SECONDS (default 30), starting from a small seed corpus: for the readers of
# data, one made from the sample data: CSV excerpts, and (written by
# fuzz_seeds, dtf's own encoders) serialized Examples and TFRecord files,
# plain, gzip and zlib, and parameter server calls; for the readers of dtf's
# own files (archives, manifests, bundles, job files, profiles, hostfiles,
# compressed streams), the one checked in under tests/fuzz/corpus/. Fails
# when a target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
build="${DTF_FUZZ_BUILD_DIR:-build-fuzz}"
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang-14 CXX=clang++-14 cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-gline-tables-only \
    -DDTF_BUILD_FUZZERS=ON \
    -DDTF_BUILD_TESTS=OFF -DDTF_ENABLE_CUDA=OFF >/dev/null
fi
targets=(csv_reader_fuzz record_reader_fuzz example_fuzz ps_store_fuzz
  pack_manifest_fuzz pack_unpack_fuzz bundle_fuzz job_file_fuzz profile_fuzz
  hostfile_fuzz hostlist_fuzz decompress_fuzz)
# Options of single targets. The TOML readers' inputs stay under 64 KiB:
# toml++ recurses once per level of nesting.
declare -A options=(
  [job_file_fuzz]="-max_len=65536"
  [profile_fuzz]="-max_len=65536"
)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" fuzz_seeds
shared="${DTF_SHARED_DIR:-../shared}"
titanic="$shared/data/titanic/train.csv"
[[ -f "$titanic" ]] || { echo "fuzz: no sample data at $titanic" >&2; exit 1; }
"$build/tests/fuzz/fuzz_seeds" "$titanic" "$build/seeds"
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  if [[ "$t" == csv_reader_fuzz ]]; then
    head -c 4000 "$titanic" > "$corpus/titanic.csv"
    head -c 4000 "$shared/data/adult/adult.data" > "$corpus/adult.csv"
  elif [[ -d "tests/fuzz/corpus/$t" ]]; then
    cp tests/fuzz/corpus/"$t"/* "$corpus/"
  else
    cp "$build/seeds/$t"/* "$corpus/"
  fi
  echo "fuzz: $t for ${seconds}s" >&2
  # shellcheck disable=SC2086  # the options are a list
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -print_final_stats=0 \
    ${options[$t]:-} \
    -artifact_prefix="$build/$t-" "$corpus" 2>"$build/$t.log" || {
      tail -n 40 "$build/$t.log" >&2
      echo "fuzz: $t found a failure; see $build/$t.log" >&2
      exit 1
    }
done
