# Sourced by the bench scripts whose programs live under bench/: builds them
# into a build directory configured with -DDTF_BUILD_BENCH=ON (a directory
# configured without it is reconfigured with it; its other options stay).

# build_bench REPO BUILD_DIR TARGET...: builds TARGET... (niced) into BUILD_DIR.
build_bench() {
  local repo="$1" build="$2"
  shift 2
  if [[ -f "$build/build.ninja" ]]; then
    cmake -DDTF_BUILD_BENCH=ON "$build" > /dev/null
  fi
  DTF_BUILD_DIR="$build" DTF_CMAKE_ARGS="${DTF_CMAKE_ARGS:-} -DDTF_BUILD_BENCH=ON" \
    nice -n 19 bash "$repo/scripts/build.sh" "$@"
}
