//! Liveness on hand-written gfx90a code whose answers are worked out by hand
//! (in the comments next to each marker). The code is assembled with
//! llvm-mc-19 into a relocatable object (calls through
//! `R_AMDGPU_REL32_LO/HI` relocations) and linked with ld.lld-19 into a
//! shared code object (calls through literal offsets); both must give the
//! same answers. Markers are `s_nop N` (no register effects), so the state
//! before a marker is the state at that point of the program.

use std::process::Command;

use inlay_codeobj::CodeObject;
use inlay_instrument::{analyse, Analysis, Callee, Live};

/// Assembles a kernel `k` (and functions before it) and returns the
/// relocatable object and the linked code object; None if the tools are
/// missing (and allowed to be).
fn build(funcs: &str, kernel: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let src = format!(
        ".amdgcn_target \"amdgcn-amd-amdhsa--gfx90a\"\n\
         .amdhsa_code_object_version 5\n\
         .text\n\
         {funcs}\n\
         .globl k\n.protected k\n.p2align 8\n.type k,@function\nk:\n\
         {kernel}\n\
         .rodata\n.p2align 6\n\
         .amdhsa_kernel k\n\
           .amdhsa_next_free_vgpr 32\n\
           .amdhsa_next_free_sgpr 32\n\
           .amdhsa_accum_offset 32\n\
         .end_amdhsa_kernel\n"
    );
    let dir = std::env::temp_dir().join(format!(
        "inlay-instrument-liveness-{}-{:x}",
        std::process::id(),
        src.len() ^ (kernel.as_ptr() as usize)
    ));
    std::fs::create_dir_all(&dir).ok()?;
    let (s, o, so) = (dir.join("t.s"), dir.join("t.o"), dir.join("t.so"));
    std::fs::write(&s, &src).ok()?;
    let run = |cmd: &str, args: &[&std::ffi::OsStr]| -> Option<()> {
        match Command::new(cmd).args(args).output() {
            Ok(out) => {
                assert!(
                    out.status.success(),
                    "{cmd} failed:\n{}\n{src}",
                    String::from_utf8_lossy(&out.stderr)
                );
                Some(())
            }
            Err(e) => {
                if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
                    panic!("{cmd} is required: {e}");
                }
                eprintln!("note: skipping, {cmd} not found");
                None
            }
        }
    };
    run(
        "llvm-mc-19",
        &[
            "-triple=amdgcn-amd-amdhsa".as_ref(),
            "-mcpu=gfx90a".as_ref(),
            "-filetype=obj".as_ref(),
            s.as_os_str(),
            "-o".as_ref(),
            o.as_os_str(),
        ],
    )?;
    run(
        "ld.lld-19",
        &[
            "-shared".as_ref(),
            o.as_os_str(),
            "-o".as_ref(),
            so.as_os_str(),
        ],
    )?;
    let r = (std::fs::read(&o).ok()?, std::fs::read(&so).ok()?);
    let _ = std::fs::remove_dir_all(&dir);
    Some(r)
}

/// Runs `check` on the analysis of both the relocatable and the linked object.
fn with_both(funcs: &str, kernel: &str, check: impl Fn(&Analysis, &str)) {
    let Some((o, so)) = build(funcs, kernel) else {
        return;
    };
    for (what, bytes) in [("relocatable", &o), ("linked", &so)] {
        let co = CodeObject::parse(bytes).unwrap();
        let a = analyse(&co, "k").unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&a, what);
    }
}

/// State at marker `s_nop n`.
fn at(a: &Analysis, n: u32) -> Live {
    let found: Vec<usize> = a
        .program
        .insts
        .iter()
        .enumerate()
        .filter(|(_, i)| i.inst.mnemonic() == "s_nop" && i.inst.words()[0] & 0xFFFF == n)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(found.len(), 1, "marker s_nop {n}");
    a.live_before(found[0])
}

