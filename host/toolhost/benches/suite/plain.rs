//! The baseline embedding: the same component on the same engine, run the
//! way a plain wasmtime program would: a store with a default `WasiCtx`, one
//! instantiation from a cached `InstancePre`, one call of `execute`. No
//! pipeline, validation, events, hooks, limits or capabilities: the
//! `toolhost:tool` imports every component may use are linked to stubs
//! (progress is dropped, nothing is ever cancelled).

use std::path::Path;
use std::sync::Arc;
use toolhost::Runtime;
use toolhost::internals::bindings::ToolComponentPre;
use toolhost::internals::bindings::types::CallContext;
use toolhost::internals::bindings::{cancellation, fs_types, host_info, logging, progress, types};
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for State {}
impl fs_types::Host for State {}

impl progress::Host for State {
    fn update(&mut self, _partial: types::PartialResult) -> wasmtime::Result<()> {
        Ok(())
    }
}

impl logging::Host for State {
    fn log(&mut self, _: logging::Level, _: Option<String>, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
}

impl host_info::Host for State {
    fn pi_profile(&mut self) -> wasmtime::Result<String> {
        Ok("0.85".into())
    }
}

impl cancellation::Host for State {
    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(false)
    }
}

/// A component ready to instantiate, as a plain embedder caches it.
#[derive(Clone)]
pub struct PlainTool {
    runtime: Arc<Runtime>,
    pre: ToolComponentPre<State>,
}

impl PlainTool {
    /// Load `path` through toolhost's compile cache (the same machine code
    /// toolhost runs) and link it.
    pub fn load(runtime: &Arc<Runtime>, path: &Path) -> PlainTool {
        let bytes = std::fs::read(path).expect("reading the component");
        let hash = blake3::hash(&bytes).to_hex().to_string();
        let component = runtime
            .load_component(&bytes, &hash, &path.display().to_string())
            .expect("compiling the component");
        let mut linker = Linker::new(runtime.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("linking WASI");
        types::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        fs_types::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        progress::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        cancellation::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        logging::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        host_info::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s).unwrap();
        let pre = ToolComponentPre::new(linker.instantiate_pre(&component).expect("linking"))
            .expect("a tool component");
        PlainTool {
            runtime: runtime.clone(),
            pre,
        }
    }

    /// A fresh store and instance, and one call of `execute`; returns the
    /// result's first text.
    pub async fn call(&self, name: &str, arguments: &str) -> String {
        let state = State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(self.runtime.engine(), state);
        // The engine interrupts on epochs; give this store a deadline far away.
        store.set_epoch_deadline(1 << 40);
        let tool = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiating");
        let context = CallContext {
            tool_call_id: "plain".into(),
            cwd: "/".into(),
            home: None,
            roots: Vec::new(),
            session_id: None,
        };
        let result = tool
            .toolhost_tool_tool()
            .call_execute(&mut store, name, &context, arguments)
            .await
            .expect("calling execute")
            .expect("the tool succeeds");
        match result.content.into_iter().next() {
            Some(types::ContentBlock::Text(text)) => text,
            _ => String::new(),
        }
    }
}
