#!/usr/bin/env bash
# PostgreSQL with pgvector for ragtune's integration tests: install it, run a throwaway cluster.
#
# usage: scripts/services/postgres.sh install|start|stop|env
#
#   install  Install PostgreSQL and pgvector (needs root; idempotent: nothing happens when
#            pgvector's vector.control is already there for the PostgreSQL version below).
#              Debian 12: apt-get install postgresql-15 postgresql-server-dev-15 build-essential
#                dpkg-dev; Debian 12 has no pgvector package, so Debian 13's pgvector SOURCE package
#                is fetched with `apt-get source` under a private apt configuration (its own
#                sources list with one deb-src line for trixie, its own lists and cache folders;
#                the system's apt sources and caches are not touched) and built with make against
#                /usr/lib/postgresql/15/bin/pg_config.
#              Debian 13: apt-get install postgresql-17 postgresql-17-pgvector.
#   start    Create (first time) and start a throwaway cluster in .services/postgres/ listening on
#            127.0.0.1 only, port $RAGTUNE_TEST_PG_PORT (default: 55432, or the next free port when
#            55432 is taken), trust authentication, fsync off. Creates database `ragtune` with
#            the `vector` extension. Prints the DSN on stdout and writes it to
#            .services/postgres/dsn. Does nothing but print the DSN when the cluster already runs.
#   stop     Stop the cluster (pg_ctl stop -m fast). Succeeds when nothing runs, including after
#            a start that failed half-way. The data stays; `rm -rf .services/postgres` resets it.
#   env      Print `export RAGTUNE_TEST_PG_DSN=...` for the running cluster (use with eval).
#
# Environment: RAGTUNE_TEST_PG_PORT (port), RAGTUNE_DEBIAN_MIRROR (default http://deb.debian.org/debian,
# used for the trixie deb-src line on Debian 12).
#
# Messages go to stderr; only the DSN (start) or the export line (env) go to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SERVICES="$ROOT/.services"
STATE="$SERVICES/postgres"
DEFAULT_PORT=55432
DB_NAME=ragtune

SERVICE=postgres.sh
# shellcheck source=lib.sh
. "$ROOT/scripts/services/lib.sh"

debian_major() {
  local v
  v="$(cat /etc/debian_version 2>/dev/null || true)"
  case "$v" in
    12.* | bookworm*) echo 12 ;;
    13.* | trixie*) echo 13 ;;
    "") die "/etc/debian_version not found: this script supports Debian 12 and 13" ;;
    *) echo "${v%%.*}" ;;
  esac
}

# PostgreSQL major version this Debian release ships.
pg_version() {
  case "$(debian_major)" in
    12) echo 15 ;;
    13) echo 17 ;;
    *) die "unsupported Debian release $(cat /etc/debian_version): this script supports Debian 12 and 13" ;;
  esac
}

vector_control() { echo "/usr/share/postgresql/$1/extension/vector.control"; }

pkg_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

# ---------------------------------------------------------------------------------------- install

install_debian12() {
  local pgv=15 pg_config=/usr/lib/postgresql/15/bin/pg_config
  local pkgs=(postgresql-15 postgresql-server-dev-15 build-essential dpkg-dev) missing=() p
  for p in "${pkgs[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -q
    apt-get install -y -q "${pkgs[@]}"
  fi

  # Private apt configuration: only a deb-src line for trixie; own lists and caches.
  local apt_dir="$SERVICES/apt-trixie" mirror="${RAGTUNE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
    > "$apt_dir/sources.list"
  local apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=root"
  )
  log "fetching Debian 13's pgvector source package"
  apt-get "${apt_opts[@]}" update -q
  local build="$SERVICES/build/pgvector"
  rm -rf "$build"
  mkdir -p "$build"
  (cd "$build" && apt-get "${apt_opts[@]}" source -q pgvector)
  local src
  src="$(find "$build" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
  [ -n "$src" ] || die "apt-get source pgvector produced no source folder in $build"
  log "building $(basename "$src") against PostgreSQL $pgv"
  make -s -C "$src" -j "$(nproc)" PG_CONFIG="$pg_config" >&2
  make -s -C "$src" install PG_CONFIG="$pg_config" >&2
}

install_debian13() {
  local pkgs=(postgresql-17 postgresql-17-pgvector)
  log "installing ${pkgs[*]}"
  apt-get update -q
  apt-get install -y -q "${pkgs[@]}"
}

cmd_install() {
  local pgv
  pgv="$(pg_version)"
  if [ -f "$(vector_control "$pgv")" ] && [ -x "/usr/lib/postgresql/$pgv/bin/initdb" ]; then
    log "PostgreSQL $pgv with pgvector is installed"
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "install needs root (it runs apt-get and installs into /usr)"
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p "$SERVICES"
  exec 8>"$SERVICES/postgres-install.lock"
  flock 8
  case "$(debian_major)" in
    12) install_debian12 ;;
    13) install_debian13 ;;
  esac
  [ -f "$(vector_control "$pgv")" ] || die "pgvector is still missing: $(vector_control "$pgv") not found"
  log "PostgreSQL $pgv with pgvector installed"
}

# ----------------------------------------------------------------------------------- the cluster

# Run a command as the cluster's owner: user postgres when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Where the cluster lives: .services/postgres, unless user postgres cannot reach it (a checkout
# under a private home folder), then a folder under /tmp named after the checkout; recorded in
# .services/postgres/cluster so stop and env find it.
cluster_dir() {
  if [ -f "$STATE/cluster" ]; then
    cat "$STATE/cluster"
    return
  fi
  local dir="$STATE"
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$STATE"; then
    dir="${TMPDIR:-/tmp}/ragtune-postgres-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
    log "user postgres cannot reach $STATE; the cluster lives in $dir"
  fi
  echo "$dir"
}

