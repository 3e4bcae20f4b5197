#!/bin/bash
# A throwaway PostgreSQL cluster for tests: trust auth, gone with its directory.
#   tests/pg/cluster.sh start DIR        -> a connection string on a Unix socket (DIR/sock)
#   tests/pg/cluster.sh start DIR --tls  -> on 127.0.0.1 (a free port), TLS only, with a server
#                                           certificate from a CA made here: DIR/ca.pem
#   tests/pg/cluster.sh down DIR / up DIR   -> the server stopped hard / started again
#   tests/pg/cluster.sh stop DIR
# Runs the server as the postgres user when started as root (initdb refuses root).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}; tls=${3:-}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 3; }
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case $cmd in
start)
    mkdir -p "$dir/sock"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    as "$bin/initdb" -D "$dir/data" -A trust -U rackboot --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    opts="-k $dir/sock -c listen_addresses= -c max_connections=300"
    if [ "$tls" = --tls ]; then
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        (cd "$dir" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=test-ca -keyout ca.key -out ca.pem \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
         openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
            -keyout data/server.key -out server.csr 2>/dev/null
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out data/server.crt \
            -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth') 2>/dev/null)
        [ "$(id -u)" = 0 ] && chown postgres: "$dir/data/server.key" "$dir/data/server.crt"
        chmod 600 "$dir/data/server.key"
        printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 reject\n' > "$dir/data/pg_hba.conf"
        opts="-k $dir/sock -c listen_addresses=127.0.0.1 -p $port -c ssl=on -c max_connections=300"
    fi
    echo "$opts" > "$dir/opts"
    as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    if [ "$tls" = --tls ]; then
        as "$bin/createdb" -h "$dir/sock" -p "$port" -U rackboot rackboot
        echo "host=127.0.0.1 port=$port user=rackboot dbname=rackboot"
    else
        as "$bin/createdb" -h "$dir/sock" -U rackboot rackboot
        echo "host=$dir/sock user=rackboot dbname=rackboot"
    fi
    ;;
down)
    as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
up)
    as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/opts")" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    ;;
stop)
    [ -d "$dir/data" ] && as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
esac
