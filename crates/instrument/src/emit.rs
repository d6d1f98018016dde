//! The instrumented kernel as a code object: the original code object with
//! the rewritten kernel added under a new name (code, descriptor, metadata),
//! written by the code-object writer. Loaded beside the original, it links
//! against what the original's symbols name, and its code reaches the
//! original's data through the addresses [`crate::rewrite`] materialized.

use inlay_codeobj::write::{Builder, NewKernel};
use inlay_codeobj::CodeObject;

use crate::rewrite::Rewritten;

/// Name of the instrumented copy of `kernel`.
pub fn instrumented_name(kernel: &str) -> String {
    format!("{kernel}.inlay")
}

/// `co` plus the rewritten `kernel` as a new kernel named
/// [`instrumented_name`]`(kernel)`.
pub fn code_object(
    co: &CodeObject<'_>,
    kernel: &str,
    rw: &Rewritten,
) -> Result<Vec<u8>, inlay_codeobj::Error> {
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == kernel))
        .cloned()
        .ok_or_else(|| inlay_codeobj::Error::new(format!("no metadata for kernel {kernel}")))?;
    let mut metadata = md;
    let sgprs = inlay_codeobj::descriptor::sgpr_count(
        rw.descriptor.compute_pgm_rsrc1,
        co.target.processor.family(),
    );
    if let Some(n) = sgprs {
        metadata.sgpr_count = Some(u64::from(n.saturating_sub(6)));
    }
    let mut b = Builder::new(co);
    b.add_kernel(NewKernel {
        name: instrumented_name(kernel),
        code: rw.code.clone(),
        descriptor: rw.descriptor,
        metadata,
    })?;
    b.write()
}
