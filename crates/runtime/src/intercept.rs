//! The small interface through which instrumentation sees the runtime:
//! code objects as executables are frozen, kernel dispatches before they run
//! (to run another kernel object instead) and after they complete. The
//! runtime knows nothing else about instrumentation.

use std::sync::Arc;

use crate::device::{DispatchError, KernelDispatch};
use inlay_vgpu::Stats;

/// A code object of a frozen executable, as loaded into device memory.
#[derive(Clone, Debug)]
pub struct LoadedCode {
    /// The bytes it was loaded from.
    pub bytes: Arc<[u8]>,
    /// Device address minus ELF virtual address for everything it loaded.
    pub load_delta: u64,
    /// Its kernels: name and device address of the descriptor (kernel object).
    pub kernels: Vec<(String, u64)>,
    /// URI or name given at load.
    pub name: String,
    /// Its code, as the device predecodes it.
    pub region: Option<inlay_vgpu::CodeRegion>,
}

pub trait Interceptor: Send + Sync {
    /// An executable was frozen; `code` lists its code objects.
    fn executable_frozen(&self, code: &[LoadedCode]) {
        let _ = code;
    }

    /// A kernel dispatch is about to run. Returning a kernel object runs
    /// that kernel instead (an instrumented copy), with the same packet.
    fn before_dispatch(&self, dispatch: &KernelDispatch) -> Option<u64> {
        let _ = dispatch;
        None
    }

    /// The dispatch ended (`kernel_object` is the one that ran); on success
    /// with the device's native counts, when it keeps them.
    fn after_dispatch(
        &self,
        dispatch: &KernelDispatch,
        outcome: &Result<Option<Stats>, DispatchError>,
    ) {
        let _ = (dispatch, outcome);
    }
}

pub type SharedInterceptor = Arc<dyn Interceptor>;
