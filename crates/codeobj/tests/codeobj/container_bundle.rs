//! Offload bundles and compressed bundles (CCOB), checked against
//! clang-offload-bundler-19, plus malformed inputs that must be errors with offsets.

use crate::container_support;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use container_support::*;
use inlay_codeobj::container::bundle::{Bundle, BundleId};
use inlay_codeobj::container::{ccob, elf, walk, Entry, EntryKind};

const HOST: &str = "host-x86_64-unknown-linux-gnu-";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-";
const GFX908: &str = "hipv4-amdgcn-amd-amdhsa--gfx908";
const GFX942: &str = "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack+";

const TOOLS: &[&str] = &[
    "clang-offload-bundler-19",
    "llvm-mc-19",
    "ld.lld-19",
    "md5sum",
];

/// Three code objects with different kernels, bundled with a host entry.
fn inputs(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (HOST, Vec::new()),
        (
            GFX90A,
            code_object(dir, "gfx90a", "-xnack", &["kern_a", "shared"]),
        ),
        (
            GFX908,
            code_object(dir, "gfx908", "", &["kern_b", "shared"]),
        ),
        (
            GFX942,
            code_object(dir, "gfx942", "+sramecc,+xnack", &["kern_c"]),
        ),
    ]
}

fn make_bundle(dir: &Path, compress: bool) -> std::path::PathBuf {
    let inputs = inputs(dir);
    let refs: Vec<(&str, &[u8])> = inputs.iter().map(|(id, b)| (*id, b.as_slice())).collect();
    let out = dir.join(if compress { "test.ccob" } else { "test.bundle" });
    bundle(dir, &refs, compress, &out);
    out
}

fn entries<'d>(data: &'d [u8]) -> Vec<Entry<'d>> {
    walk(data, "t")
        .map(|e| e.unwrap_or_else(|e| panic!("walk error: {e}")))
        .collect()
}

/// Every entry of our walk of `file` is what clang-offload-bundler lists and
/// extracts, with the target ID its code object's e_flags encode.
fn check_against_bundler(dir: &Path, file: &Path, data: &[u8], entries: &[Entry<'_>]) {
    let mut ids: Vec<String> = entries
        .iter()
        .map(|e| e.bundle_id.clone().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, bundler_list(file));
    for entry in entries {
        let id = entry.bundle_id.as_deref().unwrap();
        let parsed = BundleId::parse(id);
        // The bundler cannot extract host entries of binary bundles; ours are empty.
        let expected = match parsed.is_host() {
            true => Vec::new(),
            false => bundler_unbundle(dir, file, id),
        };
        assert_eq!(entry.bytes.as_ref(), expected.as_slice(), "bytes of {id}");
        if let Some(offset) = entry.offset {
            let range = offset as usize..offset as usize + entry.bytes.len();
            assert_eq!(&data[range], entry.bytes.as_ref(), "offset of {id}");
        }
        if parsed.is_host() {
            assert_eq!(entry.kind, EntryKind::Host);
        } else {
            assert_eq!(entry.kind, EntryKind::CodeObject);
            assert_eq!(entry.target_id, parsed.target_id);
            assert_eq!(
                elf::target_id(&entry.bytes).as_deref(),
                Some(parsed.target_id)
            );
            assert!(entry.location.ends_with(id), "{}", entry.location);
        }
    }
}

#[test]
fn bundle_entries_match_clang_offload_bundler() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("bundle");
    let file = make_bundle(&dir, false);
    let data = std::fs::read(&file).unwrap();
    let entries = entries(&data);
    assert_eq!(entries.len(), 4);
    assert!(entries.iter().all(|e| e.offset.is_some()));
    check_against_bundler(&dir, &file, &data, &entries);
}

#[test]
fn llvm19_compressed_bundle_matches_clang_offload_bundler() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("ccob-llvm");
    let plain = std::fs::read(make_bundle(&dir, false)).unwrap();
    let file = make_bundle(&dir, true);
    let data = std::fs::read(&file).unwrap();
    // What LLVM 19 writes: version 2, zstd, sizes that agree with the buffer.
    let header = ccob::Header::parse(&data).unwrap();
    assert_eq!((header.version, header.method), (2, ccob::Method::Zstd));
    assert_eq!(header.total_size, Some(data.len() as u64));
    let decompressed = ccob::decompress(&data).unwrap();
    assert_eq!(
        decompressed.data, plain,
        "the bundler writes the same bundle, then compresses it"
    );
    assert_eq!(decompressed.consumed, data.len() as u64);

    let entries = entries(&data);
    assert_eq!(entries.len(), 4);
    assert!(
        entries.iter().all(|e| e.offset.is_none()),
        "decompressed entries have no file offset"
    );
    check_against_bundler(&dir, &file, &data, &entries);
}

