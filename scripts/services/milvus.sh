#!/usr/bin/env bash
# A Milvus server for ragtune's integration tests on 127.0.0.1, the same gRPC client path as a
# real Milvus server: Milvus Lite 2's native Milvus binary listening on TCP (Milvus Lite 3 has no
# such binary: its `milvus-lite server` is used instead).
#
# usage: scripts/services/milvus.sh start|stop|env
#
#   start  Start the server on a fresh database in .services/milvus/ and
#          wait until it answers a real gRPC call. Port: $RAGTUNE_MILVUS_PORT when set (the start
#          fails when it is taken), else 19539 or the next free port (milvus-lite would bind a
#          port already in use, so two checkouts on one machine must not share one). Prints the
#          URI on stdout and writes it to .services/milvus/uri. Does nothing but print the URI
#          when the server already runs.
#   stop   Stop the server started here (by the pid in .services/milvus/pid, checked to still be
#          milvus-lite). Succeeds when nothing runs.
#   env    Print `export RAGTUNE_TEST_MILVUS_URI=http://127.0.0.1:PORT` (use with eval).
#
# Messages go to stderr; only the URI (start) or the export line (env) go to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SERVICE=milvus.sh
STATE="$ROOT/.services/milvus"
BIN="$ROOT/.venv/bin/milvus-lite"
PY="$ROOT/.venv/bin/python"
# shellcheck source=lib.sh
. "$ROOT/scripts/services/lib.sh"

# Ready when it answers a real gRPC call (it accepts TCP connections a little earlier).
answers() {
  port_in_use "$1" || return 1
  "$PY" - "$1" <<'PY' >/dev/null 2>&1
import sys
from pymilvus import MilvusClient
client = MilvusClient(uri=f"http://127.0.0.1:{sys.argv[1]}", timeout=5,
                      grpc_options={"grpc.keepalive_permit_without_calls": False})
client.list_collections()
client.close()
PY
}

# The Milvus binary of Milvus Lite 2 (empty for Milvus Lite 3).
lite_binary() {
  "$PY" - <<'PY' 2>/dev/null
from importlib import metadata
from pathlib import Path
if int(metadata.version("milvus-lite").split(".")[0]) < 3:
    import importlib.util
    lib = Path(importlib.util.find_spec("milvus_lite").origin).parent / "lib"
    print(lib / "milvus")
PY
}

cmd_stop() { stop_pid milvus uri; }

cmd_start() {
  [ -x "$PY" ] || die "$PY not found: run scripts/setup.sh first"
  lock_state
  already_running milvus uri && return 0
  rm -rf "$STATE/pid" "$STATE/uri" "$STATE/data.db"
  local port bin
  port="$(choose_port RAGTUNE_MILVUS_PORT 19539 1)"
  bin="$(lite_binary)"
  # 9>&- : the server must not inherit the lock's file descriptor.
  if [ -n "$bin" ]; then
    [ -x "$bin" ] || die "$bin not found: pip install milvus-lite into .venv (scripts/setup.sh does)"
    cd "$STATE"  # in its database's folder, as milvus_lite.server.Server starts it
    LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      nohup "$bin" "$STATE/data.db" "127.0.0.1:$port" ERROR >"$STATE/server.log" 2>&1 9>&- &
    echo $! >"$STATE/pid"
  else
    [ -x "$BIN" ] || die "$BIN not found: pip install milvus-lite into .venv (scripts/setup.sh does)"
    nohup "$BIN" server --data-dir "$STATE/data.db" --host 127.0.0.1 --port "$port" >"$STATE/server.log" 2>&1 9>&- &
    echo $! >"$STATE/pid"
  fi
  if wait_ready 30 answers "$port"; then
    ready "http://127.0.0.1:$port" uri
    return 0
  fi
  cmd_stop
  die "the Milvus server did not answer on 127.0.0.1:$port in 30 s (log: $STATE/server.log)"
}

cmd_env() { print_env RAGTUNE_TEST_MILVUS_URI uri milvus; }

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
