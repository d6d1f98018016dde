//! HIP host binaries: fat binaries found in executables, shared libraries and
//! objects built by clang-19 at test time (and the committed fixtures), and the
//! host-side kernel handles, all checked against LLVM 19's tools.

use crate::container_support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use container_support::*;
use inlay_codeobj::container::handles::{kernel_handles, HostSymbol};
use inlay_codeobj::container::host::fatbin_wrappers;
use inlay_codeobj::container::{walk, Entry, EntryKind};

const TOOLS: &[&str] = &[
    "clang-19",
    "clang-offload-bundler-19",
    "llvm-readelf-19",
    "llvm-objcopy-19",
    "llvm-cxxfilt-19",
];

/// Kernels of every naming flavour: plain C++, templates, a namespace,
/// extern "C", and one that only the gfx90a device compile sees.
const SOURCE: &str = r#"
#include <hip/hip_runtime.h>
__global__ void vector_add(float *a, float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
template <typename T> __global__ void scale(T *a, T s) { a[threadIdx.x] *= s; }
template __global__ void scale<float>(float *, float);
template __global__ void scale<double>(double *, double);
namespace inlay { __global__ void fill(int *p, int v) { p[threadIdx.x] = v; } }
extern "C" __global__ void plain_c(int *p) { p[0] = 1; }
#if !defined(__HIP_DEVICE_COMPILE__) || defined(__gfx90a__)
extern "C" __global__ void only_gfx90a(int *p) { p[0] = 2; }
#endif
#ifndef NO_MAIN
int main() {
  hipLaunchKernelGGL(vector_add, dim3(1), dim3(64), 0, 0, nullptr, nullptr, nullptr, 64);
  return 0;
}
#endif
"#;

const HIP_FLAGS: &[&str] = &[
    "-x",
    "hip",
    "--offload-arch=gfx90a",
    "--offload-arch=gfx908",
    "--rocm-path=/usr",
    "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
    "-O1",
];

/// A host binary with a .hip_fatbin, and what its fat binary should hold.
struct Host {
    path: PathBuf,
    /// Bundles or CCOBs in .hip_fatbin: one per translation unit.
    containers: usize,
    compressed: bool,
}

struct Built {
    dir: PathBuf,
    hosts: Vec<Host>,
    /// A -fgpu-rdc relocatable object: device bitcode in bundle sections.
    rdc_object: PathBuf,
}

/// A second translation unit, so that a link has two bundles in .hip_fatbin.
const SECOND: &str = r#"
#include <hip/hip_runtime.h>
__global__ void second_tu(int *p) { p[threadIdx.x] = 3; }
"#;

/// Builds the test binaries once per test process (they take a few seconds).
fn built() -> Option<&'static Built> {
    static BUILT: OnceLock<Option<Built>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            oracles(TOOLS)?;
            let dir = scratch("host");
            std::fs::write(dir.join("kernels.hip"), SOURCE).unwrap();
            std::fs::write(dir.join("second.hip"), SECOND).unwrap();
            let clang = |args: &[&str]| {
                let link = ["-L/usr/lib/x86_64-linux-gnu", "-lamdhip64"];
                let with_link = args.contains(&"-shared") || !args.contains(&"-c");
                let mut cmd = Command::new("clang-19");
                cmd.current_dir(&dir).args(args);
                if with_link {
                    cmd.args(link);
                }
                run(&mut cmd);
            };
            let hip = |extra: &[&str]| clang(&[HIP_FLAGS, extra].concat());
            // Independent compiles run side by side; the links need their outputs.
            let compiles: [&[&str]; 5] = [
                &["-c", "kernels.hip", "-o", "kernels.o"],
                &["-c", "-DNO_MAIN", "second.hip", "-o", "second.o"],
                &[
                    "--offload-compress",
                    "-c",
                    "kernels.hip",
                    "-o",
                    "kernels_z.o",
                ],
                &["-fgpu-rdc", "-c", "kernels.hip", "-o", "kernels_rdc.o"],
                &[
                    "-DNO_MAIN",
                    "-fPIC",
                    "-shared",
                    "kernels.hip",
                    "-o",
                    "libkernels.so",
                ],
            ];
            std::thread::scope(|scope| {
                for args in compiles {
                    scope.spawn(move || hip(args));
                }
            });
            clang(&["kernels.o", "-o", "app"]);
            // lld leaves pointer fields 0 and relies on dynamic relocations.
            clang(&["-fuse-ld=lld", "kernels.o", "-o", "app_lld"]);
            clang(&["kernels.o", "second.o", "-o", "app_two_tus"]);
            clang(
                &[
                    &HIP_FLAGS[2..],
                    &["-fgpu-rdc", "--hip-link", "kernels_rdc.o", "-o", "app_rdc"],
                ]
                .concat(),
            );
            let host = |name: &str, containers, compressed| Host {
                path: dir.join(name),
                containers,
                compressed,
            };
            Some(Built {
                hosts: vec![
                    host("app", 1, false),
                    host("app_lld", 1, false),
                    host("app_two_tus", 2, false),
                    host("app_rdc", 1, false),
                    host("libkernels.so", 1, false),
                    host("kernels.o", 1, false),
                    host("kernels_z.o", 1, true),
                    Host {
                        path: fixture("host/vector_add_host"),
                        containers: 1,
                        compressed: false,
                    },
                ],
                rdc_object: dir.join("kernels_rdc.o"),
                dir,
            })
        })
        .as_ref()
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