/// Whether a register, named as in assembly, is in the set.
fn has(set: &inlay_instrument::RegSet, name: &str) -> bool {
    use inlay_instrument::regs::*;
    match name {
        "scc" => set.contains(SCC),
        "vcc" => set.any_in(VCC, 2),
        "exec" => set.any_in(EXEC, 2),
        "m0" => set.contains(M0),
        _ => {
            let n: u16 = name[1..].parse().unwrap();
            match &name[..1] {
                "s" => set.has_sgpr(n),
                "v" => set.has_vgpr(n),
                "a" => set.has_agpr(n),
                _ => panic!("{name}"),
            }
        }
    }
}

/// Asserts which registers are live (in any lane) and which are dead.
fn expect(l: &Live, live: &str, dead: &str, ctx: &str) {
    let any = l.any();
    for r in live.split_whitespace() {
        assert!(has(&any, r), "{ctx}: {r} should be live; state {l:?}");
    }
    for r in dead.split_whitespace() {
        assert!(!has(&any, r), "{ctx}: {r} should be dead; state {l:?}");
    }
}

#[test]
fn straight_line() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        s_nop 1
        v_mov_b32 v1, 0
        s_nop 2
        v_add_u32 v2, v0, v1
        s_nop 3
        s_waitcnt lgkmcnt(0)
        global_store_dword v1, v2, s[0:1]
        s_nop 4
        s_endpgm";
    with_both("", k, |a, w| {
        // Entry: the kernarg pointer, the work-item id, EXEC; v1 is written
        // before any read.
        let entry = a.live_at_entry();
        expect(&entry, "s4 s5 v0 exec", "s0 s1 v1 v2 scc vcc m0", w);
        // After the load: its result (read by the store), not its address.
        expect(&at(a, 1), "s0 s1 v0 exec", "s4 s5 v1 v2 scc vcc m0", w);
        // Before v_add: s[0:1] (store), v0 and v1 (add), not v2 (written by it).
        expect(&at(a, 2), "s0 s1 v0 v1 exec", "s4 s5 v2 scc vcc", w);
        // Before the store: its operands only.
        expect(&at(a, 3), "s0 s1 v1 v2 exec", "s4 s5 v0 scc vcc m0", w);
        // Before s_endpgm: nothing.
        expect(&at(a, 4), "", "s0 s1 v1 v2 exec", w);
        // The insertion query agrees: v0 and s[4:5] are free after their
        // last use; nothing above the descriptor's 32 VGPRs is offered.
        let free = a.free_before(a.program.insts.len() - 3);
        assert!(free.vgprs.contains(&0) && !free.vgprs.contains(&1) && !free.vgprs.contains(&2));
        assert!(free.vgprs.contains(&31) && !free.vgprs.contains(&32), "{w}");
        assert!(free.sgprs.contains(&4) && !free.sgprs.contains(&0), "{w}");
        assert!(free.exec_live && !free.scc_live && !free.vcc_live && !free.m0_live);
        assert_eq!(a.resources.vgprs_allocated, 32, "{w}");
        assert_eq!(a.resources.vgprs_used, 3, "{w}");
    });
}

