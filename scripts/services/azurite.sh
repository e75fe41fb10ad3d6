#!/usr/bin/env bash
# Azurite (the Azure Storage emulator: Blob, Queue, Table) for ragtune's integration tests, in
# memory, on 127.0.0.1.
#
# usage: scripts/services/azurite.sh start|stop|env
#
#   start  Install Azurite into .services/node/ when it is missing (`npm install --prefix
#          .services/node azurite`, about 10 s, from the npm registry), then start
#          `azurite --silent --inMemoryPersistence --disableTelemetry --skipApiVersionCheck`
#          with its three services on 127.0.0.1 and wait until every port accepts connections.
#          Ports: $RAGTUNE_TEST_AZURITE_BLOB_PORT / _QUEUE_PORT / _TABLE_PORT when set (the start
#          fails when one is taken), else 10000 / 10001 / 10002, or the next free ports when
#          those are taken. Prints the connection string on stdout and writes it to
#          .services/azurite/connection_string. Does nothing but print it when Azurite already runs.
#   stop   Stop the Azurite started here (by the pid in .services/azurite/pid, checked to still
#          be azurite). Succeeds when nothing runs, including after a start that failed half-way.
#   env    Print `export RAGTUNE_TEST_AZURITE_CONNECTION_STRING=...` (use with eval).
#
# The connection string holds Azurite's well-known development account (devstoreaccount1 and
# its published key); it is not a secret. --disableTelemetry matters: without it Azurite tries
# to reach the internet. Messages go to stderr; only the connection string (start) or the
# export line (env) go to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STATE="$ROOT/.services/azurite"
NODE_PREFIX="$ROOT/.services/node"
BIN="$NODE_PREFIX/node_modules/.bin/azurite"
ACCOUNT=devstoreaccount1
# Azurite's published development key (https://learn.microsoft.com/azure/storage/common/storage-use-azurite).
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

log() { echo "azurite.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# choose_port VAR DEFAULT TAKEN...: the port in $VAR, else DEFAULT or the next free port that is
# not among TAKEN (ports already picked for the other services).
choose_port() {
  local var="$1" default="$2"
  shift 2
  local want="${!var:-}"
  if [ -n "$want" ]; then
    [[ "$want" =~ ^[0-9]+$ ]] || die "$var must be a port number, got '$want'"
    port_in_use "$want" && die "port $want ($var) is in use on 127.0.0.1"
    echo "$want"
    return
  fi
  local p t skip
  for p in $(seq "$default" 3 $((default + 3 * 40))); do
    skip=0
    for t in "$@"; do [ "$p" = "$t" ] && skip=1; done
    if [ "$skip" = 0 ] && ! port_in_use "$p"; then
      echo "$p"
      return
    fi
  done
  die "no free port near $default on 127.0.0.1: set $var"
}

# The pid in the pid file when that process is still azurite (a reused pid is not ours).
running_pid() {
  [ -f "$STATE/pid" ] || return 1
  local pid
  pid="$(cat "$STATE/pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *azurite* ]] || return 1
  echo "$pid"
}

install() {
  [ -x "$BIN" ] && return 0
  command -v npm >/dev/null || die "npm not found: install Node.js and npm (apt-get install nodejs npm)"
  mkdir -p "$NODE_PREFIX"
  exec 8>"$NODE_PREFIX/install.lock"
  flock 8
  if [ ! -x "$BIN" ]; then
    log "installing azurite into $NODE_PREFIX"
    npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error azurite >&2
  fi
  exec 8>&-
  [ -x "$BIN" ] || die "npm install azurite did not produce $BIN"
}

connection_string() {
  echo "DefaultEndpointsProtocol=http;AccountName=$ACCOUNT;AccountKey=$KEY;BlobEndpoint=http://127.0.0.1:$1/$ACCOUNT;QueueEndpoint=http://127.0.0.1:$2/$ACCOUNT;TableEndpoint=http://127.0.0.1:$3/$ACCOUNT;"
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
  rm -f "$STATE/pid" "$STATE/connection_string" "$STATE/ports"
}

cmd_start() {
  install
  mkdir -p "$STATE"
  exec 9>"$STATE/lock"
  flock 9
  if running_pid >/dev/null && [ -f "$STATE/connection_string" ]; then
    log "already running"
    cat "$STATE/connection_string"
    return 0
  fi
  rm -f "$STATE/pid" "$STATE/connection_string" "$STATE/ports"
  local blob queue table started
  blob="$(choose_port RAGTUNE_TEST_AZURITE_BLOB_PORT 10000)"
  queue="$(choose_port RAGTUNE_TEST_AZURITE_QUEUE_PORT 10001 "$blob")"
  table="$(choose_port RAGTUNE_TEST_AZURITE_TABLE_PORT 10002 "$blob" "$queue")"
  started="$(date +%s%N)"
  # 9>&- : the server must not inherit the lock's file descriptor.
  # Run in $STATE so anything Azurite writes to its working folder stays there.
  (cd "$STATE" && exec nohup "$BIN" --silent --inMemoryPersistence --disableTelemetry --skipApiVersionCheck \
    --blobHost 127.0.0.1 --blobPort "$blob" --queueHost 127.0.0.1 --queuePort "$queue" \
    --tableHost 127.0.0.1 --tablePort "$table" \
    >"$STATE/server.log" 2>&1 9>&-) &
  echo $! >"$STATE/pid"
  echo "$blob $queue $table" >"$STATE/ports"
  local i
  for i in $(seq 1 150); do
    if port_in_use "$blob" && port_in_use "$queue" && port_in_use "$table"; then
      connection_string "$blob" "$queue" "$table" >"$STATE/connection_string"
      log "azurite on 127.0.0.1: blob $blob, queue $queue, table $table (ready in $(( ($(date +%s%N) - started) / 1000000 )) ms)"
      cat "$STATE/connection_string"
      return 0
    fi
    # Alive is enough here: until the subshell execs, its command line is not azurite's yet.
    if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      tail -n 20 "$STATE/server.log" >&2 || true
      rm -f "$STATE/pid" "$STATE/ports"
      die "azurite exited (log: $STATE/server.log)"
    fi
    sleep 0.1
  done
  tail -n 20 "$STATE/server.log" >&2 || true
  cmd_stop
  die "azurite did not open its ports in 15 s (log: $STATE/server.log)"
}

cmd_env() {
  [ -f "$STATE/connection_string" ] || die "azurite is not running: run scripts/services/azurite.sh start"
  running_pid >/dev/null || die "azurite is not running (stale $STATE/connection_string): run scripts/services/azurite.sh start"
  printf 'export RAGTUNE_TEST_AZURITE_CONNECTION_STRING=%q\n' "$(cat "$STATE/connection_string")"
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
