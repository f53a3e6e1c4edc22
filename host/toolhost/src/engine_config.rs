//! The compile settings of toolhost's engine, in a file of their own so that
//! the build script can compile the built-in components with exactly these
//! settings (it declares this file as a module of its own): machine code made at build time is
//! then what the runtime engine would have made, and loads without a
//! compile. Only what decides the machine code belongs here; the instance
//! allocator (which is checked when a component loads, not baked into its
//! code) is the runtime's.

/// The engine configuration every compile uses.
pub fn compile_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        // No component-model async guests yet: skip its per-store state.
        .concurrency_support(false)
        // Not from the environment (`WASMTIME_BACKTRACE_DETAILS`): the
        // setting is part of the machine code's compatibility.
        .wasm_backtrace_details(wasmtime::WasmBacktraceDetails::Disable)
        .max_wasm_stack(1 << 20)
        .async_stack_size(2 << 20);
    config
}
