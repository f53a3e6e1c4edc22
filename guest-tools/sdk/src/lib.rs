//! toolhost-sdk: write a toolhost tool in Rust.
//!
//! A tool is a value implementing [`Tool`]; [`export_tools!`] turns one or
//! more of them into the component's `toolhost:tool/tool` export. The host
//! validates and coerces arguments against the definition's JSON Schema
//! before `execute` runs, so a tool reads already-checked JSON.
//!
//! ```ignore
//! use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};
//!
//! struct Hello;
//! impl Tool for Hello {
//!     fn definition(&self) -> Definition {
//!         Definition::new("hello", "Hello", "Greets someone.",
//!             r#"{"type":"object","properties":{"name":{"type":"string"}}}"#)
//!     }
//!     fn execute(&self, _ctx: &Context, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
//!         let name = args["name"].as_str().unwrap_or("world");
//!         Ok(ToolOutput::text(format!("Hello, {name}!")))
//!     }
//! }
//! toolhost_sdk::export_tools!(Hello);
//! ```
//!
//! Besides the trait, the SDK carries what Pi's built-in tools share, so every
//! tool uses one implementation: the truncation helpers and size formatting
//! ([`truncate`]), path resolution ([`path`]), filesystem access with Node-style
//! error texts ([`fs`]) and JavaScript number formatting ([`js`]).
//!
//! A component's imports are its capability request: calling [`fs`] reading
//! functions makes the component import `toolhost:tool/fs-read`, writing ones
//! `fs-write`, [`process`] `process`, [`search`] `search` and [`client`]
//! `client`; the host links each only when the policy grants it. A tool
//! imports only what it calls. [`client::log`] (the `logging` interface)
//! needs no grant.

pub mod args;
pub mod calls;
pub mod client;
pub mod fs;
pub mod notices;
pub mod pi;
pub mod process;
pub mod search;
pub mod session;
pub mod tools;
pub mod truncate;

mod tool;

pub use pi_compat::{js, path, signals};
pub use serde_json;
pub use tool::{Content, Context, Definition, ExecutionMode, Tool, ToolError, ToolOutput};

/// Generated bindings for the `toolhost:tool` WIT package. Tool authors use
/// the safe wrappers of this crate instead.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "tool-component",
        pub_export_macro: true,
        export_macro_name: "__toolhost_export_world",
        default_bindings_module: "::toolhost_sdk::bindings",
        generate_all,
    });
}

/// Implementation details used by [`export_tools!`].
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::exports::toolhost::tool::tool::Guest;
    use crate::bindings::toolhost::tool::types as wit;
    use crate::tool::Tool;

    pub fn definitions(tools: &[&dyn Tool]) -> Vec<wit::ToolDefinition> {
        tools.iter().map(|t| t.definition().into_wit()).collect()
    }

    fn find<'a>(tools: &[&'a dyn Tool], name: &str) -> Result<&'a dyn Tool, String> {
        tools
            .iter()
            .copied()
            .find(|t| t.definition().name() == name)
            .ok_or_else(|| format!("Tool {name} not found in this component"))
    }

    pub fn prepare_arguments(
        tools: &[&dyn Tool],
        name: &str,
        arguments: &str,
    ) -> Result<Option<String>, String> {
        let tool = find(tools, name)?;
        let args: serde_json::Value = serde_json::from_str(arguments)
            .map_err(|e| format!("Arguments of {name} are not valid JSON: {e}"))?;
        match tool.prepare_arguments(args) {
            Ok(None) => Ok(None),
            Ok(Some(changed)) => Ok(Some(changed.to_string())),
            Err(e) => Err(e.into_message()),
        }
    }

    pub fn execute(
        tools: &[&dyn Tool],
        name: &str,
        context: wit::CallContext,
        arguments: &str,
    ) -> Result<wit::ToolResult, String> {
        let tool = find(tools, name)?;
        let args: serde_json::Value = serde_json::from_str(arguments)
            .map_err(|e| format!("Arguments of {name} are not valid JSON: {e}"))?;
        tool.execute(&context, args)
            .map(|out| out.into_wit())
            .map_err(|e| e.into_message())
    }
}

/// Export one or more [`Tool`] values as this component's tools.
///
/// Each argument is a constant expression (typically a unit struct) whose type
/// implements [`Tool`]. Use it once per component, at the crate root.
#[macro_export]
macro_rules! export_tools {
    ($($tool:expr),+ $(,)?) => {
        struct __ToolhostComponent;

        static __TOOLHOST_TOOLS: &[&dyn $crate::Tool] = &[$(&$tool),+];

        impl $crate::__private::Guest for __ToolhostComponent {
            fn definitions() -> ::std::vec::Vec<$crate::bindings::toolhost::tool::types::ToolDefinition> {
                $crate::__private::definitions(__TOOLHOST_TOOLS)
            }
            fn prepare_arguments(
                name: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<::std::option::Option<::std::string::String>, ::std::string::String> {
                $crate::__private::prepare_arguments(__TOOLHOST_TOOLS, &name, &arguments)
            }
            fn execute(
                name: ::std::string::String,
                context: $crate::bindings::toolhost::tool::types::CallContext,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<$crate::bindings::toolhost::tool::types::ToolResult, ::std::string::String> {
                $crate::__private::execute(__TOOLHOST_TOOLS, &name, context, &arguments)
            }
        }

        $crate::bindings::__toolhost_export_world!(__ToolhostComponent with_types_in $crate::bindings);
    };
}
