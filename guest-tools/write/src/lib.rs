//! The built-in `write` tool (spec §1.7 with §7.1, §7.2, §7.11).
//!
//! Imports `fs-write` (and the lock it offers). The write itself is atomic
//! and keeps an existing file's permissions (§7.11): the host writes a
//! temporary file beside the target and renames it over it.

use toolhost_sdk::args;
use toolhost_sdk::fs;
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

const SCHEMA: &str = r#"{"type":"object","required":["path","content"],"properties":{"path":{"type":"string","description":"Path to the file to write (relative or absolute)"},"content":{"type":"string","description":"Content to write to the file"}}}"#;

const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.";

struct Write;

impl Tool for Write {
    fn definition(&self) -> Definition {
        Definition::new("write", "write", DESCRIPTION, SCHEMA)
            .prompt_snippet("Create or overwrite files")
            .prompt_guideline("Use write only for new files or complete rewrites.")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let raw = args::string(&args, "path");
        let content = args::string(&args, "content");
        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
        let fail = |e: fs::FsError, op: &str, path: &str| {
            ToolError::new(fs::error_text(&e, op, path, raw, ctx))
        };

        // Pi's mutation queue: one read-modify-write of a file at a time.
        let _lock = fs::lock(&abs).map_err(|e| fail(e, "open", &abs))?;
        ctx.check_cancelled()?;
        let parent = parent_dir(&abs);
        fs::create_dir_all(parent).map_err(|e| fail(e, "mkdir", parent))?;
        ctx.check_cancelled()?;
        fs::write_file(&abs, content.as_bytes()).map_err(|e| fail(e, "open", &abs))?;
        ctx.check_cancelled()?;
        Ok(ToolOutput::text(format!("Successfully wrote to {raw}")))
    }
}

toolhost_sdk::export_tools!(Write);

/// `path.dirname` of a normalised absolute path.
fn parent_dir(abs: &str) -> &str {
    match abs.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &abs[..i],
    }
}

#[cfg(test)]
mod tests {
    use super::parent_dir;

    #[test]
    fn parents() {
        assert_eq!(parent_dir("/ws/a/b.txt"), "/ws/a");
        assert_eq!(parent_dir("/b.txt"), "/");
    }
}
