//! `kernel-args`: at each launch, the launch geometry and the values of the
//! kernel's explicit arguments, in the layout of Luthier's
//! KernelArgumentIntrinsic example:
//!
//! ```text
//! Kernel 0 - vector_add: Total Grid Size Dims (1000, 1, 1) Workgroup Dims (256, 1, 1) : GridDim (4, 1, 1)
//!   arg 0 a (const float*): 0x7f12a4000000
//! ```
//!
//! The values are read from the kernel-argument segment the caller filled,
//! at the offsets and sizes the kernel's metadata gives; the kernel itself
//! runs unmodified.

use serde_json::json;

use crate::{display_name, Counting, Launch, Outcome, Output, Tool};

pub struct KernelArgs;

impl KernelArgs {
    /// It has no options of its own (`output=` and `json=` are the host's).
    pub fn new(_options: &[(String, String)]) -> Result<KernelArgs, String> {
        Ok(KernelArgs)
    }
}

/// An argument's value as text: pointers in hex, numbers by their type.
fn value(bytes: &[u8], kind: &str, ty: &str) -> String {
    let le = |n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(b)
    };
    match (kind, bytes.len()) {
        ("global_buffer" | "dynamic_shared_pointer", 8) => format!("{:#x}", le(8)),
        (_, 4) if ty.contains("float") => format!("{}", f32::from_bits(le(4) as u32)),
        (_, 8) if ty.contains("double") => format!("{}", f64::from_bits(le(8))),
        (_, n @ (1 | 2 | 4 | 8)) if ty.contains("int") && !ty.contains("unsigned") => {
            let shift = 64 - 8 * n as u32;
            format!("{}", ((le(n) << shift) as i64) >> shift)
        }
        (_, n @ (1 | 2 | 4 | 8)) => format!("{}", le(n)),
        _ => bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

impl Tool for KernelArgs {
    fn name(&self) -> &'static str {
        "kernel-args"
    }

    fn before_launch(&self, l: &Launch, out: &Output) -> Option<Counting> {
        let g = l.groups();
        out.line(&format!(
            "Kernel {} - {}: Total Grid Size Dims ({}, {}, {}) Workgroup Dims ({}, {}, {}) : GridDim ({}, {}, {})",
            l.index,
            display_name(&l.kernel),
            l.grid[0], l.grid[1], l.grid[2],
            l.workgroup[0], l.workgroup[1], l.workgroup[2],
            g[0], g[1], g[2]
        ));
        let mut args = Vec::new();
        for (i, a) in l
            .args
            .iter()
            .filter(|a| !a.value_kind.starts_with("hidden_"))
            .enumerate()
        {
            let at = a.offset as usize..(a.offset + a.size) as usize;
            let Some(bytes) = l.kernarg.get(at) else {
                out.line(&format!("  arg {i}: outside the kernel-argument segment"));
                continue;
            };
            let ty = a.type_name.as_deref().unwrap_or("");
            let v = value(bytes, &a.value_kind, ty);
            let name = a.name.as_deref().unwrap_or("");
            // HIP's metadata has no names or types: say what it does know.
            let what = match (name, ty) {
                ("", "") => format!("({}, {} bytes)", a.value_kind, a.size),
                (n, "") => format!("{n} ({}, {} bytes)", a.value_kind, a.size),
                ("", t) => format!("({t})"),
                (n, t) => format!("{n} ({t})"),
            };
            out.line(&format!("  arg {i} {what}: {v}"));
            args.push(
                json!({"index": i, "name": name, "type": ty, "kind": a.value_kind, "value": v}),
            );
        }
        out.json(&json!({
            "tool": "kernel-args",
            "launch": l.index,
            "kernel": l.kernel,
            "grid": l.grid,
            "workgroup": l.workgroup,
            "groups": g,
            "args": args,
        }));
        None
    }

    fn after_launch(&self, _launch: &Launch, _o: &Outcome, _out: &Output) {}
}
