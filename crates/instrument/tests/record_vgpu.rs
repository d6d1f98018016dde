//! Hooks that append records to a trace buffer, on the virtual GPU.
//!
//! - Memory addresses: a record of every lane's address before every FLAT
//!   and GLOBAL instruction of every gfx90a fixture kernel. The kernel
//!   computes what it computed before; each instruction's records cover
//!   exactly the lanes the virtual GPU counts for it; disabled lanes are
//!   left unwritten; and for the element-wise kernels the addresses are
//!   exactly the elements the kernel's source touches, computed here.
//! - Launch values and kernel arguments: records at each kernel's entry of
//!   every argument dword, the workgroup ids, EXEC and (where the kernel
//!   receives the dispatch pointer) the grid size, compared with the launch.
//! - Launch values anywhere: kernel arguments before every memory access and
//!   workgroup ids at every exit, also where the kernel has overwritten the
//!   SGPRs it received them in (the rewritten kernel keeps copies).
//! - A trace that fills up stops writing at its capacity and its cursor
//!   still counts every claim.

mod harness;

use std::collections::BTreeMap;

use harness::{fixture, kernels, launch_geometry, run, run_launch};
use inlay_codeobj::metadata::KernelMetadata;
use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{
    Hook, LaneValue, Plan, RewriteError, Trace, Value, LANE_RECORD, SCALAR_RECORD,
};
use inlay_instrument::{analyse, emit, Analysis};
use inlay_isa::Encoding;
use inlay_vgpu::{Device, Program, Stats};

struct Kernel {
    bytes: Vec<u8>,
    md: KernelMetadata,
    dev: Device,
    original: Program,
}

fn kernel(version: u32, file: &str, name: &str) -> Kernel {
    let bytes = fixture(version, file);
    let co = CodeObject::parse(&bytes).expect("parse");
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == name))
        .expect("metadata")
        .clone();
    let dev = Device::with_threads(2);
    let original = dev.load(&bytes).expect("load");
    Kernel {
        bytes,
        md,
        dev,
        original,
    }
}

impl Kernel {
    fn co(&self) -> CodeObject<'_> {
        CodeObject::parse(&self.bytes).expect("parse")
    }

    fn rewrite(&self, an: &Analysis, plan: &Plan) -> Result<Program, RewriteError> {
        harness::instrument(
            &self.dev,
            &self.co(),
            &self.md.name,
            an,
            &self.original,
            plan,
        )
        .map(|l| l.both)
    }

    /// Runs the instrumented copy on the harness's inputs.
    fn run_instrumented(&self, program: &Program) -> (Vec<Vec<u8>>, Stats, harness::Launch) {
        run_launch(
            &self.dev,
            program,
            &emit::instrumented_name(&self.md.name),
            &self.md,
        )
    }
}