/// Section headers as llvm-readelf-19 prints them: index → (name, file offset, size).
fn readelf_sections(file: &Path) -> HashMap<String, (String, u64, u64)> {
    let text = run_text(
        Command::new("llvm-readelf-19")
            .args(["-S", "--wide"])
            .arg(file),
    );
    let mut sections = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('[') else {
            continue;
        };
        let Some((index, rest)) = rest.split_once(']') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if let (Ok(index), [name, _type, _addr, offset, size, ..]) =
            (index.trim().parse::<u32>(), fields.as_slice())
        {
            if let (Ok(offset), Ok(size)) = (
                u64::from_str_radix(offset, 16),
                u64::from_str_radix(size, 16),
            ) {
                sections.insert(index.to_string(), (name.to_string(), offset, size));
            }
        }
    }
    sections
}

/// Defined symbols as llvm-readelf-19 prints them (both tables): name → (type, symbol).
fn readelf_symbols(file: &Path) -> HashMap<String, (String, HostSymbol)> {
    let sections = readelf_sections(file);
    let text = run_text(
        Command::new("llvm-readelf-19")
            .args(["--symbols", "--wide"])
            .arg(file),
    );
    let mut symbols = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[0].ends_with(':') || f[6] == "UND" {
            continue;
        }
        let Ok(address) = u64::from_str_radix(f[1], 16) else {
            continue;
        };
        let size = match f[2].strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => f[2].parse().unwrap(),
        };
        let name = f[7].split('@').next().unwrap().to_string();
        let section = sections.get(f[6]).map(|(n, _, _)| n.clone());
        let symbol = HostSymbol {
            name: name.clone(),
            address,
            size,
            section,
        };
        symbols.entry(name).or_insert((f[3].to_string(), symbol));
    }
    symbols
}

fn demangle(name: &str) -> String {
    run_text(Command::new("llvm-cxxfilt-19").arg(name))
        .trim()
        .to_string()
}

/// Kernel names of a code object per llvm-readelf-19: symbols `<kernel>.kd`.
fn readelf_kernels(dir: &Path, bytes: &[u8]) -> BTreeSet<String> {
    let path = dir.join(format!(
        "co-{}.hsaco",
        std::process::id() as usize + bytes.len()
    ));
    std::fs::write(&path, bytes).unwrap();
    let syms = readelf_symbols(&path);
    syms.into_iter()
        .filter(|(_, (ty, _))| ty == "OBJECT")
        .filter_map(|(name, _)| name.strip_suffix(".kd").map(str::to_string))
        .collect()
}