/// LLVM's if/else shape. Lanes of the `else` side are switched off while
/// the `then` side runs and vice versa; values they need stay live there.
#[test]
fn if_else_under_exec_masking() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        v_mov_b32 v1, 1
        s_nop 5
        v_mov_b32 v2, 3
        v_cmp_gt_u32 vcc, 8, v0
        s_and_saveexec_b64 s[6:7], vcc
        s_xor_b64 s[6:7], exec, s[6:7]
        s_cbranch_execz .Lelse
        s_nop 1
        v_mov_b32 v1, 2
        v_mov_b32 v3, 5
        s_nop 2
        v_add_u32 v1, v1, v3
    .Lelse:
        s_or_saveexec_b64 s[6:7], s[6:7]
        s_xor_b64 exec, exec, s[6:7]
        s_cbranch_execz .Lend
        s_nop 3
        v_mov_b32 v2, 4
    .Lend:
        s_or_b64 exec, exec, s[6:7]
        s_nop 4
        v_add_u32 v4, v1, v2
        s_waitcnt lgkmcnt(0)
        global_store_dword v0, v4, s[0:1]
        s_endpgm";
    with_both("", k, |a, w| {
        // Then side, before `v_mov_b32 v1, 2`: the else lanes still need v1 = 1
        // (a plain dataflow would call it dead here), every lane needs v2
        // (3 in then lanes, overwritten later only in else lanes); v3 is a
        // then-side temporary, written before read.
        let m1 = at(a, 1);
        expect(&m1, "v1 v2 v0 s0 s1 s6 s7 exec", "v3 v4 vcc scc", w);
        assert!(
            !has(&m1.active, "v1"),
            "{w}: v1 is dead in the then lanes: {m1:?}"
        );
        assert!(
            has(&m1.inactive, "v1"),
            "{w}: v1 lives in the else lanes: {m1:?}"
        );
        let free = a.free_before(index_of(a, 1));
        assert!(
            !free.vgprs.contains(&1) && free.vgprs_active_lanes.contains(&1),
            "{w}"
        );
        assert!(free.vgprs.contains(&3) && !free.vgprs.contains(&2), "{w}");
        // Then side, before the add: v1 and v3 read now.
        expect(&at(a, 2), "v1 v2 v3 v0 s6 s7 exec", "v4 vcc", w);
        // Else side, before `v_mov_b32 v2, 4`: then lanes need v2 = 3; all
        // lanes need v1; v3 is never read again.
        let m3 = at(a, 3);
        expect(&m3, "v1 v2 v0 s0 s1 s6 s7 exec", "v3 v4 vcc scc", w);
        assert!(
            !has(&m3.active, "v2") && has(&m3.inactive, "v2"),
            "{w}: {m3:?}"
        );
        // After the join: plain.
        let m4 = at(a, 4);
        expect(&m4, "v0 v1 v2 s0 s1 exec", "v3 v4 s6 s7 vcc scc", w);
        assert!(m4.inactive.difference(&m4.active).is_empty(), "{w}: {m4:?}");
        // Prologue (no EXEC write yet): lanes off at launch hold nothing, so
        // v2 is dead before its first write although it is needed later in
        // lanes that the branches switch off and on again.
        let m5 = at(a, 5);
        expect(&m5, "v0 v1 s0 s1 exec", "v2 v3 v4 s6 s7 vcc", w);
        assert!(m5.inactive.is_empty(), "{w}: {m5:?}");
        // Kernel entry: v1 and v2 (written first) are dead there.
        expect(
            &a.live_at_entry(),
            "v0 s4 s5 exec",
            "v1 v2 v3 v4 s6 s7 vcc",
            w,
        );
    });
}

fn index_of(a: &Analysis, n: u32) -> usize {
    a.program
        .insts
        .iter()
        .position(|i| i.inst.mnemonic() == "s_nop" && i.inst.words()[0] & 0xFFFF == n)
        .unwrap()
}

#[test]
fn scalar_loop() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        s_load_dword s3, s[4:5], 0x8
        s_mov_b32 s2, 0
        v_mov_b32 v1, 0
        v_lshlrev_b32 v2, 2, v0
    .Lloop:
        s_nop 1
        v_add_u32 v1, v1, v0
        s_add_u32 s2, s2, 1
        s_cmp_lt_u32 s2, s3
        s_nop 2
        s_cbranch_scc1 .Lloop
        s_nop 3
        s_waitcnt lgkmcnt(0)
        global_store_dword v2, v1, s[0:1]
        s_endpgm";
    with_both("", k, |a, w| {
        // Loop header: the counter, the bound, the accumulator and v0 are
        // carried round the back edge; s[0:1] and v2 are needed after.
        expect(
            &at(a, 1),
            "s0 s1 s2 s3 v0 v1 v2 exec",
            "s4 s5 scc vcc v3",
            w,
        );
        // SCC set by s_cmp, read by the branch.
        expect(&at(a, 2), "scc s2 s3 v0 v1 v2 s0 s1", "vcc s4", w);
        // After the loop only the store's operands.
        expect(&at(a, 3), "s0 s1 v1 v2 exec", "s2 s3 scc v0", w);
        // The loop is one block with a back edge to itself.
        let h = a.program.insts[index_of(a, 1)].block;
        assert!(a.program.blocks[h].preds.contains(&h), "{w}");
    });
}

