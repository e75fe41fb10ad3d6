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

SERVICE=azurite.sh
# shellcheck source=lib.sh
. "$ROOT/scripts/services/lib.sh"

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

cmd_stop() { stop_pid azurite connection_string ports; }

all_ports_open() { port_in_use "$1" && port_in_use "$2" && port_in_use "$3"; }

cmd_start() {
  install
  lock_state
  already_running azurite connection_string && return 0
  rm -f "$STATE/pid" "$STATE/connection_string" "$STATE/ports"
  local blob queue table
  blob="$(choose_port RAGTUNE_TEST_AZURITE_BLOB_PORT 10000 3)"
  queue="$(choose_port RAGTUNE_TEST_AZURITE_QUEUE_PORT 10001 3 "$blob")"
  table="$(choose_port RAGTUNE_TEST_AZURITE_TABLE_PORT 10002 3 "$blob" "$queue")"
  # 9>&- : the server must not inherit the lock's file descriptor.
  # Run in $STATE so anything Azurite writes to its working folder stays there.
  (cd "$STATE" && exec nohup "$BIN" --silent --inMemoryPersistence --disableTelemetry --skipApiVersionCheck \
    --blobHost 127.0.0.1 --blobPort "$blob" --queueHost 127.0.0.1 --queuePort "$queue" \
    --tableHost 127.0.0.1 --tablePort "$table" \
    >"$STATE/server.log" 2>&1 9>&-) &
  echo $! >"$STATE/pid"
  echo "$blob $queue $table" >"$STATE/ports"
  if wait_ready 15 all_ports_open "$blob" "$queue" "$table"; then
    ready "$(connection_string "$blob" "$queue" "$table")" connection_string \
      "127.0.0.1 blob $blob, queue $queue, table $table"
    return 0
  fi
  cmd_stop
  die "azurite did not open its ports in 15 s (log: $STATE/server.log)"
}

cmd_env() { print_env RAGTUNE_TEST_AZURITE_CONNECTION_STRING connection_string azurite; }

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
