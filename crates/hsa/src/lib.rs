//! ROCr's C ABI over `inlay-runtime`: built as `libhsa-runtime64.so.1`, it
//! loads in place of ROCr under binaries linked against it (every export
//! carries the `ROCR_1` symbol version).
//!
//! Every entry point validates what the caller passes and answers with an HSA
//! status; a panic is caught at the boundary and becomes `HSA_STATUS_ERROR`.

/// The allocator instrumentation runs on inside the application (see the
/// workspace's Cargo.toml: the system one's page faults and frees cost a
/// fifth of an instrumentation). Rust programs linking this crate get it too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod abi;
mod agents;
mod executables;
mod images;
mod memory;
mod queues;
mod signals;
mod state;
mod system;
mod unsupported;

/// Defines C exports. Each `fn name` becomes the symbol `inlay_name` and, via
/// `.symver`, the public `name@@ROCR_1` (see build.rs for why). The body runs
/// under `catch_unwind`; a panic returns [`abi::Fallback::fallback`].
macro_rules! export {
    ($( $(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty $body:block )*) => {$(
        $(#[$m])*
        #[allow(non_snake_case, clippy::missing_safety_doc)]
        #[export_name = concat!("inlay_", stringify!($name))]
        pub extern "C" fn $name($($a: $t),*) -> $r {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> $r { $body }))
                .unwrap_or_else(|_| <$r as $crate::abi::Fallback>::fallback())
        }
        std::arch::global_asm!(concat!(".symver inlay_", stringify!($name), ", ", stringify!($name), "@@ROCR_1"));
    )*};
}
pub(crate) use export;
