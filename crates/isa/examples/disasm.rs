//! Print inlay's `llvm-objdump -d`-style listing of code objects.
//!
//!     cargo run --release -p inlay-isa --example disasm -- FILE...
#[path = "../tests/isa/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;

fn main() {
    let mut out = std::io::stdout().lock();
    for f in std::env::args().skip(1) {
        let data = std::fs::read(&f).expect("read");
        let name = Path::new(&f)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        match support::inlay_listing(&data, name) {
            Some(s) => out.write_all(s.as_bytes()).expect("write"),
            None => eprintln!("{f}: not a gfx908/gfx90a/gfx942 code object"),
        }
    }
}