struct LaneRecord {
    id: u32,
    exec: u64,
    values: Vec<u64>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn lane_records(bytes: &[u8], used: usize) -> Vec<LaneRecord> {
    bytes[..used]
        .chunks_exact(LANE_RECORD as usize)
        .map(|r| LaneRecord {
            id: u32_at(r, 0),
            exec: u64_at(r, 8),
            values: (0..64).map(|l| u64_at(r, 16 + 8 * l)).collect(),
        })
        .collect()
}

/// A trace of `capacity` bytes, its cursor at byte 0 of `counters`.
fn trace(dev: &Device, capacity: u32) -> (Trace, u64, u64) {
    let counters = dev.upload(&[0u8; 64]).expect("counters");
    let records = dev.upload(&vec![0u8; capacity as usize]).expect("records");
    (
        Trace {
            cursor: 0,
            records,
            capacity,
        },
        counters,
        records,
    )
}

/// The FLAT and GLOBAL instructions of a lifted program.
fn access_sites(prog: &inlay_instrument::lift::Program) -> Vec<usize> {
    (0..prog.insts.len())
        .filter(|&i| {
            matches!(
                prog.insts[i].inst.encoding(),
                Encoding::Global | Encoding::Flat
            )
        })
        .collect()
}

/// Wave executions of `sites` in a native run of `program`.
fn executions(
    stats: &Stats,
    program: &Program,
    prog: &inlay_instrument::lift::Program,
    sites: &[usize],
) -> u64 {
    let per_offset = stats.per_offset(program);
    sites
        .iter()
        .map(|&i| per_offset.get(&prog.insts[i].addr).copied().unwrap_or(0))
        .sum()
}

/// Hooks recording every lane's address before each of `sites`, with the
/// instruction's id plus one as the record id.
fn address_plan(counters: u64, trace: Trace, sites: &[usize], dead_only: bool) -> Plan {
    Plan {
        counters,
        hooks: sites
            .iter()
            .map(|&i| {
                let hook = Hook::RecordLanes {
                    trace,
                    id: i as u32 + 1,
                    value: LaneValue::Address,
                };
                (i, hook)
            })
            .collect(),
        dead_registers_only: dead_only,
        all_branches_long: false,
        ..Plan::default()
    }
}

/// Lanes the virtual GPU counts per instruction offset.
fn native_lanes(stats: &Stats, program: &Program) -> BTreeMap<u64, u64> {
    stats
        .per_pc_lanes
        .iter()
        .map(|(&a, &c)| (a - program.load_base_of(a).unwrap_or(0), c))
        .collect()
}

/// (global buffer index among the arguments, element size).
type Access = (usize, u64);

/// Buffers (by argument index among the global buffers) and element size
/// each FLAT/GLOBAL access of an element-wise fixture kernel touches, one
/// entry per access of element i, for i < n (64 in the harness's launch).
const ELEMENTWISE: [(&str, &str, &[Access]); 3] = [
    ("vector_add", "vector_add", &[(0, 4), (1, 4), (2, 4)]),
    ("daxpy", "daxpy", &[(0, 8), (1, 8), (1, 8)]),
    ("daxpy", "dnorm_fma", &[(0, 8), (1, 8), (2, 8)]),
];

fn check_addresses(version: u32, file: &str, name: &str, dead_only: bool) {
    let what = format!("{file} {name} v{version} (dead registers only: {dead_only})");
    let k = kernel(version, file, name);
    let (want, native) = run(&k.dev, &k.original, name, &k.md);
    let an = analyse(&k.co(), name).expect("analyse");
    let sites = access_sites(&an.program);
    let executions = executions(&native, &k.original, &an.program, &sites);
    let capacity = (executions as u32 + 1) * LANE_RECORD;
    let (t, counters, records) = trace(&k.dev, capacity);
    let plan = address_plan(counters, t, &sites, dead_only);
    let program = k
        .rewrite(&an, &plan)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (got, _, launch) = k.run_instrumented(&program);
    assert!(want == got, "{what}: instrumented output differs");

    let used = k.dev.download_u64(counters, 1).expect("cursor")[0] as usize;
    assert!(
        used <= capacity as usize,
        "{what}: more claimed than executed"
    );
    let mut bytes = vec![0u8; capacity as usize];
    k.dev.read(records, &mut bytes).expect("records");
    let recs = lane_records(&bytes, used);
    // Each instruction's records cover the lanes the virtual GPU counts.
    let mut lanes: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &recs {
        assert!(
            r.id >= 1 && sites.contains(&(r.id as usize - 1)),
            "{what}: record id {}",
            r.id
        );
        assert!(
            r.exec != 0,
            "{what}: a record of a wave with no lane enabled"
        );
        let addr = an.program.insts[r.id as usize - 1].addr;
        *lanes.entry(addr).or_default() += u64::from(r.exec.count_ones());
        for (l, &v) in r.values.iter().enumerate() {
            if r.exec >> l & 1 == 0 {
                assert_eq!(v, 0, "{what}: disabled lane {l} written at {addr:#x}");
            }
        }
    }
    let want_lanes: BTreeMap<u64, u64> = native_lanes(&native, &k.original)
        .into_iter()
        .filter(|(a, c)| *c > 0 && sites.iter().any(|&i| an.program.insts[i].addr == *a))
        .collect();
    assert_eq!(lanes, want_lanes, "{what}: lanes recorded per instruction");

    // Element-wise kernels: exactly the addresses of elements 0..64.
    if let Some((_, _, accesses)) = ELEMENTWISE
        .iter()
        .find(|(f, n, _)| *f == file && *n == name)
    {
        let mut want: Vec<u64> = accesses
            .iter()
            .flat_map(|&(b, size)| (0..64).map(move |i| (b, size, i)))
            .map(|(b, size, i)| launch.buffers[b] + size * i)
            .collect();
        let mut got: Vec<u64> = recs
            .iter()
            .flat_map(|r| {
                (0..64)
                    .filter(|l| r.exec >> l & 1 != 0)
                    .map(|l| r.values[l])
            })
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "{what}: addresses");
    }
}

