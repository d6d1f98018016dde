//! `kernel-args`: at each launch, the launch geometry and the values of the
//! kernel's explicit arguments, in the layout of Luthier's
//! KernelArgumentIntrinsic example:
//!
//! ```text
//! Kernel 0 - vector_add: Total Grid Size Dims (1000, 1, 1) Workgroup Dims (256, 1, 1) : GridDim (4, 1, 1)
//!   arg 0 a (const float*): 0x7f12a4000000
//! ```
//!
//! The values are what the kernel itself reads: hooks at the kernel's entry
//! load every dword its explicit arguments occupy (at the offsets and sizes
//! its metadata gives) from the kernel-argument segment pointer its waves
//! receive and record them; the line is printed when the launch completes.
//! Each value is checked against the segment the caller filled, and read
//! from there instead (saying so) when the kernel could not be instrumented.

use std::collections::BTreeMap;

use serde_json::json;

use inlay_instrument::rewrite::{Value, SCALAR_RECORD};

use crate::{
    display_name, Insertions, Kernel, Launch, Outcome, Output, Records, Tool, ToolOptions, TraceId,
};

pub struct KernelArgs;

impl KernelArgs {
    /// It has no options of its own (`output=` and `json=` are the host's).
    pub fn new(_options: ToolOptions<'_>) -> Result<KernelArgs, String> {
        Ok(KernelArgs)
    }
}

/// Dword indices of the kernel-argument segment that explicit arguments
/// occupy (within its size).
fn argument_dwords(args: &[inlay_codeobj::metadata::KernelArg], size: usize) -> Vec<u32> {
    let mut d: Vec<u32> = args
        .iter()
        .filter(|a| !a.value_kind.starts_with("hidden_"))
        .flat_map(|a| a.offset / 4..(a.offset + a.size).div_ceil(4))
        .filter(|&d| (4 * d as usize) < size)
        .map(|d| d as u32)
        .collect();
    d.sort_unstable();
    d.dedup();
    d
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
    fn name(&self) -> &str {
        "kernel-args"
    }

    /// Every wave records every dword of the explicit arguments at the
    /// kernel's entry, with the dword's index as the record's id.
    fn instrument(
        &self,
        kernel: &Kernel<'_>,
        at: &mut Insertions,
        _out: &Output,
    ) -> Result<(), String> {
        let entry = kernel
            .functions()
            .next()
            .and_then(|f| kernel.analysis().program.inst_at(f.index, f.entry()))
            .ok_or("the kernel has no entry instruction")?;
        let dwords = argument_dwords(kernel.args(), kernel.kernarg_size());
        // Room for 256 waves' worth, so the first waves' records all fit.
        let capacity = (dwords.len() as u32 * SCALAR_RECORD * 256).max(4096);
        let trace = at.trace(capacity);
        for &d in &dwords {
            at.record(entry, trace, d, Value::KernArg(4 * d))?;
        }
        at.keep(trace);
        Ok(())
    }

    fn after_launch(&self, l: &Launch, o: &Outcome<'_>, out: &Output) {
        let g = l.groups();
        out.line(&format!(
            "Kernel {} - {}: Total Grid Size Dims ({}, {}, {}) Workgroup Dims ({}, {}, {}) : GridDim ({}, {}, {})",
            l.index,
            display_name(&l.kernel),
            l.grid[0], l.grid[1], l.grid[2],
            l.workgroup[0], l.workgroup[1], l.workgroup[2],
            g[0], g[1], g[2]
        ));
        // The dwords the kernel read, by index; each wave read them all.
        let records = o
            .kept::<TraceId>()
            .and_then(|&t| o.trace(t))
            .map(|t| Records::values(&t));
        let mut read: BTreeMap<usize, u32> = BTreeMap::new();
        let mut disagree = false;
        for &(d, v) in records.iter().flat_map(|r| &r.values) {
            let prev = *read.entry(d as usize).or_insert(v as u32);
            disagree |= prev != v as u32;
        }
        let source = match (&records, disagree) {
            (None, _) => format!(
                "read on the host: {}",
                o.error.as_deref().unwrap_or("not instrumented")
            ),
            (Some(_), true) => "MISMATCH: waves read different values".to_string(),
            (Some(_), false) => "read by the kernel".to_string(),
        };
        if records.is_none() || disagree {
            out.line(&format!("  ({source})"));
        }
        let mut args = Vec::new();
        for (i, a) in l
            .args
            .iter()
            .filter(|a| !a.value_kind.starts_with("hidden_"))
            .enumerate()
        {
            let at = a.offset as usize..(a.offset + a.size) as usize;
            let Some(host) = l.kernarg.get(at.clone()) else {
                out.line(&format!("  arg {i}: outside the kernel-argument segment"));
                continue;
            };
            // The argument's bytes from the dwords the kernel read.
            let device: Option<Vec<u8>> = records.as_ref().and_then(|_| {
                at.clone()
                    .map(|b| read.get(&(b / 4)).map(|w| (w >> (8 * (b % 4))) as u8))
                    .collect()
            });
            let ty = a.type_name.as_deref().unwrap_or("");
            let bytes = device.as_deref().unwrap_or(host);
            let v = value(bytes, &a.value_kind, ty);
            let name = a.name.as_deref().unwrap_or("");
            // HIP's metadata has no names or types: say what it does know.
            let what = match (name, ty) {
                ("", "") => format!("({}, {} bytes)", a.value_kind, a.size),
                (n, "") => format!("{n} ({}, {} bytes)", a.value_kind, a.size),
                ("", t) => format!("({t})"),
                (n, t) => format!("{n} ({t})"),
            };
            let note = match &device {
                Some(d) if d.as_slice() != host => format!(
                    " (MISMATCH: the caller's segment holds {})",
                    value(host, &a.value_kind, ty)
                ),
                None if records.is_some() => " (not recorded: read on the host)".to_string(),
                _ => String::new(),
            };
            out.line(&format!("  arg {i} {what}: {v}{note}"));
            args.push(json!({
                "index": i, "name": name, "type": ty, "kind": a.value_kind, "value": v,
                "read_by_kernel": device.is_some(),
                "matches_host": device.as_deref().is_none_or(|d| d == host),
            }));
        }
        out.json(&json!({
            "tool": "kernel-args",
            "launch": l.index,
            "kernel": l.kernel,
            "grid": l.grid,
            "workgroup": l.workgroup,
            "groups": g,
            "source": source,
            "args": args,
        }));
    }
}
