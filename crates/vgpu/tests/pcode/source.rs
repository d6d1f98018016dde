//! AMD's CDNA pseudo-code, read at test time from the `tinygrad` package
//! (`tinygrad/runtime/autogen/amd/cdna/str_pcode.py`, which tinygrad
//! generates from AMD's ISA PDF; see that file's header). Nothing of it is
//! copied into this repository: `scripts/install-deps` installs the pinned
//! release with pip, and this module finds the file through python3, checks
//! that its text is the one these tests were written against, and reads the
//! `PCODE` table (one `Kind.NAME: 'text',` line per opcode).

use std::collections::HashMap;
use std::process::Command;

use super::eval::Table;
use super::parse::parse;

/// The pinned release (also in `scripts/install-deps`).
pub const TINYGRAD_VERSION: &str = "0.14.0";
/// SHA-256 of that release's `cdna/str_pcode.py`.
pub const PCODE_SHA256: &str = "e67649d19bb728278d97065a843518535a87126358710aa85f5a5cd61760fb1a";

/// Where the file is and its SHA-256, from python3; `Err` says why not.
fn locate() -> Result<(String, String), String> {
    if let Ok(p) = std::env::var("INLAY_CDNA_PCODE") {
        let out = Command::new("sha256sum")
            .arg(&p)
            .output()
            .map_err(|e| format!("sha256sum: {e}"))?;
        let sum = String::from_utf8_lossy(&out.stdout);
        let sum = sum.split_whitespace().next().unwrap_or("").to_string();
        return Ok((p, sum));
    }
    // find_spec does not import tinygrad (nothing of it runs here).
    let script = "import importlib.util, importlib.metadata, hashlib, os, sys\n\
        s = importlib.util.find_spec('tinygrad')\n\
        if s is None: sys.exit('tinygrad is not installed')\n\
        p = os.path.join(s.submodule_search_locations[0], 'runtime/autogen/amd/cdna/str_pcode.py')\n\
        print(importlib.metadata.version('tinygrad'))\n\
        print(p)\n\
        print(hashlib.sha256(open(p, 'rb').read()).hexdigest())\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let [version, path, sum] = lines[..] else {
        return Err(format!("unexpected python3 output: {text}"));
    };
    if version != TINYGRAD_VERSION {
        return Err(format!(
            "tinygrad {version} is installed; these tests read {TINYGRAD_VERSION} \
             (scripts/install-deps installs it)"
        ));
    }
    Ok((path.to_string(), sum.to_string()))
}

/// The `PCODE` table: each opcode's text and its table kind (`SOP1Op`...).
pub struct Texts {
    pub text: HashMap<String, String>,
    pub kind: HashMap<String, String>,
}

/// The raw `PCODE` texts by opcode name, or why they are not available.
pub fn texts() -> Result<Texts, String> {
    let (path, sum) = locate()?;
    if sum != PCODE_SHA256 {
        return Err(format!(
            "{path} has SHA-256 {sum}, not the {PCODE_SHA256} of tinygrad {TINYGRAD_VERSION}"
        ));
    }
    let src = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Texts {
        text: HashMap::new(),
        kind: HashMap::new(),
    };
    for line in src.lines() {
        let Some(entry) = line.strip_prefix("  ") else {
            continue;
        };
        let Some((key, value)) = entry.split_once(": ") else {
            continue;
        };
        let Some((kind, name)) = key.split_once('.') else {
            continue;
        };
        let value = value.strip_suffix(',').unwrap_or(value);
        out.text.insert(name.to_string(), python_string(value)?);
        out.kind.insert(name.to_string(), kind.to_string());
    }
    if out.text.len() < 1000 {
        return Err(format!("{path}: only {} entries read", out.text.len()));
    }
    Ok(out)
}

/// A one-line Python string literal ('…' or "…") with backslash escapes.
fn python_string(s: &str) -> Result<String, String> {
    let q = s.chars().next().ok_or("empty value")?;
    if !(q == '\'' || q == '"') || !s.ends_with(q) || s.len() < 2 {
        return Err(format!("not a string literal: {s}"));
    }
    let body = &s[1..s.len() - 1];
    let mut out = String::with_capacity(body.len());
    let mut it = body.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(c @ ('\\' | '\'' | '"')) => out.push(c),
            other => return Err(format!("escape \\{other:?} in {s}")),
        }
    }
    Ok(out)
}

/// Every ALU opcode's code that parses (the others are not ALU operations
/// this oracle checks: memory, MFMA and texts written as prose).
pub fn table(texts: &HashMap<String, String>) -> Table {
    let mut t = Table::default();
    for (n, src) in texts {
        if n.starts_with("V_") || n.starts_with("S_") {
            if let Ok(body) = parse(src) {
                t.ops.insert(n.clone(), body);
            }
        }
    }
    t
}
