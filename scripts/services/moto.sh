#!/usr/bin/env bash
# An S3-compatible server for ragtune's integration tests: moto's server from the virtual
# environment, in memory, on 127.0.0.1.
#
# usage: scripts/services/moto.sh start|stop|env
#
#   start  Start `.venv/bin/moto_server -H 127.0.0.1 -p PORT` and wait until it answers HTTP.
#          PORT is $RAGTUNE_TEST_S3_PORT when set (the start fails when it is taken), else 5055,
#          or the next free port up to 5104. Prints the endpoint on stdout and writes it to
#          .services/moto/endpoint. Does nothing but print the endpoint when the server already runs.
#   stop   Stop the server started here (by the pid in .services/moto/pid, checked to still be
#          moto_server). Succeeds when nothing runs, including after a start that failed half-way.
#   env    Print `export RAGTUNE_TEST_S3_ENDPOINT=http://127.0.0.1:PORT` (use with eval).
#
# Clients use any access key (moto accepts dummy credentials). Data lives in memory only and is
# gone when the server stops. Messages go to stderr; only the endpoint (start) or the export
# line (env) go to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SERVICE=moto.sh
STATE="$ROOT/.services/moto"
BIN="$ROOT/.venv/bin/moto_server"
PY="$ROOT/.venv/bin/python"
DEFAULT_PORT=5055
# shellcheck source=lib.sh
. "$ROOT/scripts/services/lib.sh"

answers() {
  "$PY" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/", timeout=1).close()
PY
}

cmd_stop() { stop_pid moto_server endpoint port; }

cmd_start() {
  [ -x "$BIN" ] || die "$BIN not found: pip install 'moto[server]' into .venv (scripts/setup.sh does)"
  lock_state
  already_running moto_server endpoint && return 0
  rm -f "$STATE/pid" "$STATE/endpoint" "$STATE/port"
  local port
  port="$(choose_port RAGTUNE_TEST_S3_PORT "$DEFAULT_PORT" 1)"
  # 9>&- : the server must not inherit the lock's file descriptor.
  nohup "$BIN" -H 127.0.0.1 -p "$port" >"$STATE/server.log" 2>&1 9>&- &
  echo $! >"$STATE/pid"
  echo "$port" >"$STATE/port"
  if wait_ready 15 answers "$port"; then
    ready "http://127.0.0.1:$port" endpoint
    return 0
  fi
  cmd_stop
  die "moto_server did not answer on 127.0.0.1:$port in 15 s (log: $STATE/server.log)"
}

cmd_env() { print_env RAGTUNE_TEST_S3_ENDPOINT endpoint moto_server; }

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
