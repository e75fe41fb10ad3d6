#!/usr/bin/env bash
# A Milvus server for tests: `milvus-lite server` on 127.0.0.1, the same gRPC client path as a
# real Milvus server. Usage: milvus.sh start|stop|env. Data and pid live in .services/milvus/.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="$PWD/.services/milvus"
port="${RAGTUNE_MILVUS_PORT:-19539}"
py=".venv/bin"

case "${1:-}" in
  start)
    mkdir -p "$dir"
    if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "milvus-lite server already running (pid $(cat "$dir/pid"))" >&2
      exit 0
    fi
    rm -rf "$dir/data.db"
    # milvus-lite lets a second server bind a port already in use: find a free one first, so
    # two checkouts on one machine never share a server.
    port=$("$py/python" - "$port" <<'PY'
import socket, sys
start = int(sys.argv[1])
for p in range(start, start + 50):
    with socket.socket() as s:
        try:
            s.connect(("127.0.0.1", p))
        except OSError:
            print(p)
            break
else:
    sys.exit(f"no free port in {start}-{start + 49} on 127.0.0.1")
PY
)
    nohup "$py/milvus-lite" server --data-dir "$dir/data.db" --host 127.0.0.1 --port "$port" \
      >"$dir/server.log" 2>&1 &
    echo $! >"$dir/pid"
    echo "http://127.0.0.1:$port" >"$dir/uri"
    for _ in $(seq 1 100); do
      # Ready when it answers a real gRPC call (it accepts TCP connections a little earlier).
      if "$py/python" - "$port" <<'PY' >/dev/null 2>&1; then
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.2).close()
from pymilvus import MilvusClient
client = MilvusClient(uri=f"http://127.0.0.1:{sys.argv[1]}", timeout=5)
client.list_collections()
client.close()
PY
        echo "milvus-lite server on 127.0.0.1:$port" >&2
        exit 0
      fi
      if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "milvus-lite server exited; log:" >&2
        cat "$dir/server.log" >&2
        exit 1
      fi
      sleep 0.2
    done
    echo "milvus-lite server did not open port $port in 20 s; log:" >&2
    cat "$dir/server.log" >&2
    exit 1
    ;;
  stop)
    if [ -f "$dir/pid" ]; then
      kill "$(cat "$dir/pid")" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$(cat "$dir/pid")" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$(cat "$dir/pid")" 2>/dev/null || true
      rm -f "$dir/pid"
    fi
    ;;
  env)
    echo "export RAGTUNE_TEST_MILVUS_URI=$(cat "$dir/uri")"
    ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
