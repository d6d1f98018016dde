//! Fuzzes the msgpack metadata parser alone: bytes as an NT_AMDGPU_METADATA
//! descriptor. Any input may be rejected, but never by a panic; whatever is
//! accepted must write back to msgpack that reads back to the same document.
#![no_main]

use inlay_codeobj::metadata::{to_json, Metadata};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(md) = Metadata::parse(data, 0) else {
        return;
    };
    let _ = serde_json::to_string(&md);
    let _ = to_json(&md.to_value());
    for k in &md.kernels {
        let _ = (&k.name, &k.symbol, k.args.len(), &k.unknown);
        for a in &k.args {
            let _ = (a.offset, a.size, &a.value_kind, &a.address_space);
        }
    }
    // Written bytes are a fixed point: parse(write(m)) writes the same bytes.
    // (Compared as bytes, not as values, so a NaN in an unknown key is fine.)
    let written = md.to_msgpack();
    let again = match Metadata::parse(&written, 0) {
        Ok(m) => m,
        Err(e) => panic!("metadata we wrote does not parse back: {e}"),
    };
    assert_eq!(again.to_msgpack(), written, "metadata write is not stable");
});
