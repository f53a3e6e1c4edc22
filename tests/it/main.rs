//! toolhost's integration tests: one binary, real components, real files.
//! Each test has its own temporary workspace; the engine and its compile
//! cache are shared by the whole process.

mod cases;
mod cli;
mod pipeline;
mod sandbox;
mod support;
mod validation;
