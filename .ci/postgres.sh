#!/usr/bin/env bash
# Start a throw-away PostgreSQL on 127.0.0.1 for the test suite and print its URL.
# Usage: eval "$(.ci/postgres.sh start)"   ...   .ci/postgres.sh stop
# (halt / resume stop and restart the same server, keeping its data: the outage tests)
# Installs Debian's postgresql package when no server binaries are present.
set -euo pipefail
PORT="${QADI_PG_PORT:-54329}"
DATA="${QADI_PG_DATA:-/tmp/qadi-pg-$PORT}"

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$dir" ]; then
    echo "installing postgresql from the distribution's packages" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$dir"
}

as_pg() {
  # PostgreSQL refuses to run as root.
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-start}" in
  start)
    BIN=$(pg_bin)
    rm -rf "$DATA"; mkdir -p "$DATA"
    [ "$(id -u)" = 0 ] && chown postgres "$DATA"
    as_pg "$BIN/initdb" -D "$DATA" -A trust -U postgres -E UTF8 >/dev/null
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
      -o "-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >&2
    as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres qadi_test
    echo "export QADI_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/qadi_test"
    # halt/resume (the outage tests) must find this server, not the default one
    echo "export QADI_PG_PORT=$PORT QADI_PG_DATA=$DATA"
    ;;
  stop)
    BIN=$(pg_bin)
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >&2 || true
    ;;
  halt)
    # the chaos tests: stop the server, keeping its data, as an outage would
    BIN=$(pg_bin)
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1
    ;;
  resume)
    BIN=$(pg_bin)
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
      -o "-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
      start >/dev/null 2>&1
    ;;
  *) echo "usage: $0 start|stop|halt|resume" >&2; exit 2 ;;
esac