/// A loop whose lanes leave at different times: `s_andn2_b64 exec` switches
/// finished lanes off; their counters must stay live until the loop ends.
#[test]
fn exec_masked_loop() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        v_lshlrev_b32 v2, 2, v0
        v_mov_b32 v1, 0
        s_mov_b64 s[8:9], 0
    .Lloop:
        s_nop 1
        v_add_u32 v1, 1, v1
        v_mov_b32 v3, v1
        v_cmp_ge_u32 vcc, v3, v0
        s_or_b64 s[8:9], vcc, s[8:9]
        s_nop 2
        s_andn2_b64 exec, exec, s[8:9]
        s_cbranch_execnz .Lloop
        s_or_b64 exec, exec, s[8:9]
        s_nop 3
        s_waitcnt lgkmcnt(0)
        global_store_dword v2, v1, s[0:1]
        s_endpgm";
    with_both("", k, |a, w| {
        // Header: v1 is read by the running lanes and needed by the lanes
        // that already left (switched off here); v3 is rewritten before
        // every read; VCC is written before read.
        let m1 = at(a, 1);
        expect(&m1, "v0 v1 v2 s0 s1 s8 s9 exec", "v3 vcc scc", w);
        assert!(
            has(&m1.active, "v1") && has(&m1.inactive, "v1"),
            "{w}: {m1:?}"
        );
        assert!(
            has(&m1.inactive, "v2"),
            "{w}: v2 is needed by every lane after the loop"
        );
        // Before s_andn2: the exit mask is live, vcc dead.
        expect(&at(a, 2), "s8 s9 v0 v1 v2 exec", "vcc v3", w);
        // After the loop: just the store.
        expect(&at(a, 3), "v1 v2 s0 s1 exec", "v0 v3 s8 s9 vcc", w);
    });
}

#[test]
fn scc_and_vcc_across_branches() {
    let k = "
        s_cmp_eq_u32 s2, 0
        v_cmp_eq_u32 vcc, 0, v0
        s_mov_b32 m0, s3
        s_nop 1
        s_cbranch_scc1 .Ltwo
        s_nop 2
        s_cbranch_vccz .Lthree
        s_nop 3
        s_movrels_b32 s5, s4
        s_endpgm
    .Ltwo:
        s_nop 4
        v_cndmask_b32 v1, 0, 1, vcc
        s_endpgm
    .Lthree:
        s_nop 5
        s_cselect_b32 s3, 1, 2
        s_endpgm";
    with_both("", k, |a, w| {
        // s_movrels_b32 s5, s4 reads s[4 + M0]: with M0 unknown, any SGPR
        // from s4 up may be read there, so they are all live on that path.
        expect(&at(a, 1), "scc vcc m0 s4 s5 s101", "s2 s3 v1", w);
        // Fall-through side: SCC read again at .Lthree, VCC by the branch.
        expect(&at(a, 2), "scc vcc m0 s4 s50", "s2 s3", w);
        // Neither is read on the way to the first s_endpgm; M0 is (s_movrels).
        expect(&at(a, 3), "m0 s4 s5 s101", "scc vcc s3", w);
        expect(&at(a, 4), "vcc exec", "scc m0 s4", w);
        expect(&at(a, 5), "scc", "vcc m0 s4 exec", w);
        let free = a.free_before(index_of(a, 4));
        assert!(
            free.vcc_live && !free.scc_live && !free.m0_live,
            "{w}: {free:?}"
        );
        let free = a.free_before(index_of(a, 5));
        assert!(
            !free.vcc_live && free.scc_live && !free.exec_live,
            "{w}: {free:?}"
        );
    });
}