#[test]
fn memory_addresses_of_every_flat_and_global_access() {
    for version in [4, 5] {
        for (file, name) in kernels(version) {
            check_addresses(version, &file, &name, false);
            check_addresses(version, &file, &name, true);
        }
    }
}

/// Waves of a launch as (workgroup x id, lanes enabled at entry).
fn waves(grid: [u32; 3], wg: [u32; 3]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for z in 0..grid[2].div_ceil(wg[2]) {
        for y in 0..grid[1].div_ceil(wg[1]) {
            for x in 0..grid[0].div_ceil(wg[0]) {
                let items: u32 = [(x, 0), (y, 1), (z, 2)]
                    .iter()
                    .map(|&(g, d)| wg[d].min(grid[d] - g * wg[d]))
                    .product();
                for w in 0..items.div_ceil(64) {
                    let n = (items - 64 * w).min(64);
                    let exec = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
                    out.push((x, exec));
                }
            }
        }
    }
    out
}

fn check_launch_values(version: u32, file: &str, name: &str) {
    let what = format!("{file} {name} v{version}");
    let k = kernel(version, file, name);
    let co = k.co();
    let an = analyse(&co, name).expect("analyse");
    let sgprs = co.kernel(name).expect("kernel").decoded.initial_sgprs();
    let entry = an
        .program
        .inst_at(0, an.program.functions[0].entry)
        .expect("entry");
    // Ids: 1 EXEC, 2 workgroup x id, 3 grid size x, 100 + k argument dword k.
    let explicit: Vec<_> =
        k.md.args
            .iter()
            .filter(|a| matches!(a.value_kind.as_str(), "global_buffer" | "by_value"))
            .collect();
    let dwords: std::collections::BTreeSet<u32> = explicit
        .iter()
        .flat_map(|a| (a.offset / 4..(a.offset + a.size).div_ceil(4)).map(|d| d as u32))
        .collect();
    let mut values = vec![(1, Value::Exec)];
    if sgprs.workgroup_id[0].is_some() {
        values.push((2, Value::WorkgroupId(0)));
    }
    values.extend(dwords.iter().map(|&d| (100 + d, Value::KernArg(4 * d))));
    let packet = sgprs.dispatch_ptr.is_some();
    if packet {
        values.push((3, Value::Packet(12)));
    }
    let (grid, wg) = launch_geometry(&k.md);
    let waves = waves(grid, wg);
    let capacity = (waves.len() * values.len()) as u32 * SCALAR_RECORD;
    let (t, counters, records) = trace(&k.dev, capacity);
    let hooks: Vec<(usize, Hook)> = values
        .iter()
        .map(|&(id, value)| {
            (
                entry,
                Hook::Record {
                    trace: t,
                    id,
                    value,
                },
            )
        })
        .collect();
    let plan = Plan {
        counters,
        hooks,
        dead_registers_only: false,
        all_branches_long: false,
        ..Plan::default()
    };
    if !packet {
        let mut p = plan.clone();
        p.hooks.push((
            entry,
            Hook::Record {
                trace: t,
                id: 3,
                value: Value::Packet(12),
            },
        ));
        assert!(
            matches!(k.rewrite(&an, &p), Err(RewriteError::NotReceived(_))),
            "{what}: a packet value without the dispatch pointer must be refused"
        );
    }
    let (want, _) = run(&k.dev, &k.original, name, &k.md);
    let program = k
        .rewrite(&an, &plan)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (got, _, launch) = k.run_instrumented(&program);
    assert!(want == got, "{what}: instrumented output differs");
    let used = k.dev.download_u64(counters, 1).expect("cursor")[0];
    assert_eq!(
        used,
        u64::from(capacity),
        "{what}: one record per value per wave"
    );
    let mut bytes = vec![0u8; capacity as usize];
    k.dev.read(records, &mut bytes).expect("records");
    let mut by_id: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for r in bytes.chunks_exact(SCALAR_RECORD as usize) {
        assert_eq!(u32_at(r, 4), 0, "{what}: record padding");
        by_id.entry(u32_at(r, 0)).or_default().push(u64_at(r, 8));
    }
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v
    };
    assert_eq!(
        by_id.remove(&1).map(sorted),
        Some(sorted(waves.iter().map(|w| w.1).collect())),
        "{what}: EXEC at entry"
    );
    if sgprs.workgroup_id[0].is_some() {
        assert_eq!(
            by_id.remove(&2).map(sorted),
            Some(sorted(waves.iter().map(|w| u64::from(w.0)).collect())),
            "{what}: workgroup x ids"
        );
    }
    if packet {
        assert_eq!(
            by_id.remove(&3),
            Some(vec![u64::from(grid[0]); waves.len()]),
            "{what}: grid size x from the dispatch packet"
        );
    }
    for d in dwords {
        let at = 4 * d as usize;
        let want = u64::from(u32_at(&launch.args, at));
        assert_eq!(
            by_id.remove(&(100 + d)),
            Some(vec![want; waves.len()]),
            "{what}: argument dword {d}"
        );
    }
    assert!(
        by_id.is_empty(),
        "{what}: records with unknown ids {by_id:?}"
    );
}

