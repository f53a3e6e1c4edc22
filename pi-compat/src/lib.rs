//! The JavaScript and Node semantics that leak into Pi's model-facing texts
//! and details (`docs/spec.md` §1.2, §2.5), written once and built for both
//! sides: the host (argument coercion and its error text) and the guest
//! tools (paths, numbers in texts and details, signal names).
//!
//! Plain functions over strings and numbers: no I/O, no platform code, so
//! the same code runs natively and in `wasm32-wasip2`.

pub mod js;
pub mod path;
pub mod signals;
