#!/usr/bin/env bash
# Build the example extensions into one directory (default: <repository>/target/examples):
#
#   wordcount.wasm   Rust, on the toolhost SDK          (cargo, target wasm32-wasip2)
#   httpget.wasm     Rust, the SDK and wasi:http        (cargo, target wasm32-wasip2)
#   jsonquery.wasm   JavaScript, with componentize-qjs  (npm, pinned in jsonquery/package-lock.json)
#   csvstats.wasm    Python, with componentize-py       (pip, pinned in csvstats/requirements.txt)
#   cksum.wasm       C, with clang and wasi-libc        (bindings from wit-bindgen c 0.63.0)
#
# The JavaScript and Python toolchains are installed on first use, and again
# whenever their pins change: npm into jsonquery/node_modules, pip into a
# virtual environment at csvstats/.venv, wit-bindgen's CLI with cargo into
# target/tools (unless `toolhost ext toolchain --install` put it in
# toolhost's toolchains directory). Needs Rust with the wasm32-wasip2 target, Node.js 18+ with
# npm, Python 3.10+, and clang with wasi-libc (Debian: clang lld wasi-libc
# libclang-rt-dev-wasm32; scripts/setup installs them).
#
# Usage: guest-tools/examples/build.sh [OUTPUT_DIR]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../target/examples}
mkdir -p "$out"
out=$(cd "$out" && pwd)

step() { printf '\n== %s\n' "$*" >&2; }

# cargo prints the component's path among its JSON messages; that finds it
# wherever CARGO_TARGET_DIR points.
rust_example() {
    local name=$1 wasm
    wasm=$(cd "$here/$name" &&
        cargo build --release --locked --target wasm32-wasip2 --message-format=json-render-diagnostics |
        sed -n "s/.*\"filenames\":\\[\"\\([^\"]*\\/$name\\.wasm\\)\".*/\\1/p" | tail -n 1)
    [ -n "$wasm" ] || { echo "build.sh: cargo did not report $name.wasm" >&2; exit 1; }
    cp "$wasm" "$out/$name.wasm"
}

step "wordcount (Rust)"
rust_example wordcount

step "httpget (Rust, wasi:http)"
rust_example httpget

step "jsonquery (JavaScript)"
(
    cd "$here/jsonquery"
    # npm ci installs exactly the lock file; redo it only when the lock changed.
    if ! cmp -s package-lock.json node_modules/.installed-lock.json; then
        npm ci --no-audit --no-fund
        cp package-lock.json node_modules/.installed-lock.json
    fi
    npm run --silent build
)
cp "$here/jsonquery/dist/jsonquery.wasm" "$out/jsonquery.wasm"

step "csvstats (Python)"
(
    cd "$here/csvstats"
    venv=.venv
    if ! cmp -s requirements.txt "$venv/.installed-requirements.txt"; then
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt
        cp requirements.txt "$venv/.installed-requirements.txt"
    fi
    mkdir -p dist
    # VIRTUAL_ENV names the environment componentize-py takes site-packages
    # from, so the machine's own Python packages never end up in the build.
    VIRTUAL_ENV=$PWD/$venv "$venv/bin/componentize-py" --quiet -d wit -w csvstats \
        componentize -p src csvstats -o dist/csvstats.wasm
)
cp "$here/csvstats/dist/csvstats.wasm" "$out/csvstats.wasm"

step "cksum (C)"
(
    cd "$here/cksum"
    # The one `toolhost ext toolchain --install` put in toolhost's
    # toolchains directory, else one of our own in target/tools.
    toolchains=${TOOLHOST_TOOLCHAINS:-${XDG_DATA_HOME:-$HOME/.local/share}/toolhost/toolchains}
    wit_bindgen=$toolchains/c/bin/wit-bindgen
    if ! "$wit_bindgen" --version 2>/dev/null | grep -qx "wit-bindgen-cli 0.63.0"; then
        tools=$here/../../target/tools
        wit_bindgen=$tools/bin/wit-bindgen
        if ! "$wit_bindgen" --version 2>/dev/null | grep -qx "wit-bindgen-cli 0.63.0"; then
            cargo install --quiet --locked wit-bindgen-cli --version 0.63.0 --root "$tools"
        fi
    fi
    # The linker rustup ships for wasm32-wasip2: wasm-ld, then the core
    # module made a component (with the WASI adapter for a library).
    host=$(rustc -vV | sed -n 's/^host: //p')
    linker=$(rustc --print sysroot)/lib/rustlib/$host/bin/wasm-component-ld
    mkdir -p build
    "$wit_bindgen" c ../../../wit --world tool-component --out-dir build >/dev/null
    clang --target=wasm32-wasi -O2 -Wall -Wextra -Werror -Ibuild \
        -mexec-model=reactor -fuse-ld="$linker" -Wl,--wasi-adapter=reactor \
        -o build/cksum.wasm src/cksum.c build/tool_component.c build/tool_component_component_type.o
)
cp "$here/cksum/build/cksum.wasm" "$out/cksum.wasm"

step "built into $out"
ls -l "$out"/*.wasm >&2