#[test]
fn launch_values_and_arguments_at_entry() {
    for version in [4, 5] {
        for (file, name) in kernels(version) {
            check_launch_values(version, &file, &name);
        }
    }
}

/// Launch values where the kernel may have overwritten their SGPRs: the
/// first argument dword before every FLAT/GLOBAL access (once per wave
/// execution, as the virtual GPU counts them) and the workgroup x id at
/// every `s_endpgm` (once per wave). Returns whether the kernel overwrites
/// the SGPRs its kernel-argument pointer arrives in (so copies were needed).
fn check_launch_values_anywhere(version: u32, file: &str, name: &str, dead_only: bool) -> bool {
    let what = format!("{file} {name} v{version} (dead registers only: {dead_only})");
    let k = kernel(version, file, name);
    let co = k.co();
    let an = analyse(&co, name).expect("analyse");
    let sgprs = co.kernel(name).expect("kernel").decoded.initial_sgprs();
    let Some(kernarg) = sgprs.kernarg_segment_ptr else {
        return false;
    };
    let Some(first) =
        k.md.args
            .iter()
            .find(|a| !a.value_kind.starts_with("hidden_"))
    else {
        return false;
    };
    let dword = (first.offset / 4) as u32;
    let prog = &an.program;
    let overwritten = prog.insts.iter().any(|ins| {
        inlay_isa::info(&ins.inst).used_registers().iter().any(|u| {
            u.access.writes()
                && u.register.file == inlay_isa::RegFile::Sgpr
                && (u.register.first..u.register.first + u16::from(u.register.count))
                    .any(|n| n == kernarg || n == kernarg + 1)
        })
    });
    let (want, native) = run(&k.dev, &k.original, name, &k.md);
    let accesses = access_sites(prog);
    let exits: Vec<usize> = (0..prog.insts.len())
        .filter(|&i| prog.insts[i].inst.opcode().map(|o| o.name()) == Some("s_endpgm"))
        .collect();
    let executions = |sites: &[usize]| executions(&native, &k.original, prog, sites);
    let (grid, wg) = launch_geometry(&k.md);
    let waves = waves(grid, wg);
    let records = executions(&accesses) + waves.len() as u64;
    let capacity = (records as u32 + 1) * SCALAR_RECORD;
    let (t, counters, buf) = trace(&k.dev, capacity);
    let mut hooks: Vec<(usize, Hook)> = accesses
        .iter()
        .map(|&i| {
            (
                i,
                Hook::Record {
                    trace: t,
                    id: 1,
                    value: Value::KernArg(4 * dword),
                },
            )
        })
        .collect();
    if sgprs.workgroup_id[0].is_some() {
        hooks.extend(exits.iter().map(|&i| {
            (
                i,
                Hook::Record {
                    trace: t,
                    id: 2,
                    value: Value::WorkgroupId(0),
                },
            )
        }));
    }
    let plan = Plan {
        counters,
        hooks,
        dead_registers_only: dead_only,
        all_branches_long: false,
        ..Plan::default()
    };
    let program = match k.rewrite(&an, &plan) {
        Ok(p) => p,
        // Without reserved SGPRs there is nowhere to keep a copy (of the
        // argument pointer or of a workgroup id the kernel overwrites).
        Err(RewriteError::Overwritten { .. }) if dead_only => return overwritten,
        Err(e) => panic!("{what}: {e}"),
    };
    let (got, _, launch) = k.run_instrumented(&program);
    assert!(want == got, "{what}: instrumented output differs");
    let used = k.dev.download_u64(counters, 1).expect("cursor")[0];
    let with_ids = if sgprs.workgroup_id[0].is_some() {
        waves.len() as u64
    } else {
        0
    };
    assert_eq!(
        used,
        (executions(&accesses) + with_ids) * u64::from(SCALAR_RECORD),
        "{what}: one record per wave execution"
    );
    let mut bytes = vec![0u8; used as usize];
    k.dev.read(buf, &mut bytes).expect("records");
    let want_arg = u64::from(u32_at(&launch.args, 4 * dword as usize));
    let mut ids = Vec::new();
    for r in bytes.chunks_exact(SCALAR_RECORD as usize) {
        match u32_at(r, 0) {
            1 => assert_eq!(u64_at(r, 8), want_arg, "{what}: argument dword {dword}"),
            2 => ids.push(u64_at(r, 8)),
            id => panic!("{what}: record id {id}"),
        }
    }
    if sgprs.workgroup_id[0].is_some() {
        let mut want_ids: Vec<u64> = waves.iter().map(|w| u64::from(w.0)).collect();
        want_ids.sort_unstable();
        ids.sort_unstable();
        assert_eq!(ids, want_ids, "{what}: workgroup x ids at exit");
    }
    overwritten
}

