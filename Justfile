# Recipes for people. CI does not depend on just: it runs .ci/run.

# Show the recipes.
default:
    @just --list

# Run the demo batch through the release binary.
demo:
    cargo run --release -p toolhost-cli -- --all-tools run examples/demo-batch.json

# List the tools.
list:
    cargo run -p toolhost-cli -- list

# The test suite (the README's test command).
test:
    cargo test --workspace

# The benchmark suite: one table of every figure against its baseline
# (docs/performance.md). Arguments select sections: `just bench overhead`.
bench *sections:
    scripts/bench {{sections}}

# Everything CI checks.
ci:
    .ci/run
