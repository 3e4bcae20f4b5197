#!/bin/bash
# A throwaway PostgreSQL cluster on a Unix socket, for tests: no TCP port, trust auth for the
# socket only, gone with its directory.
#   tests/pg/cluster.sh start DIR   -> prints a connection string (host=DIR/sock dbname=rackboot)
#   tests/pg/cluster.sh stop DIR
# Runs the server as the postgres user when started as root (initdb refuses root).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 3; }
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case $cmd in
start)
    mkdir -p "$dir/sock"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    as "$bin/initdb" -D "$dir/data" -A trust -U rackboot --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-k $dir/sock -c listen_addresses= -c max_connections=300 -c fsync=on" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    as "$bin/createdb" -h "$dir/sock" -U rackboot rackboot
    echo "host=$dir/sock user=rackboot dbname=rackboot"
    ;;
stop)
    [ -d "$dir/data" ] && as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
esac