#[test]
fn launch_values_anywhere_in_the_kernel() {
    let mut copies_needed = 0;
    for version in [4, 5] {
        for (file, name) in kernels(version) {
            copies_needed +=
                usize::from(check_launch_values_anywhere(version, &file, &name, false));
            check_launch_values_anywhere(version, &file, &name, true);
        }
    }
    assert!(
        copies_needed > 0,
        "no fixture kernel overwrites its kernel-argument pointer"
    );
}

/// A trace with room for two records: the first two are written, the
/// bytes after its capacity stay as they were, the cursor counts all claims.
#[test]
fn a_full_trace_writes_nothing_past_its_capacity() {
    let k = kernel(5, "vector_add", "vector_add");
    let an = analyse(&k.co(), "vector_add").expect("analyse");
    let (_, native) = run(&k.dev, &k.original, "vector_add", &k.md);
    let sites = access_sites(&an.program);
    let capacity = 2 * LANE_RECORD;
    let guard = 4096usize;
    let counters = k.dev.upload(&[0u8; 64]).expect("counters");
    let mut init = vec![0u8; capacity as usize];
    init.extend(std::iter::repeat_n(0xAB, guard));
    let records = k.dev.upload(&init).expect("records");
    let t = Trace {
        cursor: 0,
        records,
        capacity,
    };
    let plan = address_plan(counters, t, &sites, false);
    let program = k.rewrite(&an, &plan).expect("rewrite");
    k.run_instrumented(&program);
    // One wave of the launch (n = 64) reaches vector_add's three accesses,
    // with every lane enabled; the others branch around them.
    let claims = executions(&native, &k.original, &an.program, &sites);
    assert!(claims > 2, "the test needs more records than fit");
    let cursor = k.dev.download_u64(counters, 1).expect("cursor")[0];
    assert_eq!(cursor, claims * u64::from(LANE_RECORD));
    let mut after = vec![0u8; init.len()];
    k.dev.read(records, &mut after).expect("records");
    assert!(
        after[capacity as usize..].iter().all(|&b| b == 0xAB),
        "bytes past the capacity changed"
    );
    for r in lane_records(&after, capacity as usize) {
        assert!(sites.contains(&(r.id as usize - 1)) && r.exec != 0);
    }
}

/// An address hook on an instruction that has none is refused.
#[test]
fn an_address_of_a_non_memory_instruction_is_refused() {
    let k = kernel(5, "vector_add", "vector_add");
    let an = analyse(&k.co(), "vector_add").expect("analyse");
    let (t, counters, _) = trace(&k.dev, LANE_RECORD);
    let plan = Plan {
        counters,
        hooks: vec![(
            0,
            Hook::RecordLanes {
                trace: t,
                id: 1,
                value: LaneValue::Address,
            },
        )],
        dead_registers_only: false,
        all_branches_long: false,
        ..Plan::default()
    };
    assert!(matches!(
        k.rewrite(&an, &plan),
        Err(RewriteError::NoAddress { .. })
    ));
}