/// The hash CCOB headers record for `data`: the first 8 bytes of its MD5
/// (as computed by coreutils' md5sum), little-endian.
fn md5_hash(dir: &Path, data: &[u8]) -> u64 {
    let path = dir.join("md5-input");
    std::fs::write(&path, data).unwrap();
    let out = run_text(Command::new("md5sum").arg(&path));
    let hex = &out[..16];
    let bytes: Vec<u8> = (0..8)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    u64::from_le_bytes(bytes.try_into().unwrap())
}

/// A CCOB built from the documented layout, `payload` already compressed.
fn ccob_bytes(version: u16, method: u16, uncompressed: u64, hash: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = b"CCOB".to_vec();
    out.extend(version.to_le_bytes());
    out.extend(method.to_le_bytes());
    match version {
        1 => out.extend((uncompressed as u32).to_le_bytes()),
        2 => {
            out.extend((24 + payload.len() as u32).to_le_bytes());
            out.extend((uncompressed as u32).to_le_bytes());
        }
        _ => {
            out.extend((32 + payload.len() as u64).to_le_bytes());
            out.extend(uncompressed.to_le_bytes());
        }
    }
    out.extend(hash.to_le_bytes());
    out.extend(payload);
    out
}

fn compress(method: u16, data: &[u8]) -> Vec<u8> {
    if method == 0 {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    } else {
        zstd::encode_all(data, 3).unwrap()
    }
}

#[test]
fn ccob_versions_1_to_3_with_zlib_and_zstd() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("ccob-versions");
    let plain_file = make_bundle(&dir, false);
    let plain = std::fs::read(&plain_file).unwrap();
    let hash = md5_hash(&dir, &plain);
    let expected: Vec<(Option<String>, Vec<u8>)> = entries(&plain)
        .into_iter()
        .map(|e| (e.bundle_id, e.bytes.into_owned()))
        .collect();
    for version in 1..=3u16 {
        for method in 0..=1u16 {
            let data = ccob_bytes(
                version,
                method,
                plain.len() as u64,
                hash,
                &compress(method, &plain),
            );
            let header = ccob::Header::parse(&data).unwrap();
            assert_eq!(header.version, version);
            assert_eq!(header.uncompressed_size, plain.len() as u64);
            let got: Vec<(Option<String>, Vec<u8>)> = entries(&data)
                .into_iter()
                .map(|e| (e.bundle_id, e.bytes.into_owned()))
                .collect();
            assert_eq!(got, expected, "version {version} method {method}");
            // LLVM 19 reads versions 1 and 2 (either method): it must agree with us.
            if version <= 2 {
                let file = dir.join(format!("v{version}m{method}.ccob"));
                std::fs::write(&file, &data).unwrap();
                check_against_bundler(&dir, &file, &data, &entries(&data));
            }
        }
    }
}

#[test]
fn version_1_ccob_ends_where_its_stream_ends() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("ccob-v1-seq");
    let plain = std::fs::read(make_bundle(&dir, false)).unwrap();
    let hash = md5_hash(&dir, &plain);
    for method in 0..=1u16 {
        // A v1 CCOB records no total size; a plain bundle follows at the next page.
        let mut data = ccob_bytes(
            1,
            method,
            plain.len() as u64,
            hash,
            &compress(method, &plain),
        );
        let stream_end = data.len() as u64;
        assert_eq!(ccob::decompress(&data).unwrap().consumed, stream_end);
        data.resize(4096, 0);
        data.extend(&plain);
        let all = entries(&data);
        assert_eq!(all.len(), 8);
        assert!(all[..4].iter().all(|e| e.offset.is_none()));
        assert!(all[4..].iter().all(|e| e.offset.is_some_and(|o| o > 4096)));
        assert!(
            all[4].location.contains("[bundle 1 @0x1000]"),
            "{}",
            all[4].location
        );
    }
}

/// The first error of a walk over `data`; the walk must end (and not panic).
#[track_caller]
fn first_error(data: &[u8]) -> inlay_codeobj::Error {
    walk(data, "t").find_map(|e| e.err()).expect("an error")
}

