//! Test helpers: fixtures from the manifest, and the facts llvm-readelf-19
//! prints about a code object (the oracle the loader's results are checked against).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use inlay_loader::{AgentRef, Executable};
use inlay_vgpu::memory::Memory;

pub const READELF: &str = "llvm-readelf-19";

/// When a tool is missing: fail under INLAY_REQUIRE_ORACLES=1 (CI), else skip with a note.
pub fn oracle_available(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("oracle missing: {what} (INLAY_REQUIRE_ORACLES=1)");
    }
    eprintln!("note: skipping, oracle missing: {what}");
    false
}

pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

pub fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Manifest entries of linked code objects (`kind` hsaco).
pub fn hsaco_entries() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "hsaco")
        .cloned()
        .collect()
}

pub fn agent(target: &str) -> AgentRef {
    AgentRef {
        key: 7,
        target: target.parse().unwrap(),
    }
}

pub fn executable() -> (Arc<Memory>, Executable) {
    let memory = Arc::new(Memory::new());
    let exe = Executable::new(memory.clone());
    (memory, exe)
}

pub fn read_mem(memory: &Memory, addr: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    memory.read_bytes(addr, &mut out).unwrap();
    out
}

#[derive(Debug, Clone)]
pub struct RReloc {
    pub offset: u64,
    pub r_type: String,
    pub symbol: Option<String>,
    pub addend: i64,
}

#[derive(Debug, Clone)]
pub struct RSymbol {
    pub value: u64,
    pub size: u64,
    pub sym_type: String,
    pub bind: String,
    pub defined: bool,
}

#[derive(Debug, Clone)]
pub struct RLoad {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub writable: bool,
    pub align: u64,
}

/// What llvm-readelf-19 says about a file.
pub struct Readelf {
    pub relocs: Vec<RReloc>,
    /// By name; both tables, .symtab wins (it has the locals).
    pub symbols: HashMap<String, RSymbol>,
    pub loads: Vec<RLoad>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("hex {s}"))
}

/// Runs llvm-readelf-19 on `path`, or `None` (after the oracle note) if it is missing.
pub fn readelf(path: &Path) -> Option<Readelf> {
    let t = tool(READELF);
    if !oracle_available(READELF, t.is_some()) {
        return None;
    }
    let out = Command::new(t?)
        .args(["-lrsW", "--dyn-syms"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut r = Readelf {
        relocs: Vec::new(),
        symbols: HashMap::new(),
        loads: Vec::new(),
    };
    let mut in_dyn_relocs = false;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("Relocation section") {
            in_dyn_relocs = line.contains("'.rela.dyn'");
            continue;
        }
        if w.first() == Some(&"LOAD") && w.len() >= 8 {
            r.loads.push(RLoad {
                offset: hex(w[1]),
                vaddr: hex(w[2]),
                filesz: hex(w[4]),
                memsz: hex(w[5]),
                writable: w[6..w.len() - 1].iter().any(|f| f.contains('W')),
                align: hex(w[w.len() - 1]),
            });
        } else if in_dyn_relocs && w.len() >= 4 && w[2].starts_with("R_AMDGPU_") {
            let (symbol, addend) = if w.len() >= 7 {
                let a = hex(w[6]) as i64;
                (Some(w[4].to_string()), if w[5] == "-" { -a } else { a })
            } else {
                (None, hex(w[3]) as i64)
            };
            r.relocs.push(RReloc {
                offset: hex(w[0]),
                r_type: w[2].to_string(),
                symbol,
                addend,
            });
        } else if w.len() == 8
            && w[0].ends_with(':')
            && w[0].trim_end_matches(':').parse::<u32>().is_ok()
        {
            r.symbols.insert(
                w[7].to_string(),
                RSymbol {
                    value: hex(w[1]),
                    size: w[2].parse().unwrap_or_else(|_| hex(w[2])),
                    sym_type: w[3].to_string(),
                    bind: w[4].to_string(),
                    defined: w[6] != "UND",
                },
            );
        } else if line.trim().is_empty() {
            in_dyn_relocs = false;
        }
    }
    Some(r)
}

impl Readelf {
    /// Largest LOAD alignment and lowest LOAD address rounded down to it.
    pub fn span_start(&self) -> (u64, u64) {
        let align = self.loads.iter().map(|l| l.align).max().unwrap().max(1);
        let lo = self.loads.iter().map(|l| l.vaddr).min().unwrap();
        (lo & !(align - 1), align)
    }
}

/// Kernel metadata per `.symbol` (`name.kd`) from llvm-readelf-19 --notes:
/// the kernel's top-level `.key: value` lines.
pub fn kernel_metadata(path: &Path) -> Option<HashMap<String, HashMap<String, String>>> {
    let t = tool(READELF);
    if !oracle_available(READELF, t.is_some()) {
        return None;
    }
    let out = Command::new(t?).arg("--notes").arg(path).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut kernels = HashMap::new();
    // Kernels are the two-space-indented items of amdhsa.kernels; their
    // top-level keys are indented four spaces (argument items further).
    for block in text.split("\n  - .").skip(1) {
        let mut keys = HashMap::new();
        for (i, line) in block.lines().enumerate() {
            let line = if i == 0 {
                format!("    .{line}")
            } else {
                line.to_string()
            };
            let Some(kv) = line.strip_prefix("    .") else {
                continue;
            };
            if let Some((k, v)) = kv.split_once(':') {
                keys.insert(k.to_string(), v.trim().to_string());
            }
        }
        if let Some(sym) = keys.get("symbol").cloned() {
            kernels.insert(sym, keys);
        }
    }
    Some(kernels)
}
