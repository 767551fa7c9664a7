#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks: loopback only, trust-free, fsync off.
#   scripts/pg-test-cluster.sh start DIR [PORT]   initdb + start; prints the database URL as the last line
#   scripts/pg-test-cluster.sh stop DIR           stop it and delete DIR
#   scripts/pg-test-cluster.sh halt DIR           stop the server, keep its data (an outage)
#   scripts/pg-test-cluster.sh resume DIR         start a halted cluster again on its port
# Runs the server as the postgres user when started by root (initdb refuses root).
set -euo pipefail

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$PGBIN/initdb" ] || { echo "error: no PostgreSQL binaries (set PGBIN or install postgresql)" >&2; exit 1; }

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    local dir=$1 port=${2:-$(free_port)}
    mkdir -p "$dir"
    echo tewatch > "$dir/pw"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
    as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile="$dir/pw" -E UTF8 --no-locale >/dev/null
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 -o "$(server_options "$dir" "$port")" \
        start >/dev/null
    as_owner "$PGBIN/psql" -h "$dir" -p "$port" -U postgres -qv ON_ERROR_STOP=1 \
        -c "CREATE USER tewatch WITH PASSWORD 'tewatch' CREATEDB" -c "CREATE DATABASE tewatch OWNER tewatch" \
        -c "GRANT pg_signal_backend TO tewatch" >/dev/null
    echo "$port" > "$dir/port"
    echo "postgresql://tewatch:tewatch@127.0.0.1:$port/tewatch"
}

server_options() {
    echo "-p $2 -k $1 -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200"
}

halt() {
    as_owner "$PGBIN/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null
}

resume() {
    as_owner "$PGBIN/pg_ctl" -D "$1/data" -l "$1/log" -w -t 60 -o "$(server_options "$1" "$(cat "$1/port")")" \
        start >/dev/null
}

stop() {
    local dir=$1
    if [ -d "$dir/data" ]; then
        as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) start "${2:?usage: $0 start DIR [PORT]}" "${3:-}" ;;
    stop) stop "${2:?usage: $0 stop DIR}" ;;
    halt) halt "${2:?usage: $0 halt DIR}" ;;
    resume) resume "${2:?usage: $0 resume DIR}" ;;
    *) echo "usage: $0 start DIR [PORT] | stop DIR | halt DIR | resume DIR" >&2; exit 2 ;;
esac