fn put_u64(data: &mut [u8], at: usize, value: u64) {
    data[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn malformed_bundles_are_errors_with_offsets() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("bad-bundle");
    let good = std::fs::read(make_bundle(&dir, false)).unwrap();
    let bundle = Bundle::parse(&good).unwrap();
    let first = &bundle.entries[0];

    // Entry count field cut off.
    let e = first_error(&good[..28]);
    assert_eq!(e.offset, Some(24), "{e}");

    // Absurd entry count.
    let mut bad = good.clone();
    put_u64(&mut bad, 24, u64::MAX / 2);
    let e = first_error(&bad);
    assert_eq!(e.offset, Some(24), "{e}");
    assert!(e.what.contains("entries"), "{e}");

    // Entry 0 (its row starts at 32) pointing past the end, and wrapping around.
    for (offset, size) in [(good.len() as u64, 1), (8, u64::MAX)] {
        let mut bad = good.clone();
        put_u64(&mut bad, 32, offset);
        put_u64(&mut bad, 40, size);
        let e = first_error(&bad);
        assert_eq!(e.offset, Some(32), "{e}");
    }

    // ID length past the end.
    let mut bad = good.clone();
    put_u64(&mut bad, 48, 1 << 40);
    assert_eq!(first_error(&bad).offset, Some(56));

    // Truncated inside the first entry's contents: the table row is blamed.
    let cut = (first.offset + first.size.max(1) - 1) as usize;
    if first.size > 0 {
        assert_eq!(first_error(&good[..cut]).offset, Some(32));
    }

    // An entry that is the whole bundle again: refused at once (it overlaps the table).
    // (Host entries are never looked into, so use the first device entry's row.)
    let device = bundle
        .entries
        .iter()
        .position(|e| !e.id.starts_with("host-"))
        .unwrap();
    let row = 32
        + bundle.entries[..device]
            .iter()
            .map(|e| 24 + e.id.len())
            .sum::<usize>();
    let mut bad = good.clone();
    put_u64(&mut bad, row, 0);
    put_u64(&mut bad, row + 8, good.len() as u64);
    let e = first_error(&bad);
    assert!(e.what.contains("overlaps the entry table"), "{e}");

    // No prefix and no single-byte corruption of the header panics.
    for len in 0..good.len().min(4096) {
        let _ = walk(&good[..len], "t").count();
    }
    let table_end = 32
        + bundle
            .entries
            .iter()
            .map(|e| 24 + e.id.len())
            .sum::<usize>();
    for i in 0..table_end {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            let _ = walk(&bad, "t").count();
        }
    }
}

#[test]
fn malformed_ccobs_are_errors_with_offsets() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("bad-ccob");
    let plain = std::fs::read(make_bundle(&dir, false)).unwrap();
    let hash = md5_hash(&dir, &plain);
    let good = std::fs::read(make_bundle(&dir, true)).unwrap(); // LLVM's v2/zstd
    assert_eq!(ccob::Header::parse(&good).unwrap().hash, hash);
    assert!(ccob::decompress(&good).is_ok());

    // A recorded hash (at 16) that disagrees with the decompressed bytes.
    let mut bad = good.clone();
    bad[16] ^= 1;
    let e = first_error(&bad);
    assert!(e.what.contains("hash"), "{e}");

    // Total size (at 8) larger than the data, or smaller than the header.
    for total in [good.len() as u32 + 1, 10] {
        let mut bad = good.clone();
        bad[8..12].copy_from_slice(&total.to_le_bytes());
        assert_eq!(first_error(&bad).offset, Some(8));
    }
    // Uncompressed size (at 12) that disagrees with the payload: blamed on the payload at 24.
    for size in [plain.len() as u32 + 1, plain.len() as u32 - 1, u32::MAX] {
        let mut bad = good.clone();
        bad[12..16].copy_from_slice(&size.to_le_bytes());
        let e = first_error(&bad);
        assert_eq!(e.offset, Some(24), "{e}");
    }
    // A version 3 header announcing more than we accept to inflate.
    let mut huge = ccob_bytes(3, 1, plain.len() as u64, hash, &compress(1, &plain));
    huge[16..24].copy_from_slice(&(ccob::MAX_UNCOMPRESSED + 1).to_le_bytes());
    assert_eq!(first_error(&huge).offset, Some(16));

    // Unknown version and method.
    let mut bad = good.clone();
    bad[4] = 9;
    assert_eq!(first_error(&bad).offset, Some(4));
    let mut bad = good.clone();
    bad[6] = 7;
    assert_eq!(first_error(&bad).offset, Some(6));
    // Header cut short.
    assert_eq!(first_error(&good[..14]).offset, Some(12));

    // Corrupt payloads, zstd and zlib, in every version: errors at the payload start.
    for version in 1..=3u16 {
        for method in 0..=1u16 {
            let mut bad = ccob_bytes(
                version,
                method,
                plain.len() as u64,
                hash,
                &compress(method, &plain),
            );
            let header_len = [0, 20, 24, 32][version as usize];
            let mid = header_len + (bad.len() - header_len) / 2;
            for b in &mut bad[mid..mid + 8] {
                *b ^= 0x5a;
            }
            let e = first_error(&bad);
            assert_eq!(
                e.offset,
                Some(header_len as u64),
                "v{version} m{method}: {e}"
            );
        }
    }

    // No prefix and no corrupted byte anywhere panics (small inputs: every byte).
    for len in 0..good.len() {
        let _ = walk(&good[..len], "t").count();
    }
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0xff;
        let _ = walk(&bad, "t").count();
    }
}

