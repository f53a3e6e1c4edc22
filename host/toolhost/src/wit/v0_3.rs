//! `toolhost:tool@0.3.0`, frozen in `wit/v0.3/`: the newest's content
//! blocks (audio and embedded resources), definition and interfaces
//! (`logging`, `client`, `session-processes`), and 0.2.0's result, which
//! cannot be a returned error.

use crate::wit::v0_2::StructuredResult;
use crate::wit::{Version, glue};

pub(crate) struct V0_3;

impl Version for V0_3 {
    const VERSION: &'static str = "0.3.0";
    type Definition = glue::Definition;
    type Result = StructuredResult<glue::Block>;
    type Block = glue::Block;
}
