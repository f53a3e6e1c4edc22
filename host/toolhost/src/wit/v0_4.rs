//! `toolhost:tool@0.4.0`, `wit/tool.wit`, what the SDK builds: the
//! newest, whose bindings the glue is written on. It adds to 0.3.0 a result
//! that may be a returned error (`is-error`, keeping its details),
//! `host-info` (always linked) and `call-tools` (granted).

use crate::wit::{Version, glue};

pub(crate) struct V0_4;

impl Version for V0_4 {
    const VERSION: &'static str = "0.4.0";
    type Definition = glue::Definition;
    type Result = glue::ToolResult;
    type Block = glue::Block;
}
