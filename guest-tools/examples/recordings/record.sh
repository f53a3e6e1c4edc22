#!/usr/bin/env bash
# Makes the examples' recordings again (docs/recording.md, "Recordings as
# tests"): each example is called once in a fresh workspace under the grant
# its README gives, with --record. tests/it/replay.rs replays each one with
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
    local name=$1 tool=$2 args=$3
    shift 3
    local ws home
    ws=$(mktemp -d) home=$(mktemp -d)
    mkdir -p "$home/toolhost/extensions"
    cp "$examples/$name.wasm" "$home/toolhost/extensions/"
    printf '[extensions.%s]\nfs-read = ["data"]\n' "$name" >"$home/toolhost/toml.tmp"
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

record wordcount wc '{"path":"data"}' \
    data/a.txt $'one two\nthree\n' data/sub/b.md $'h\xc3\xa9llo w\xc3\xb6rld\n'
record jsonquery json_query '{"path":"data/pkg.json","query":".dependencies.serde"}' \
    data/pkg.json '{"name":"demo","dependencies":{"serde":"1.0","tokio":"1"}}'
record cksum cksum '{"paths":["data/hello.txt","data/more.txt"]}' \
    data/hello.txt $'hello\n' data/more.txt $'more\n'