#[test]
fn raw_code_objects_walk_as_themselves() {
    if oracles(&["llvm-mc-19", "ld.lld-19"]).is_none() {
        return;
    }
    let dir = scratch("raw");
    let data = code_object(&dir, "gfx90a", "+xnack", &["k"]);
    let entries = entries(&data);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].kind, EntryKind::CodeObject);
    assert_eq!(entries[0].target_id, "gfx90a:xnack+");
    assert_eq!(entries[0].offset, Some(0));
    assert_eq!(entries[0].bytes.len(), data.len());
    // Garbage is an error at offset 0, not a panic.
    assert_eq!(first_error(b"hello world").offset, Some(0));
    assert_eq!(first_error(b"").offset, Some(0));
}

/// Processor names must round-trip through the e_flags llvm-mc-19 writes.
#[test]
fn target_ids_agree_with_llvm_mc() {
    let Some(mc) = oracle("llvm-mc-19") else {
        return;
    };
    let dir = scratch("targets");
    let procs = [
        "gfx700", "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx90c", "gfx940", "gfx941",
        "gfx942", "gfx1010", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1200",
        "gfx1201",
    ];
    let src = dir.join("empty.s");
    std::fs::write(&src, ".text\n").unwrap();
    for proc in procs {
        let obj = dir.join(format!("{proc}.o"));
        run(Command::new(&mc)
            .args(["-triple", "amdgcn-amd-amdhsa", "-filetype=obj"])
            .arg(format!("-mcpu={proc}"))
            .arg(&src)
            .arg("-o")
            .arg(&obj));
        let bytes = std::fs::read(&obj).unwrap();
        let id = elf::target_id(&bytes).unwrap_or_default();
        assert_eq!(id.split(':').next(), Some(proc), "e_flags of {proc}");
    }
}

/// The committed fixtures (built by fixtures/build.sh) read like the bundler reads them.
#[test]
fn fixture_bundles_match_clang_offload_bundler() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("fixtures");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bundle");
    for name in ["vector_add.bundle", "vector_add.ccob"] {
        let file = fixtures.join(name);
        let data = std::fs::read(&file).unwrap();
        let entries = entries(&data);
        assert_eq!(
            entries
                .iter()
                .filter(|e| e.kind == EntryKind::CodeObject)
                .count(),
            3,
            "{name}"
        );
        check_against_bundler(&dir, &file, &data, &entries);
    }
}

/// Bundles and CCOBs one after another, as in a fat binary section: an error in
/// one container is reported with its offset and the walk goes on with the next,
/// found at the next 4096-byte boundary or, failing that, by searching.
#[test]
fn sequences_resume_after_a_broken_container() {
    if oracles(TOOLS).is_none() {
        return;
    }
    let dir = scratch("sequence");
    let plain = std::fs::read(make_bundle(&dir, false)).unwrap();
    let ccob = std::fs::read(make_bundle(&dir, true)).unwrap();
    let mut broken = plain.clone();
    put_u64(&mut broken, 24, u64::MAX); // absurd entry count

    let mut data = broken;
    data.resize(4096, 0);
    data.extend(&plain);
    let unaligned = data.len() + 17; // after some bytes that are no container
    data.extend([0xee; 17]);
    data.extend(&ccob);

    let items: Vec<_> = walk(&data, "seq").collect();
    let errors: Vec<_> = items.iter().filter_map(|i| i.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].offset, Some(24));
    let entries: Vec<_> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
    assert_eq!(entries.len(), 8);
    assert!(entries[..4]
        .iter()
        .all(|e| e.location.starts_with("seq[bundle 1 @0x1000] ")));
    let ccob_at = format!("seq[CCOB 2 @{unaligned:#x}][bundle 0 @0x0] ");
    assert!(
        entries[4..]
            .iter()
            .all(|e| e.location.starts_with(&ccob_at)),
        "{}",
        entries[4].location
    );
    for (a, b) in entries[..4].iter().zip(&entries[4..]) {
        assert_eq!((&a.bundle_id, &a.bytes), (&b.bundle_id, &b.bytes));
    }
}