# Unix socket folder: socket paths are limited to 107 bytes, so a long checkout path falls back to /tmp.
socket_dir() {
  local dir="$1/sock"
  if [ "${#dir}" -gt 90 ]; then
    dir="${TMPDIR:-/tmp}/ragtune-pg-sock-$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
  fi
  echo "$dir"
}

# bin folder for the cluster in $1: the version that created it, else the installed one.
bin_dir_for() {
  local pgv
  if [ -f "$1/data/PG_VERSION" ]; then
    pgv="$(cat "$1/data/PG_VERSION")"
  else
    pgv="$(pg_version)"
  fi
  echo "/usr/lib/postgresql/$pgv/bin"
}

is_running() {
  local dir="$1" bin
  bin="$(bin_dir_for "$dir")"
  [ -f "$dir/data/postmaster.pid" ] && [ -x "$bin/pg_ctl" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

dsn_for_port() { echo "postgresql://postgres@127.0.0.1:$1/$DB_NAME"; }

cmd_start() {
  local pgv bin
  pgv="$(pg_version)"
  bin="/usr/lib/postgresql/$pgv/bin"
  [ -x "$bin/initdb" ] || die "PostgreSQL $pgv is not installed: run scripts/services/postgres.sh install"
  [ -f "$(vector_control "$pgv")" ] || die "pgvector is not installed for PostgreSQL $pgv: run scripts/services/postgres.sh install"
  mkdir -p "$STATE"
  exec 9>"$STATE/lock"
  flock 9

  local dir
  dir="$(cluster_dir)"
  echo "$dir" > "$STATE/cluster"
  if is_running "$dir" && [ -f "$STATE/port" ]; then
    local port
    port="$(cat "$STATE/port")"
    log "already running on 127.0.0.1:$port"
    dsn_for_port "$port" | tee "$STATE/dsn"
    return 0
  fi

  local data="$dir/data" sock
  sock="$(socket_dir "$dir")"
  # A data folder from another PostgreSQL version, or left half-made by a failed initdb, is thrown away.
  if [ -d "$data" ] && { [ ! -f "$data/PG_VERSION" ] || [ "$(cat "$data/PG_VERSION")" != "$pgv" ]; }; then
    log "removing unusable data folder $data"
    rm -rf "$data"
  fi
  mkdir -p "$dir" "$sock"
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$dir" "$sock"
  fi
  chmod 700 "$sock"
  if [ ! -f "$data/PG_VERSION" ]; then
    local locale_opt=(--no-locale)
    if locale -a 2>/dev/null | grep -ix 'c\.utf-\?8' >/dev/null; then locale_opt=(--locale=C.UTF-8); fi
    log "creating cluster in $data"
    as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 "${locale_opt[@]}" --no-sync >/dev/null
  fi

  local port
  port="$(choose_port RAGTUNE_TEST_PG_PORT "$DEFAULT_PORT" 1)"
  rm -f "$STATE/dsn"
  echo "$port" > "$STATE/port"
  echo "$sock" > "$STATE/socket_dir"
  log "starting PostgreSQL $pgv on 127.0.0.1:$port"
  # 9>&- below: the server must not inherit the lock's file descriptor (it would hold the lock forever).
  if ! as_owner "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 9>&-; then
    tail -n 20 "$dir/server.log" >&2 || true
    die "PostgreSQL did not start (log: $dir/server.log)"
  fi
  local i
  for i in $(seq 1 60); do
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then break; fi
    [ "$i" = 60 ] && die "PostgreSQL on 127.0.0.1:$port is not ready after 30 s (log: $dir/server.log)"
    sleep 0.5
  done
  local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
  if [ -z "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE $DB_NAME"
  fi
  "${psql[@]}" -d "$DB_NAME" -c "CREATE EXTENSION IF NOT EXISTS vector" 2>&1 | grep -v "already exists" >&2 || true
  "${psql[@]}" -d "$DB_NAME" -tAc "SELECT 1 FROM pg_extension WHERE extname = 'vector'" | grep 1 >/dev/null \
    || die "CREATE EXTENSION vector failed in database $DB_NAME"
  dsn_for_port "$port" | tee "$STATE/dsn"
}

cmd_stop() {
  if [ ! -f "$STATE/cluster" ] && [ ! -d "$STATE/data" ]; then
    log "nothing to stop"
    return 0
  fi
  local dir bin
  dir="$(cluster_dir)"
  bin="$(bin_dir_for "$dir")"
  if [ -f "$dir/data/postmaster.pid" ] && [ -x "$bin/pg_ctl" ]; then
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1; then
      if is_running "$dir"; then
        die "pg_ctl stop failed and the server still runs (log: $dir/server.log)"
      fi
    else
      log "stopped"
    fi
  else
    log "not running"
  fi
  rm -f "$STATE/dsn" "$STATE/port"
}

cmd_env() {
  [ -f "$STATE/dsn" ] || die "PostgreSQL is not running: run scripts/services/postgres.sh start"
  local dir
  dir="$(cluster_dir)"
  is_running "$dir" || die "PostgreSQL is not running (stale $STATE/dsn): run scripts/services/postgres.sh start"
  printf 'export RAGTUNE_TEST_PG_DSN=%q\n' "$(cat "$STATE/dsn")"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 install|start|stop|env" >&2
    exit 2
    ;;
esac
