//! Through ROCr's C API: code objects whose kernel descriptors are all ones,
//! all zeros, random, or point outside the code are refused at load with
//! HSA_STATUS_ERROR_INVALID_CODE_OBJECT, not handed out as kernel objects
//! whose dispatch fails later.

mod common;

#[test]
fn impossible_descriptors_are_refused_at_load() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let good = fixtures.join("gfx90a/v5/vector_add.hsaco");
    let bytes = std::fs::read(&good).unwrap();
    let co = inlay_codeobj::CodeObject::parse(&bytes).unwrap();
    let at = co.kernel("vector_add").unwrap().descriptor_file_offset as usize;
    let original: [u8; 64] = bytes[at..at + 64].try_into().unwrap();
    let mut random = [0u8; 64];
    let mut x = 0x243f_6a88_85a3_08d3u64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut outside = original;
    outside[16..24].copy_from_slice(&(-0x880i64).to_le_bytes());
    let dir = std::env::temp_dir().join(format!("inlay-hsa-descriptors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec![good.display().to_string()];
    for (name, descriptor) in [
        ("ones", [0xff; 64]),
        ("zeros", [0; 64]),
        ("random", random),
        ("outside", outside),
    ] {
        let mut damaged = bytes.clone();
        damaged[at..at + 64].copy_from_slice(&descriptor);
        let path = dir.join(format!("{name}.hsaco"));
        std::fs::write(&path, &damaged).unwrap();
        args.push(path.display().to_string());
    }
    if let Some(out) = common::run_c_program("bad_descriptors", &args) {
        assert!(out.contains("PASS 4 damaged descriptors refused"), "{out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
