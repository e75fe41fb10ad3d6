# Shared helpers of the test-service scripts (sourced, not run). Set SERVICE (the script's name
# in messages) and STATE (its folder under .services/) before sourcing.
#
#   log MSG / die MSG             message on stderr / message and exit 1
#   port_in_use PORT              true when something accepts connections on 127.0.0.1:PORT
#   choose_port VAR DEFAULT STEP TAKEN...
#                                 the port in $VAR (must be free), else DEFAULT or the next free
#                                 port DEFAULT+STEP, DEFAULT+2*STEP, ... (50 tries) not in TAKEN
#   running_pid PATTERN           the pid in $STATE/pid when that process still runs and its
#                                 command line holds PATTERN (a reused pid is not ours)
#   stop_pid PATTERN FILES...     stop that process (TERM, then KILL after 5 s) and remove
#                                 $STATE/pid and FILES; succeeds when nothing runs
#   wait_ready SECONDS CHECK...   run CHECK every 0.1 s until it succeeds; fails at once when the
#                                 process in $STATE/pid has exited, or after SECONDS (the log in
#                                 $STATE/server.log is shown either way)
#   lock_state                    create $STATE and hold its lock (fd 9) until the script ends
#   already_running PATTERN FILE  true (and FILE printed) when the server runs and FILE exists
#   ready VALUE FILE [SHOWN]      write VALUE to $STATE/FILE, log SHOWN (default VALUE) with the
#                                 readiness time, print VALUE
#   print_env VAR FILE PATTERN    print `export VAR=<contents of $STATE/FILE>`; fails when the
#                                 server is not running

log() { echo "$SERVICE: $*" >&2; }
die() { log "error: $*"; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

choose_port() {
  local var="$1" default="$2" step="$3"
  shift 3
  local want="${!var:-}"
  if [ -n "$want" ]; then
    [[ "$want" =~ ^[0-9]+$ ]] || die "$var must be a port number, got '$want'"
    port_in_use "$want" && die "port $want ($var) is in use on 127.0.0.1"
    echo "$want"
    return
  fi
  local p t skip i
  for i in $(seq 0 49); do
    p=$((default + i * step))
    skip=0
    for t in "$@"; do [ "$p" = "$t" ] && skip=1; done
    if [ "$skip" = 0 ] && ! port_in_use "$p"; then
      echo "$p"
      return
    fi
  done
  die "no free port from $default (step $step) on 127.0.0.1: set $var"
}

running_pid() {
  [ -f "$STATE/pid" ] || return 1
  local pid cmdline
  pid="$(cat "$STATE/pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"$1"* ]] || return 1
  echo "$pid"
}

stop_pid() {
  local pattern="$1" pid _
  shift
  if pid="$(running_pid "$pattern")"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  else
    log "not running"
  fi
  local f
  rm -f "$STATE/pid"
  for f in "$@"; do rm -f "$STATE/$f"; done
}

wait_ready() {
  local seconds="$1" started i
  shift
  started="$(date +%s%N)"
  for i in $(seq 1 $((seconds * 10))); do
    if "$@"; then
      READY_MS=$(( ($(date +%s%N) - started) / 1000000 ))
      return 0
    fi
    # Alive is enough here: until nohup execs, the command line is not the server's yet.
    if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      tail -n 20 "$STATE/server.log" >&2 || true
      rm -f "$STATE/pid"
      die "the server exited (log: $STATE/server.log)"
    fi
    sleep 0.1
  done
  tail -n 20 "$STATE/server.log" >&2 || true
  return 1
}

lock_state() {
  mkdir -p "$STATE"
  exec 9>"$STATE/lock"
  flock 9
}

already_running() {
  if running_pid "$1" >/dev/null && [ -f "$STATE/$2" ]; then
    log "already running: $(cat "$STATE/$2")"
    cat "$STATE/$2"
    return 0
  fi
  return 1
}

ready() {
  echo "$1" >"$STATE/$2"
  log "ready in $READY_MS ms: ${3:-$1}"
  echo "$1"
}

print_env() {
  local script="scripts/services/$SERVICE"
  [ -f "$STATE/$2" ] || die "not running: run $script start"
  running_pid "$3" >/dev/null || die "not running (stale $STATE/$2): run $script start"
  printf 'export %s=%q\n' "$1" "$(cat "$STATE/$2")"
}