/// Assembles `body` with llvm-mc-19 into the kernel of the vector_add
/// fixture (v5; its kernel-argument pointer arrives in s[4:5]).
fn vector_add_with_body(body: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("inlay-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("body.s");
    std::fs::write(&src, body).expect("write");
    let out = std::process::Command::new("llvm-mc-19")
        .args([
            "-triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "--show-encoding",
        ])
        .arg(&src)
        .output()
        .expect("llvm-mc-19 (scripts/install-deps installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code: Vec<u8> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("encoding: [").nth(1))
        .flat_map(|e| {
            e.trim_end_matches(']')
                .split(',')
                .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).expect("hex"))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let text = co.section(".text").expect(".text");
    let entry = co
        .kernel("vector_add")
        .and_then(|k| k.entry_address)
        .expect("entry");
    let at = (entry - text.addr + text.offset) as usize;
    assert!(
        at + code.len() <= (text.offset + text.size) as usize,
        "body too long"
    );
    drop(co);
    bytes[at..at + code.len()].copy_from_slice(&code);
    bytes
}

/// Addresses of every operand form: a GLOBAL base in VCC with a negative
/// offset, in an SGPR pair with an offset too large for an inline
/// constant, a 64-bit VGPR address with a negative offset, and FLAT.
#[test]
fn addresses_of_every_operand_form() {
    let body = "s_load_dwordx2 s[8:9], s[4:5], 0x10\n\
                s_waitcnt lgkmcnt(0)\n\
                v_lshlrev_b32 v1, 2, v0\n\
                s_add_u32 vcc_lo, s8, 64\n\
                s_addc_u32 vcc_hi, s9, 0\n\
                global_store_dword v1, v0, vcc offset:-16\n\
                global_store_dword v1, v0, s[8:9] offset:2000\n\
                v_mov_b32 v2, s8\n\
                v_mov_b32 v3, s9\n\
                v_add_co_u32 v2, vcc, v2, v1\n\
                v_addc_co_u32 v3, vcc, 0, v3, vcc\n\
                v_add_co_u32 v2, vcc, 64, v2\n\
                v_addc_co_u32 v3, vcc, 0, v3, vcc\n\
                flat_store_dword v[2:3], v0 offset:100\n\
                global_load_dword v4, v[2:3], off offset:-4\n\
                s_waitcnt vmcnt(0)\n\
                global_store_dword v1, v4, s[8:9] offset:3000\n\
                s_endpgm\n";
    let bytes = vector_add_with_body(body);
    let co = CodeObject::parse(&bytes).expect("parse");
    let dev = Device::with_threads(1);
    let original = dev.load(&bytes).expect("load");
    let an = analyse(&co, "vector_add").expect("analyse");
    let sites = access_sites(&an.program);
    assert_eq!(sites.len(), 5);
    let run_on = |program: &Program, kernel: &str| -> (Vec<u8>, u64) {
        let c = dev.upload(&[0u8; 4096]).expect("c");
        let mut args = vec![0u8; 28];
        args[16..24].copy_from_slice(&c.to_le_bytes());
        dev.dispatch(program, kernel, [64, 1, 1], [64, 1, 1], &args)
            .unwrap_or_else(|f| panic!("{kernel}: {f}"));
        let mut out = vec![0u8; 4096];
        dev.read(c, &mut out).expect("read");
        (out, c)
    };
    let (want, _) = run_on(&original, "vector_add");
    let (t, counters, records) = trace(&dev, 8 * LANE_RECORD);
    let plan = address_plan(counters, t, &sites, false);
    let both = harness::instrument(&dev, &co, "vector_add", &an, &original, &plan)
        .expect("rewrite")
        .both;
    let (got, c) = run_on(&both, &emit::instrumented_name("vector_add"));
    assert!(want == got, "instrumented output differs");
    let used = dev.download_u64(counters, 1).expect("cursor")[0] as usize;
    assert_eq!(used, 5 * LANE_RECORD as usize);
    let mut buf = vec![0u8; used];
    dev.read(records, &mut buf).expect("records");
    // Per access: the address of lane l's element.
    let want_at: [&dyn Fn(u64) -> u64; 5] = [
        &|l| c + 64 - 16 + 4 * l,
        &|l| c + 2000 + 4 * l,
        &|l| c + 4 * l + 64 + 100,
        &|l| c + 4 * l + 64 - 4,
        &|l| c + 3000 + 4 * l,
    ];
    for r in lane_records(&buf, used) {
        assert_eq!(r.exec, u64::MAX);
        let k = sites
            .iter()
            .position(|&i| i + 1 == r.id as usize)
            .expect("a site's id");
        for (l, &a) in r.values.iter().enumerate() {
            assert_eq!(a, want_at[k](l as u64), "access {k} lane {l}");
        }
    }
}
