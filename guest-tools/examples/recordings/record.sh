#!/usr/bin/env bash
# Makes the examples' recordings again (docs/recording.md, "Recordings as
# tests"): each example is called once in a fresh workspace under the grant
# its README gives, with --record (csvstats reads its file with Python's
# open, through WASI; httpget's request goes to a server this
# script starts on loopback; its replay sends nothing). tests/it/replay.rs replays each one with
# the example just built (`toolhost replay --check --component NAME=FILE`).
# Run it after a change to an example that is meant to change what it asks
# or answers.
#
# Usage: guest-tools/examples/recordings/record.sh [TOOLHOST] [EXAMPLES_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
toolhost=${1:-$here/../../../target/debug/toolhost}
examples=${2:-$here/../../../target/examples}

record() {
    local name=$1 tool=$2 args=$3 grant=$4
    shift 4
    local ws home
    ws=$(mktemp -d) home=$(mktemp -d)
    mkdir -p "$home/toolhost/extensions"
    cp "$examples/$name.wasm" "$home/toolhost/extensions/"
    printf '[extensions.%s]\n%s\n' "$name" "$grant" >"$home/toolhost/toml.tmp"
    mv "$home/toolhost/toml.tmp" "$home/toolhost/toolhost.toml"
    while [ $# -gt 0 ]; do
        mkdir -p "$(dirname "$ws/$1")"
        printf '%s' "$2" >"$ws/$1"
        shift 2
    done
    XDG_CONFIG_HOME=$home XDG_STATE_HOME=$home/state "$toolhost" --workspace "$ws" \
        --record "$here/$name.rec" call "$tool" "$args"
    rm -rf "$ws" "$home"
}

record wordcount wc '{"path":"data"}' 'fs-read = ["data"]' \
    data/a.txt $'one two\nthree\n' data/sub/b.md $'h\xc3\xa9llo w\xc3\xb6rld\n'
record jsonquery json_query '{"path":"data/pkg.json","query":".dependencies.serde"}' \
    'fs-read = ["data"]' \
    data/pkg.json '{"name":"demo","dependencies":{"serde":"1.0","tokio":"1"}}'
record cksum cksum '{"paths":["data/hello.txt","data/more.txt"]}' 'fs-read = ["data"]' \
    data/hello.txt $'hello\n' data/more.txt $'more\n'
record csvstats csv_stats '{"path":"data/sales.csv"}' 'fs-read = ["data"]' \
    data/sales.csv $'region,units,price\nnorth,3,2.5\nsouth,5,4\neast,,1.25\n'

# httpget: a page served by Python's http.server on a free loopback port.
site=$(mktemp -d)
printf 'hello from the recorded server\n' >"$site/hello.txt"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$site" "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$site"' EXIT
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.1)" 2>/dev/null && break
    sleep 0.1
done
record httpget http_get "{\"url\":\"http://localhost:$port/hello.txt\"}" \
    "http = [\"http://localhost:$port\"]"