/// A direct call: the callee reads v0 and s10, writes v0 (its result) and
/// v1 (a temporary) and returns through s[30:31].
#[test]
fn direct_call_uses_callee_summary() {
    let f = "
    .p2align 2
    .type f,@function
    f:
        s_nop 6
        v_mov_b32 v1, s10
        v_add_u32 v0, v0, v1
        s_setpc_b64 s[30:31]";
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        v_lshlrev_b32 v2, 2, v0
        v_mov_b32 v5, 9
        s_mov_b32 s10, 3
        s_mov_b32 s11, 4
        s_getpc_b64 s[6:7]
        s_add_u32 s6, s6, f@rel32@lo+4
        s_addc_u32 s7, s7, f@rel32@hi+12
        s_nop 1
        s_swappc_b64 s[30:31], s[6:7]
        s_nop 2
        s_waitcnt lgkmcnt(0)
        global_store_dword v2, v0, s[0:1]
        global_store_dword v2, v5, s[0:1] offset:4
        s_endpgm";
    with_both(f, k, |a, w| {
        assert_eq!(a.program.functions.len(), 2, "{w}");
        assert_eq!(a.program.calls.len(), 1, "{w}");
        assert_eq!(a.program.calls[0].callee, Callee::Direct(1), "{w}");
        assert_eq!(a.program.functions[1].name.as_deref(), Some("f"), "{w}");
        // Before the call: what the callee reads (v0, s10, the return address
        // it jumps to is written by the call itself), the call target, and
        // what lives across it (v2, v5, s[0:1]). The callee's temporary v1,
        // the unused s11 and the return-address pair are dead.
        expect(
            &at(a, 1),
            "v0 s10 s6 s7 v2 v5 s0 s1 exec",
            "v1 s11 s30 s31 scc vcc",
            w,
        );
        // After the call: the result and what the stores read.
        expect(&at(a, 2), "v0 v2 v5 s0 s1 exec", "v1 s10 s6 s7 s30 s31", w);
        // Inside the callee, at its entry: its own reads, the return
        // address, and everything live after its call site.
        expect(
            &at(a, 6),
            "v0 s10 s30 s31 v2 v5 s0 s1 exec",
            "v1 s11 s6 s7 scc",
            w,
        );
    });
}

/// A call through a pointer loaded from memory: unknown callee, so the
/// calling convention decides: argument registers live, callee-saved ones
/// not (unless used after), nothing killed.
#[test]
fn unresolved_call_uses_calling_convention() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        s_load_dwordx2 s[6:7], s[4:5], 0x8
        v_mov_b32 v40, 1
        v_mov_b32 v41, 2
        s_mov_b32 s40, 0
        s_waitcnt lgkmcnt(0)
        s_nop 1
        s_swappc_b64 s[30:31], s[6:7]
        global_store_dword v41, v0, s[0:1]
        s_endpgm";
    with_both("", k, |a, w| {
        assert_eq!(a.program.calls[0].callee, Callee::Unresolved, "{w}");
        // s0..s29 and v0..v31 may be arguments; s32 is the stack pointer.
        // v40 (callee-saved, not used after) and s40 are dead; v41 is
        // live across the call; s[30:31] is written by the call.
        let m = at(a, 1);
        expect(
            &m,
            "s0 s1 s6 s7 s20 s29 s32 v0 v31 v41 exec",
            "v40 s40 s30 s31 v32 scc vcc",
            w,
        );
    });
}

