//! HIP host binaries: fat binaries found in executables, shared libraries and
//! objects built by clang-19 at test time (and the committed fixtures), and the
//! host-side kernel handles, all checked against LLVM 19's tools.

mod container_support;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use container_support::*;
use inlay_codeobj::container::handles::{kernel_handles, HostSymbol};
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

struct Built {
    dir: PathBuf,
    /// Linked executables and shared libraries with a .hip_fatbin.
    linked: Vec<PathBuf>,
    /// A relocatable object with a .hip_fatbin (no -fgpu-rdc).
    object: PathBuf,
    /// A -fgpu-rdc relocatable object: device bitcode in bundle sections.
    rdc_object: PathBuf,
}

/// Builds the test binaries once per test process (they take a few seconds).
fn built() -> Option<&'static Built> {
    static BUILT: OnceLock<Option<Built>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            oracles(TOOLS)?;
            let dir = scratch("host");
            let src = dir.join("kernels.hip");
            std::fs::write(&src, SOURCE).unwrap();
            let clang = |args: &[&str]| {
                run(Command::new("clang-19").current_dir(&dir).args(args));
            };
            let link = ["-L/usr/lib/x86_64-linux-gnu", "-lamdhip64"];
            clang(&[HIP_FLAGS, &["-c", "kernels.hip", "-o", "kernels.o"]].concat());
            clang(&[&["kernels.o", "-o", "app"][..], &link].concat());
            clang(
                &[
                    HIP_FLAGS,
                    &["-fgpu-rdc", "-c", "kernels.hip", "-o", "kernels_rdc.o"],
                ]
                .concat(),
            );
            let rdc_link = [
                &HIP_FLAGS[2..],
                &["-fgpu-rdc", "--hip-link", "kernels_rdc.o", "-o", "app_rdc"],
            ]
            .concat();
            clang(&[&rdc_link[..], &link].concat());
            clang(
                &[
                    HIP_FLAGS,
                    &[
                        "-DNO_MAIN",
                        "-fPIC",
                        "-shared",
                        "kernels.hip",
                        "-o",
                        "libkernels.so",
                    ],
                    &link,
                ]
                .concat(),
            );
            Some(Built {
                linked: vec![
                    dir.join("app"),
                    dir.join("app_rdc"),
                    dir.join("libkernels.so"),
                ],
                object: dir.join("kernels.o"),
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

/// Section headers as llvm-readelf-19 prints them: index → (name, file offset).
fn readelf_sections(file: &Path) -> HashMap<String, (String, u64)> {
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
        if let (Ok(index), [name, _type, _addr, offset, ..]) =
            (index.trim().parse::<u32>(), fields.as_slice())
        {
            if let Ok(offset) = u64::from_str_radix(offset, 16) {
                sections.insert(index.to_string(), (name.to_string(), offset));
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
        let section = sections.get(f[6]).map(|(n, _)| n.clone());
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

/// The walk of a host file agrees with llvm-objcopy + clang-offload-bundler.
fn check_fatbin(dir: &Path, file: &Path) -> Vec<Entry<'static>> {
    // Tests run in parallel: each call extracts into a directory of its own.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir = &dir.join(format!("check{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(dir).unwrap();
    let data = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let entries: Vec<Entry<'_>> = walk(&data, name)
        .map(|e| e.unwrap_or_else(|e| panic!("{e}")))
        .collect();

    let fatbin = dir.join(format!("{name}.hip_fatbin"));
    run(Command::new("llvm-objcopy-19")
        .arg(format!("--dump-section=.hip_fatbin={}", fatbin.display()))
        .arg(file));
    let section_offset = readelf_sections(file)
        .into_values()
        .find(|(n, _)| n == ".hip_fatbin")
        .unwrap()
        .1;
    let mut ids: Vec<String> = entries
        .iter()
        .map(|e| e.bundle_id.clone().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, bundler_list(&fatbin), "{name}");
    for entry in &entries {
        let id = entry.bundle_id.as_deref().unwrap();
        let prefix = format!("{name}[.hip_fatbin bundle 0 @{section_offset:#x}] ");
        assert!(
            entry.location.starts_with(&prefix),
            "{} vs {prefix}",
            entry.location
        );
        let offset = entry.offset.unwrap() as usize;
        assert_eq!(
            &data[offset..offset + entry.bytes.len()],
            entry.bytes.as_ref()
        );
        if entry.kind == EntryKind::Host {
            continue;
        }
        assert_eq!(entry.kind, EntryKind::CodeObject, "{id}");
        assert_eq!(
            entry.bytes.as_ref(),
            bundler_unbundle(dir, &fatbin, id).as_slice(),
            "{name} {id}"
        );
    }
    entries
        .into_iter()
        .map(|e| Entry {
            bytes: e.bytes.into_owned().into(),
            ..e
        })
        .collect()
}

#[test]
fn fat_binaries_match_clang_offload_bundler() {
    let Some(b) = built() else { return };
    for file in b
        .linked
        .iter()
        .chain([&b.object, &fixture("host/vector_add_host")])
    {
        let entries = check_fatbin(&b.dir, file);
        let targets: BTreeSet<&str> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::CodeObject)
            .map(|e| e.target_id.as_str())
            .collect();
        assert!(
            targets.contains("gfx90a") && targets.contains("gfx908"),
            "{file:?}: {targets:?}"
        );
        assert_eq!(
            entries.iter().filter(|e| e.kind == EntryKind::Host).count(),
            1
        );
    }
}

#[test]
fn rdc_objects_report_device_bitcode_sections() {
    let Some(b) = built() else { return };
    let data = std::fs::read(&b.rdc_object).unwrap();
    let bundle_sections: Vec<(String, u64)> = readelf_sections(&b.rdc_object)
        .into_values()
        .filter(|(n, _)| n.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
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
    for file in b
        .linked
        .iter()
        .chain([&b.object, &fixture("host/vector_add_host")])
    {
        let data = std::fs::read(file).unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let map = kernel_handles(&data, name).unwrap();
        assert!(map.errors.is_empty(), "{:?}", map.errors);
        let symbols = readelf_symbols(file);
        let code_objects = check_fatbin(&b.dir, file);
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
    let data = std::fs::read(&b.linked[0]).unwrap();
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
