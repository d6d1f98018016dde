//! Lists the code objects (and with `-k`, the kernels) in any file: a code
//! object, an offload bundle, a CCOB, or a host binary with a fat binary.
//!
//! `cargo run --release -p inlay-codeobj --example list -- [-k] [-w] [-m] FILE`
//! (`-k` prints kernel names, `-w` only walks: no code object is parsed,
//! `-m` prints peak RSS split into file-backed pages of the map and anonymous memory).

use std::collections::BTreeMap;
use std::process::ExitCode;

use inlay_codeobj::container::list::{list, Listed};
use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::file::MappedFile;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show_kernels = args.iter().any(|a| a == "-k");
    let walk_only = args.iter().any(|a| a == "-w");
    let show_memory = args.iter().any(|a| a == "-m");
    let Some(path) = args.iter().find(|a| !a.starts_with('-')) else {
        eprintln!("usage: list [-k] [-w] [-m] FILE");
        return ExitCode::from(2);
    };
    let file = match MappedFile::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut code_objects, mut kernels, mut errors) = (0usize, 0usize, 0usize);
    let mut targets: BTreeMap<String, usize> = BTreeMap::new();
    let items: Box<dyn Iterator<Item = _>> = if walk_only {
        let no_kernels = |entry| Listed {
            entry,
            kernels: Ok(Vec::new()),
        };
        Box::new(walk(file.bytes(), &file.name()).map(move |e| e.map(no_kernels)))
    } else {
        Box::new(list(file.bytes(), &file.name()))
    };
    for item in items {
        let listed = match item {
            Ok(l) => l,
            Err(e) => {
                errors += 1;
                println!("error: {e}");
                continue;
            }
        };
        let entry = &listed.entry;
        let kind = match entry.kind {
            EntryKind::CodeObject => "code object",
            EntryKind::Host => "host (skipped)",
            EntryKind::Other => "other",
        };
        let offset = entry
            .offset
            .map_or("decompressed".to_string(), |o| format!("@{o:#x}"));
        println!(
            "{} {kind} {} bytes {offset} target {}",
            entry.location,
            entry.bytes.len(),
            entry.target_id
        );
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        code_objects += 1;
        *targets.entry(entry.target_id.clone()).or_default() += 1;
        match &listed.kernels {
            Ok(names) => {
                kernels += names.len();
                if show_kernels {
                    for name in names {
                        println!("    {name}");
                    }
                }
            }
            Err(e) => {
                errors += 1;
                println!("error: {e}");
            }
        }
    }
    let per_target: Vec<String> = targets.iter().map(|(t, n)| format!("{t}: {n}")).collect();
    println!(
        "{code_objects} code objects, {kernels} kernels, {errors} errors ({})",
        per_target.join(", ")
    );
    if show_memory {
        print_memory();
    }
    if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Peak and current resident memory from /proc/self/status (Linux only).
fn print_memory() {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    println!(
        "memory: peak RSS {} (now: file-backed {}, anonymous {})",
        field("VmHWM:"),
        field("RssFile:"),
        field("RssAnon:")
    );
}
