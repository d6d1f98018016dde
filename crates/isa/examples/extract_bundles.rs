//! Write the code objects of a host ELF's `.hip_fatbin` to a directory, e.g.
//! the librocsparse corpus for `objdump_compare` (never commit them).
//!
//!     cargo run --release -p inlay-isa --example extract_bundles -- \
//!         /usr/lib/x86_64-linux-gnu/librocsparse.so.0.1 /tmp/corpus gfx90a:xnack-
#[path = "../tests/isa/support/mod.rs"]
mod support;

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(so), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: extract_bundles HOST_ELF OUT_DIR [TARGET_ID_SUFFIX]");
        std::process::exit(2);
    };
    let suffix = args.get(2).map(String::as_str).unwrap_or("");
    let so = Path::new(so);
    let entries = support::fatbin::entries(so).unwrap_or_else(|| {
        eprintln!("{}: no readable .hip_fatbin", so.display());
        std::process::exit(1);
    });
    std::fs::create_dir_all(dir).expect("create output directory");
    let mut n = 0;
    for (k, e) in entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.id.ends_with(suffix) && e.id.contains("gfx"))
    {
        let data = support::fatbin::read_entry(so, e).expect("read entry");
        let target = e.id.rsplit("--").next().unwrap_or("x").replace(':', "_");
        let path = Path::new(dir).join(format!("b{k:04}_{target}.hsaco"));
        std::fs::write(&path, data).expect("write");
        n += 1;
    }
    println!("wrote {n} code objects to {dir}");
}