/// The offset after "@0x" in a location part like `bundle 0 @0x3000`.
fn hex_after_at(part: &str) -> u64 {
    let hex = part.split("@0x").nth(1).unwrap();
    u64::from_str_radix(hex.split(']').next().unwrap(), 16).unwrap()
}

/// The walk of a host file agrees with llvm-readelf + clang-offload-bundler:
/// each container (bundle or CCOB) of .hip_fatbin, cut out of the file from
/// its start to the next one's, lists and unbundles to what we found in it.
/// Returns the entries and the containers' file offsets.
fn check_fatbin(dir: &Path, file: &Path) -> (Vec<Entry<'static>>, Vec<u64>) {
    // Tests run in parallel: each call extracts into a directory of its own.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir = &dir.join(format!("check{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(dir).unwrap();
    let data = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let entries: Vec<Entry<'_>> = walk(&data, name)
        .map(|e| e.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let (_, section_offset, section_size) = readelf_sections(file)
        .into_values()
        .find(|(n, _, _)| n == ".hip_fatbin")
        .unwrap();

    let prefix = format!("{name}[.hip_fatbin ");
    let mut containers: BTreeMap<u64, Vec<&Entry<'_>>> = BTreeMap::new();
    for entry in &entries {
        let outer = entry
            .location
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{}", entry.location));
        containers
            .entry(hex_after_at(outer.split(']').next().unwrap()))
            .or_default()
            .push(entry);
        if let Some(offset) = entry.offset {
            let offset = offset as usize;
            assert_eq!(
                &data[offset..offset + entry.bytes.len()],
                entry.bytes.as_ref()
            );
        }
    }
    let starts: Vec<u64> = containers.keys().copied().collect();
    assert_eq!(
        starts.first(),
        Some(&section_offset),
        "{name}: first container starts the section"
    );
    for (i, (start, group)) in containers.iter().enumerate() {
        let end = starts
            .get(i + 1)
            .copied()
            .unwrap_or(section_offset + section_size);
        let cut = dir.join(format!("{name}.container{i}"));
        std::fs::write(&cut, &data[*start as usize..end as usize]).unwrap();
        let mut ids: Vec<String> = group.iter().map(|e| e.bundle_id.clone().unwrap()).collect();
        ids.sort();
        assert_eq!(ids, bundler_list(&cut), "{name} container {i}");
        for entry in group {
            let id = entry.bundle_id.as_deref().unwrap();
            if entry.kind == EntryKind::Host {
                continue;
            }
            assert_eq!(entry.kind, EntryKind::CodeObject, "{id}");
            let expected = bundler_unbundle(dir, &cut, id);
            assert_eq!(entry.bytes.as_ref(), expected.as_slice(), "{name} {id}");
        }
    }
    let owned = entries
        .into_iter()
        .map(|e| Entry {
            bytes: e.bytes.into_owned().into(),
            ..e
        })
        .collect();
    (owned, starts)
}

#[test]
fn fat_binaries_match_clang_offload_bundler() {
    let Some(b) = built() else { return };
    for host in &b.hosts {
        let (entries, starts) = check_fatbin(&b.dir, &host.path);
        let what = host.path.display();
        assert_eq!(starts.len(), host.containers, "{what}");
        // Each wrapper in .hipFatBinSegment points at one container.
        let data = std::fs::read(&host.path).unwrap();
        let wrappers = fatbin_wrappers(&data).unwrap();
        let pointed: Vec<u64> = wrappers.iter().map(|w| w.fatbin_offset.unwrap()).collect();
        let mut sorted = pointed.clone();
        sorted.sort();
        assert_eq!(sorted, starts, "{what}: {wrappers:?}");
        assert!(wrappers.iter().all(|w| w.version == 1));
        let targets: BTreeSet<&str> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::CodeObject)
            .map(|e| e.target_id.as_str())
            .collect();
        assert!(
            targets.contains("gfx90a") && targets.contains("gfx908"),
            "{what}: {targets:?}"
        );
        let hosts = entries.iter().filter(|e| e.kind == EntryKind::Host).count();
        assert_eq!(hosts, host.containers, "{what}: one host entry per bundle");
        for entry in &entries {
            assert_eq!(
                entry.location.contains(" CCOB "),
                host.compressed,
                "{}",
                entry.location
            );
            assert_eq!(
                entry.offset.is_none(),
                host.compressed,
                "{}",
                entry.location
            );
        }
    }
}