/// `g` tail-calls `f` with `s_setpc_b64` to a computed address: `f` then
/// returns straight to `g`'s caller, so what is live after the call in the
/// kernel is live in `f` too, and `f`'s reads are live before the jump.
#[test]
fn tail_call() {
    let funcs = "
    .p2align 2
    .type f,@function
    f:
        s_nop 6
        v_add_u32 v0, v0, v7
        s_setpc_b64 s[30:31]
    .p2align 2
    .type g,@function
    g:
        v_mov_b32 v7, s12
        s_getpc_b64 s[16:17]
        s_add_u32 s16, s16, f@rel32@lo+4
        s_addc_u32 s17, s17, f@rel32@hi+12
        s_nop 7
        s_setpc_b64 s[16:17]";
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        v_lshlrev_b32 v2, 2, v0
        v_mov_b32 v9, 1
        s_mov_b32 s12, 5
        s_getpc_b64 s[6:7]
        s_add_u32 s6, s6, g@rel32@lo+4
        s_addc_u32 s7, s7, g@rel32@hi+12
        s_nop 1
        s_swappc_b64 s[30:31], s[6:7]
        s_nop 2
        s_waitcnt lgkmcnt(0)
        global_store_dword v2, v0, s[0:1]
        global_store_dword v2, v9, s[0:1] offset:4
        s_endpgm";
    with_both(funcs, k, |a, w| {
        let p = &a.program;
        assert_eq!(p.functions.len(), 3, "{w}");
        let name = |f: usize| p.functions[f].name.clone().unwrap_or_default();
        let tail: Vec<_> = p.calls.iter().filter(|c| c.tail).collect();
        assert_eq!(tail.len(), 1, "{w}");
        let Callee::Direct(t) = tail[0].callee else {
            panic!("{w}: {:?}", tail[0].callee)
        };
        assert_eq!(name(t), "f", "{w}");
        assert_eq!(name(tail[0].caller), "g", "{w}");
        // Before the jump in g: the jump target, f's reads, the return
        // address f will use, and what the kernel needs after its call.
        expect(
            &at(a, 7),
            "s16 s17 v0 v7 s30 s31 v2 v9 s0 s1 exec",
            "s12 s6 s7 scc",
            w,
        );
        // At f's entry: the same less the jump target.
        expect(
            &at(a, 6),
            "v0 v7 s30 s31 v2 v9 s0 s1 exec",
            "s16 s17 s12 s6 s7",
            w,
        );
        // In the kernel before the call: g reads s12, f reads v0; v7 is
        // written by g before f reads it.
        expect(
            &at(a, 1),
            "s12 v0 s6 s7 v2 v9 s0 s1 exec",
            "v7 s16 s17 s30 s31",
            w,
        );
        expect(&at(a, 2), "v0 v2 v9 s0 s1 exec", "v7 s12 s30 s31", w);
    });
}

/// A call through a table indexed at run time, and a call of an undefined
/// symbol through its GOT entry. In the relocatable object the table's
/// entries are R_AMDGPU_ABS64 relocations and the GOT is reached through
/// R_AMDGPU_GOTPCREL32_LO/HI; once linked, R_AMDGPU_RELATIVE64 and an
/// R_AMDGPU_ABS64 GOT entry. Both callees of the table are lifted; liveness
/// before the table call is the union of their needs.
#[test]
fn table_and_got_calls() {
    let funcs = "
    .p2align 2
    .type f,@function
    f:
        v_add_u32 v0, v0, v40
        s_setpc_b64 s[30:31]
    .p2align 2
    .type g,@function
    g:
        v_add_u32 v0, v0, v41
        s_setpc_b64 s[30:31]";
    let k = "
        s_load_dword s10, s[4:5], 0x0
        v_mov_b32 v40, 1
        v_mov_b32 v41, 2
        v_mov_b32 v42, 3
        s_getpc_b64 s[8:9]
        s_add_u32 s8, s8, tbl@rel32@lo+4
        s_addc_u32 s9, s9, tbl@rel32@hi+12
        s_waitcnt lgkmcnt(0)
        s_load_dwordx2 s[6:7], s[8:9], s10
        s_waitcnt lgkmcnt(0)
        s_nop 1
        s_swappc_b64 s[30:31], s[6:7]
        s_getpc_b64 s[12:13]
        s_add_u32 s12, s12, ext@gotpcrel32@lo+4
        s_addc_u32 s13, s13, ext@gotpcrel32@hi+12
        s_load_dwordx2 s[12:13], s[12:13], 0x0
        s_waitcnt lgkmcnt(0)
        s_swappc_b64 s[30:31], s[12:13]
        s_endpgm
        .section .data.rel.ro,\"aw\"
        .p2align 3
        .type tbl,@object
    tbl:
        .quad f
        .quad g
        .size tbl, 16
        .text";
    with_both(funcs, k, |a, w| {
        let p = &a.program;
        assert_eq!(p.calls.len(), 2, "{w}");
        let Callee::Table {
            callees,
            unresolved,
            ..
        } = &p.calls[0].callee
        else {
            panic!("{w}: {:?}", p.calls[0].callee)
        };
        assert_eq!(*unresolved, 0, "{w}");
        let mut names: Vec<String> = callees
            .iter()
            .map(|f| p.functions[*f].name.clone().unwrap_or_default())
            .collect();
        names.sort();
        assert_eq!(names, ["f", "g"], "{w}");
        assert_eq!(p.calls[1].callee, Callee::External("ext".into()), "{w}");
        // Before the table call: f reads v40, g reads v41 (either may run;
        // both are outside the convention's argument registers, so only the
        // callees' summaries make them live); v42 is never read.
        // The later external call may read s0..s33 and v0..v31 under the
        // calling convention, so those are live through the table call too
        // (its callees kill neither); s[12:13] are set up after it, s[30:31]
        // written by the call itself, v32 and s40 never read.
        expect(
            &at(a, 1),
            "v0 v20 v21 v22 s6 s7 s10 exec",
            "s12 s13 s30 s31 v32 s40 scc vcc",
            w,
        );
    });
}

