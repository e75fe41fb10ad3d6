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
STATE="$ROOT/.services/moto"
BIN="$ROOT/.venv/bin/moto_server"
PY="$ROOT/.venv/bin/python"
DEFAULT_PORT=5055

log() { echo "moto.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

choose_port() {
  if [ -n "${RAGTUNE_TEST_S3_PORT:-}" ]; then
    [[ "$RAGTUNE_TEST_S3_PORT" =~ ^[0-9]+$ ]] || die "RAGTUNE_TEST_S3_PORT must be a port number, got '$RAGTUNE_TEST_S3_PORT'"
    port_in_use "$RAGTUNE_TEST_S3_PORT" && die "port $RAGTUNE_TEST_S3_PORT (RAGTUNE_TEST_S3_PORT) is in use on 127.0.0.1"
    echo "$RAGTUNE_TEST_S3_PORT"
    return
  fi
  local p
  for p in $(seq "$DEFAULT_PORT" $((DEFAULT_PORT + 49))); do
    if ! port_in_use "$p"; then
      echo "$p"
      return
    fi
  done
  die "no free port in $DEFAULT_PORT-$((DEFAULT_PORT + 49)) on 127.0.0.1: set RAGTUNE_TEST_S3_PORT"
}

# The pid in the pid file when that process is still a moto_server (a reused pid is not ours).
running_pid() {
  [ -f "$STATE/pid" ] || return 1
  local pid
  pid="$(cat "$STATE/pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *moto_server* ]] || return 1
  echo "$pid"
}

answers() {
  "$PY" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/", timeout=1).close()
PY
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    kill "$pid" 2>/dev/null || true
    local _
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  else
    log "not running"
  fi
  rm -f "$STATE/pid" "$STATE/endpoint" "$STATE/port"
}

cmd_start() {
  [ -x "$BIN" ] || die "$BIN not found: pip install 'moto[server]' into .venv (scripts/setup.sh does)"
  mkdir -p "$STATE"
  exec 9>"$STATE/lock"
  flock 9
  if running_pid >/dev/null && [ -f "$STATE/endpoint" ]; then
    log "already running at $(cat "$STATE/endpoint")"
    cat "$STATE/endpoint"
    return 0
  fi
  rm -f "$STATE/pid" "$STATE/endpoint" "$STATE/port"
  local port started
  port="$(choose_port)"
  started="$(date +%s%N)"
  # 9>&- : the server must not inherit the lock's file descriptor.
  nohup "$BIN" -H 127.0.0.1 -p "$port" >"$STATE/server.log" 2>&1 9>&- &
  echo $! >"$STATE/pid"
  echo "$port" >"$STATE/port"
  local i
  for i in $(seq 1 150); do
    if answers "$port"; then
      echo "http://127.0.0.1:$port" >"$STATE/endpoint"
      log "moto_server on 127.0.0.1:$port (ready in $(( ($(date +%s%N) - started) / 1000000 )) ms)"
      cat "$STATE/endpoint"
      return 0
    fi
    # Alive is enough here: until nohup execs, its command line is not moto's yet.
    if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      tail -n 20 "$STATE/server.log" >&2 || true
      rm -f "$STATE/pid" "$STATE/port"
      die "moto_server exited (log: $STATE/server.log)"
    fi
    sleep 0.1
  done
  tail -n 20 "$STATE/server.log" >&2 || true
  cmd_stop
  die "moto_server did not answer on 127.0.0.1:$port in 15 s (log: $STATE/server.log)"
}

cmd_env() {
  [ -f "$STATE/endpoint" ] || die "moto_server is not running: run scripts/services/moto.sh start"
  running_pid >/dev/null || die "moto_server is not running (stale $STATE/endpoint): run scripts/services/moto.sh start"
  printf 'export RAGTUNE_TEST_S3_ENDPOINT=%q\n' "$(cat "$STATE/endpoint")"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