#[test]
fn rdc_objects_report_device_bitcode_sections() {
    let Some(b) = built() else { return };
    let data = std::fs::read(&b.rdc_object).unwrap();
    let bundle_sections: Vec<(String, u64, u64)> = readelf_sections(&b.rdc_object)
        .into_values()
        .filter(|(n, _, _)| n.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
        .collect();
    assert!(!bundle_sections.is_empty());
    let entries: Vec<Entry<'_>> = walk(&data, "rdc.o").map(|e| e.unwrap()).collect();
    assert_eq!(entries.len(), bundle_sections.len());
    for entry in &entries {
        let id = entry.bundle_id.clone().unwrap();
        let section = format!("__CLANG_OFFLOAD_BUNDLE__{id}");
        let dumped = b.dir.join(format!("dump-{}", id.replace(':', "_")));
        run(Command::new("llvm-objcopy-19")
            .arg(format!("--dump-section={section}={}", dumped.display()))
            .arg(&b.rdc_object));
        assert_eq!(
            entry.bytes.as_ref(),
            std::fs::read(&dumped).unwrap().as_slice()
        );
        if id.starts_with("host-") {
            assert_eq!(entry.kind, EntryKind::Host);
            continue;
        }
        // Device bitcode, not a code object.
        assert_eq!(entry.kind, EntryKind::Other);
        assert!(entry.bytes.starts_with(b"BC\xc0\xde"));
        assert!(entry.target_id.starts_with("gfx90") && id.ends_with(&entry.target_id));
    }
}

#[test]
fn kernel_handles_match_readelf() {
    let Some(b) = built() else { return };
    for host in &b.hosts {
        let file = &host.path;
        let data = std::fs::read(file).unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let map = kernel_handles(&data, name).unwrap();
        assert!(map.errors.is_empty(), "{:?}", map.errors);
        let symbols = readelf_symbols(file);
        let (code_objects, _) = check_fatbin(&b.dir, file);
        let code_objects: Vec<&Entry<'_>> = code_objects
            .iter()
            .filter(|e| e.kind == EntryKind::CodeObject)
            .collect();
        assert_eq!(map.code_objects.len(), code_objects.len());

        let mut stubs_seen = BTreeSet::new();
        for k in &map.kernels {
            // The handle is the data symbol named like the kernel.
            let (ty, expected) = symbols
                .get(&k.kernel)
                .unwrap_or_else(|| panic!("{file:?}: no host symbol {}", k.kernel));
            assert_eq!(ty, "OBJECT");
            assert_eq!(
                k.handle.as_ref(),
                Some(expected),
                "{file:?} handle {}",
                k.kernel
            );
            // The stub demangles to the kernel's demangled name with "__device_stub__"
            // before its unqualified name.
            let stub = k
                .stub
                .as_ref()
                .unwrap_or_else(|| panic!("{file:?}: no stub for {}", k.kernel));
            let demangled = demangle(&stub.name);
            assert!(demangled.contains("__device_stub__"), "{demangled}");
            assert_eq!(
                demangled.replacen("__device_stub__", "", 1),
                demangle(&k.kernel)
            );
            let (ty, expected) = &symbols[&stub.name];
            assert_eq!((ty.as_str(), expected), ("FUNC", stub));
            stubs_seen.insert(stub.name.clone());
        }
        // Every stub the host defines belongs to one of the mapped kernels.
        let all_stubs: BTreeSet<String> = symbols
            .iter()
            .filter(|(name, (ty, _))| ty == "FUNC" && name.contains("__device_stub__"))
            .map(|(name, _)| name.clone())
            .collect();
        assert_eq!(stubs_seen, all_stubs, "{file:?}");
        // Presence per code object agrees with the .kd symbols llvm-readelf sees.
        for (i, (co, entry)) in map.code_objects.iter().zip(&code_objects).enumerate() {
            assert_eq!(co.location, entry.location);
            let kernels = readelf_kernels(&b.dir, &entry.bytes);
            let ours: BTreeSet<String> = map
                .kernels
                .iter()
                .filter(|k| k.in_code_object[i])
                .map(|k| k.kernel.clone())
                .collect();
            assert_eq!(ours, kernels, "{}", co.location);
        }
    }
}

#[test]
fn a_kernel_compiled_for_one_target_only() {
    let Some(b) = built() else { return };
    let data = std::fs::read(&b.hosts[0].path).unwrap();
    let map = kernel_handles(&data, "app").unwrap();
    let k = map
        .kernels
        .iter()
        .find(|k| k.kernel == "only_gfx90a")
        .expect("only_gfx90a mapped");
    assert!(k.handle.is_some() && k.stub.is_some());
    for (co, present) in map.code_objects.iter().zip(&k.in_code_object) {
        assert_eq!(
            *present,
            co.target_id.starts_with("gfx90a"),
            "{}",
            co.location
        );
    }
}

/// A host object assembled by llvm-mc-19 whose .hip_fatbin holds `contents`.
fn host_object(dir: &Path, name: &str, contents: &[u8], section: &str) -> Vec<u8> {
    let blob = dir.join(format!("{name}.bin"));
    std::fs::write(&blob, contents).unwrap();
    let asm = dir.join(format!("{name}.s"));
    let text = format!(".section {section},\"a\"\n.incbin \"{}\"\n", blob.display());
    std::fs::write(&asm, text).unwrap();
    let obj = dir.join(format!("{name}.o"));
    run(Command::new("llvm-mc-19")
        .args(["-triple", "x86_64-unknown-linux-gnu", "-filetype=obj"])
        .arg(&asm)
        .arg("-o")
        .arg(&obj));
    std::fs::read(obj).unwrap()
}

#[test]
fn host_files_without_device_code_are_errors() {
    if oracles(&["llvm-mc-19", "llvm-readelf-19"]).is_none() {
        return;
    }
    let dir = scratch("host-errors");
    // No fat binary section at all.
    let none = host_object(&dir, "none", b"data", ".rodata");
    let errors: Vec<_> = walk(&none, "none.o").filter_map(|e| e.err()).collect();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].what.contains(".hip_fatbin"), "{}", errors[0]);

    // A .hip_fatbin of garbage: the error points at the section's file offset.
    let junk = host_object(&dir, "junk", &[0x5a; 300], ".hip_fatbin");
    let offset = readelf_sections(&dir.join("junk.o"))
        .into_values()
        .find(|(n, _, _)| n == ".hip_fatbin")
        .unwrap()
        .1;
    let errors: Vec<_> = walk(&junk, "junk.o").filter_map(|e| e.err()).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].offset, Some(offset), "{}", errors[0]);
    assert!(kernel_handles(&junk, "junk.o").unwrap().errors.len() == 1);
}

/// Truncated and corrupted host binaries give errors, never panics.
#[test]
fn damaged_host_binaries_do_not_panic() {
    let Some(b) = built() else { return };
    let data = std::fs::read(&b.hosts[0].path).unwrap();
    for len in (0..data.len()).step_by(97) {
        let _ = walk(&data[..len], "cut").count();
        let _ = kernel_handles(&data[..len], "cut");
        let _ = fatbin_wrappers(&data[..len]);
    }
    // The ELF header and the section header table (at e_shoff) are what we read.
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    let header_bytes = (0..64).chain(shoff..data.len().min(shoff + 64 * 40));
    for i in header_bytes.step_by(3) {
        let mut bad = data.clone();
        bad[i] ^= 0xa5;
        let _ = walk(&bad, "bad").count();
        let _ = kernel_handles(&bad, "bad");
        let _ = fatbin_wrappers(&bad);
    }
}