/// LLVM's current if/else: `s_andn2_saveexec_b64` switches from the `then`
/// lanes to the `else` lanes (new EXEC disjoint from the old). A value only
/// the `else` lanes need is dead in the lanes enabled on the `then` side.
#[test]
fn if_else_with_andn2_saveexec() {
    let k = "
        s_load_dwordx2 s[0:1], s[4:5], 0x0
        v_mov_b32 v1, 1
        v_mov_b32 v5, 7
        v_cmp_gt_u32 vcc, 8, v0
        s_and_saveexec_b64 s[6:7], vcc
        s_xor_b64 s[6:7], exec, s[6:7]
        s_cbranch_execz .Lelse
        s_nop 1
        v_mov_b32 v1, 2
    .Lelse:
        s_andn2_saveexec_b64 s[6:7], s[6:7]
        s_cbranch_execz .Lend
        s_nop 2
        v_add_u32 v1, v1, v5
    .Lend:
        s_or_b64 exec, exec, s[6:7]
        s_nop 3
        s_waitcnt lgkmcnt(0)
        global_store_dword v0, v1, s[0:1]
        s_endpgm";
    with_both("", k, |a, w| {
        // Then side: v5 (else only) and v1 (overwritten here, but the else
        // lanes add to the old value) live only in the disabled lanes; v0
        // (stored after the join by every lane) in the enabled ones too.
        let m1 = at(a, 1);
        expect(&m1, "v0 v1 v5 s0 s1 s6 s7 exec", "v2 vcc scc", w);
        assert!(
            !has(&m1.active, "v5") && has(&m1.inactive, "v5"),
            "{w}: {m1:?}"
        );
        assert!(
            !has(&m1.active, "v1") && has(&m1.inactive, "v1"),
            "{w}: {m1:?}"
        );
        assert!(has(&m1.active, "v0"), "{w}: {m1:?}");
        let free = a.free_before(index_of(a, 1));
        assert!(free.vgprs_active_lanes.contains(&5), "{w}: {free:?}");
        assert!(!free.vgprs.contains(&5) && !free.vgprs.contains(&0), "{w}");
        // Else side: v1 and v5 read by the enabled lanes.
        let m2 = at(a, 2);
        expect(&m2, "v0 v1 v5 s0 s1 s6 s7 exec", "vcc", w);
        assert!(
            has(&m2.active, "v1") && has(&m2.active, "v5"),
            "{w}: {m2:?}"
        );
        // After the join: v5 is dead.
        expect(&at(a, 3), "v0 v1 s0 s1 exec", "v5 s6 s7 vcc", w);
    });
}
