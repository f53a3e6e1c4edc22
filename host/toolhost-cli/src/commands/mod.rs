//! One file per command (ripgrep's `core` is laid out so): each parses
//! nothing and loads nothing itself; `main.rs` reads the command line
//! (`args.rs`), builds the host when the command needs one, and hands it
//! here. Every line they print goes through the terminal writer
//! (`toolhost::display::Terminal`, by the `println!` of `main.rs`).

pub(crate) mod author;
pub(crate) mod call;
pub(crate) mod doctor;
pub(crate) mod ext;
pub(crate) mod list;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod trust;
pub(crate) mod workspace;
