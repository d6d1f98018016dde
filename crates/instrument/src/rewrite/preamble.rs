//! The kernel's launch state as hooks see it: where launch values are,
//! copies the preamble makes, and the descriptor grown for the hooks.

use inlay_codeobj::descriptor::InitialSgprs;
use inlay_codeobj::KernelDescriptor;
use inlay_isa::{Encoding, Operand};

use super::asm::Asm;
use super::call::Implicit;
use super::regs::Regs;
use super::snippet::Snippet;
use super::*;

/// A copy of SGPRs the preamble makes: (from, to, count).
pub(super) type SgprCopy = (u16, u16, u8);

/// Where the launch values a hook may read are, and whether they are still
/// there at a given instruction: always before the kernel's first one;
/// elsewhere in the kernel only if no instruction of the program (callees
/// included) writes their SGPRs and it calls no code this cannot see.
pub(super) struct Launch {
    pub(super) init: InitialSgprs,
    /// Where hooks find them: `init`, or copies the preamble makes.
    pub(super) effective: InitialSgprs,
    pub(super) entry: Option<InstId>,
    /// SGPRs some instruction writes (all of them after an opaque call).
    pub(super) written: Vec<bool>,
}

impl Launch {
    /// `check_writes`: whether any hook reads a launch value (finding the
    /// SGPRs the program writes costs a pass over it).
    /// `by_calls`: SGPRs calls to compiled hooks may change (launch values
    /// there are read from the preamble's copies).
    pub(super) fn new(
        an: &Analysis,
        descriptor: &KernelDescriptor,
        check_writes: bool,
        by_calls: &crate::RegSet,
    ) -> Launch {
        let prog = &an.program;
        let init = descriptor
            .decode(inlay_codeobj::target::Family::Gfx90a, false)
            .initial_sgprs();
        let entry = prog
            .functions
            .first()
            .and_then(|f| prog.inst_at(0, f.entry));
        let opaque = prog
            .calls
            .iter()
            .any(|c| matches!(c.callee, Callee::External(_) | Callee::Unresolved));
        let mut written: Vec<bool> = (0..SGPRS).map(|n| opaque || by_calls.has_sgpr(n)).collect();
        for i in (0..prog.insts.len()).filter(|_| check_writes) {
            for u in prog.used_registers(i) {
                if u.access.writes() && u.register.file == inlay_isa::RegFile::Sgpr {
                    let r = u.register;
                    for n in r.first..r.first + u16::from(r.count) {
                        if let Some(w) = written.get_mut(n as usize) {
                            *w = true;
                        }
                    }
                }
            }
        }
        Launch {
            init,
            effective: init,
            entry,
            written,
        }
    }

    /// A layout with `values` moved to SGPRs above `r` (aligned pairs for
    /// pointers), and the copies (from, to, count) that put them there.
    pub(super) fn save(&self, r: &Regs, values: &[Value]) -> Option<(InitialSgprs, Vec<SgprCopy>)> {
        let mut layout = self.init;
        let mut copies = Vec::new();
        let mut next = (r.u + 2).next_multiple_of(2);
        let mut place = |slot: &mut Option<u16>, count: u16| -> Option<()> {
            let from = (*slot)?;
            if copies.iter().any(|&(f, _, _)| f == from) {
                return Some(());
            }
            let to = if count == 2 {
                next.next_multiple_of(2)
            } else {
                next
            };
            if to + count > SGPRS {
                return None;
            }
            next = to + count;
            copies.push((from, to, count as u8));
            *slot = Some(to);
            Some(())
        };
        for v in values {
            match *v {
                Value::KernArg(_) => place(&mut layout.kernarg_segment_ptr, 2)?,
                Value::Packet(_) => place(&mut layout.dispatch_ptr, 2)?,
                Value::WorkgroupId(d) => place(layout.workgroup_id.get_mut(usize::from(d))?, 1)?,
                _ => {}
            }
        }
        Some((layout, copies))
    }

    /// SGPRs `values` read where the kernel starts (launch values before
    /// any copy the preamble makes, and application SGPRs).
    pub(super) fn sgprs_read_by(&self, values: impl Iterator<Item = Value>) -> Vec<u16> {
        let mut out: Vec<u16> = values.flat_map(|v| sgprs_in(&self.init, v)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// SGPRs `v` reads.
    pub(super) fn sgprs_read(&self, v: Value) -> Vec<u16> {
        sgprs_in(&self.effective, v)
    }

    /// Whether `h` before `i` reads a launch value that must be saved at
    /// the kernel's start (the kernel may overwrite it first); an error if
    /// the kernel does not receive it at all.
    pub(super) fn check(&self, h: &Hook, i: InstId, an: &Analysis) -> Result<bool, RewriteError> {
        let Some(v @ (Value::KernArg(_) | Value::Packet(_) | Value::WorkgroupId(_))) = h.value()
        else {
            return Ok(false);
        };
        let sgprs = self.sgprs_read(v);
        if sgprs.is_empty() {
            return Err(RewriteError::NotReceived(launch_name(v)));
        }
        let prog = &an.program;
        let in_kernel = prog.blocks[prog.insts[i].block].function == 0;
        let kept = in_kernel && sgprs.iter().all(|&n| !self.written[n as usize]);
        Ok(Some(i) != self.entry && !kept)
    }
}

/// SGPRs `v` reads when launch values are where `layout` says.
fn sgprs_in(layout: &InitialSgprs, v: Value) -> Vec<u16> {
    let pair = |n: Option<u16>| n.map_or(Vec::new(), |n| vec![n, n + 1]);
    match v {
        Value::Sgpr(n) => vec![n],
        Value::SgprPair(n) => vec![n, n + 1],
        Value::KernArg(_) => pair(layout.kernarg_segment_ptr),
        Value::Packet(_) => pair(layout.dispatch_ptr),
        Value::WorkgroupId(d) => layout
            .workgroup_id
            .get(usize::from(d))
            .copied()
            .flatten()
            .into_iter()
            .collect(),
        Value::Const(_) | Value::Exec | Value::Vcc => Vec::new(),
    }
}

/// Makes a gfx90a descriptor allocate VGPRs up to `highest` (architectural
/// ones) and at least `agprs` AGPRs: the AGPRs' offset in the unified
/// register file (units of 4) moves up past the VGPRs when it must (the
/// AGPRs keep their names), and the granulated count (units of 8) covers both.
pub(super) fn grow_vgprs(
    kd: &mut KernelDescriptor,
    an: &Analysis,
    highest: Option<u16>,
    agprs: u16,
) {
    let r = &an.resources;
    let vgprs = highest
        .map_or(0, |h| u32::from(h) + 1)
        .max(r.vgprs_allocated);
    let agprs = u32::from(agprs).max(r.agprs_allocated);
    if vgprs == r.vgprs_allocated && agprs == r.agprs_allocated {
        return;
    }
    let accum = vgprs.next_multiple_of(4).max(4);
    let total = if agprs > 0 {
        accum + agprs
    } else {
        vgprs.max(1)
    };
    let granules = total.div_ceil(8).max(1);
    if granules - 1 > kd.compute_pgm_rsrc1 & 0x3f {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !0x3f) | (granules - 1);
    }
    let field = accum / 4 - 1;
    if field > kd.compute_pgm_rsrc3 & 0x3f {
        kd.compute_pgm_rsrc3 = (kd.compute_pgm_rsrc3 & !0x3f) | field;
    }
}

/// Makes the descriptor allocate SGPRs up to `highest` (plus the six gfx9
/// keeps for VCC, FLAT_SCRATCH and XNACK_MASK).
pub(super) fn grow_sgprs(kd: &mut KernelDescriptor, highest: u16) {
    let need = u32::from(highest) + 1 + 6;
    let field = need.div_ceil(8).saturating_sub(1).min(15);
    let old = (kd.compute_pgm_rsrc1 >> 6) & 0xf;
    if field > old {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !(0xf << 6)) | field << 6;
    }
}

/// Where a scalar value lives for the whole kernel: an SGPR, or one lane of
/// a VGPR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Home {
    Sgpr(u16),
    Lane(u16, u8),
}

/// A 64-bit value of a hook module that inlined hooks compute: an address
/// in it (`loaded` false: what `s_getpc_b64` and its adds give), or the
/// entry of its global offset table there (`loaded`). The module (the
/// plan's index), the address, and a hook's symbol with the address's
/// distance from it (how the kernel reaches it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ModuleValue {
    pub(super) module: usize,
    pub(super) address: u64,
    pub(super) loaded: bool,
    pub(super) symbol: std::sync::Arc<str>,
    pub(super) distance: i64,
}

/// The first of two homes that are an aligned SGPR pair.
pub(super) fn sgpr_pair(h: [Home; 2]) -> Option<u16> {
    match h {
        [Home::Sgpr(a), Home::Sgpr(b)] if a.is_multiple_of(2) && b == a + 1 => Some(a),
        _ => None,
    }
}

/// Launch values that calls read at any point, so the kernel keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Needs {
    /// The private segment buffer V# (with the wave's offset added).
    pub(super) vsharp: bool,
    pub(super) dispatch: bool,
    pub(super) queue: bool,
    pub(super) kernarg: bool,
    pub(super) dispatch_id: bool,
    pub(super) workgroup_id: [bool; 3],
    /// The packed work-item ids (a VGPR).
    pub(super) workitem: bool,
    /// FLAT_SCRATCH set up, for generic pointers into private memory.
    pub(super) flat_scratch: bool,
    /// The implicit-argument pointer, and where it comes from.
    pub(super) implicit: Option<Implicit>,
}

impl Needs {
    fn any(&self) -> bool {
        *self != Needs::default()
    }
}

/// Where the kernel keeps the launch values calls read.
#[derive(Debug, Clone, Default)]
pub(super) struct Homes {
    pub(super) vsharp: Option<[Home; 4]>,
    pub(super) dispatch: Option<[Home; 2]>,
    pub(super) queue: Option<[Home; 2]>,
    pub(super) kernarg: Option<[Home; 2]>,
    pub(super) dispatch_id: Option<[Home; 2]>,
    pub(super) workgroup_id: [Option<Home>; 3],
    pub(super) workitem: Option<u16>,
    /// The implicit-argument pointer hooks get.
    pub(super) implicit: Option<[Home; 2]>,
    /// The address of each hook called, by symbol: a call jumps to it
    /// with no relocation of its own (the preamble's are the only ones).
    pub(super) hooks: Vec<(std::sync::Arc<str>, [Home; 2])>,
    /// Addresses in hook modules and entries of their global offset
    /// tables inlined hooks read (see [`ModuleValue`]), and the homes
    /// holding each one's value: found once, by the preamble.
    pub(super) module_values: Vec<(ModuleValue, [Home; 2])>,
    /// 64-bit inline constants inlined hooks read from many sites (an
    /// atomic's data), and the SGPR pair holding each one.
    pub(super) constants: Vec<(u64, u16)>,
    /// The registers the homes occupy (nothing else may use them).
    pub(super) taken: crate::RegSet,
}

/// The launch state for calls: homes, the descriptor with the initial
/// registers they need enabled, and the preamble that fills the homes and
/// puts the kernel's own initial registers back where it expects them.
pub(super) struct LaunchState {
    pub(super) homes: Homes,
    pub(super) descriptor: KernelDescriptor,
    pub(super) preamble: Snippet,
}

/// What a VGPR must not be, to be a home (or an SGPR): named by the
/// kernel, written by a hook, or one the call sequence sets.
pub(super) struct Avoid {
    pub(super) regs: crate::RegSet,
    /// Lowest SGPR and VGPR a home may take.
    pub(super) sgpr_floor: u16,
    pub(super) vgpr_floor: u16,
}

const PROPS_PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
const PROPS_DISPATCH_PTR: u16 = 1 << 1;
const PROPS_QUEUE_PTR: u16 = 1 << 2;
const PROPS_KERNARG_PTR: u16 = 1 << 3;
const PROPS_DISPATCH_ID: u16 = 1 << 4;
const PROPS_FLAT_SCRATCH_INIT: u16 = 1 << 5;
const RSRC2_PRIVATE_SEGMENT: u32 = 1;
const RSRC2_WORKGROUP_ID_X: u32 = 1 << 7;
const RSRC2_WORKITEM_ID_SHIFT: u32 = 11;

/// The descriptor with the initial registers `needs` asks for enabled
/// (AMDGPUUsage's user and system SGPRs, all three work-item ids).
fn enable(kd: &KernelDescriptor, needs: &Needs) -> Result<KernelDescriptor, String> {
    let mut k = *kd;
    let mut added_user = 0u32;
    let mut props = |bit: u16, on: bool, sgprs: u32| {
        if on && k.kernel_code_properties & bit == 0 {
            k.kernel_code_properties |= bit;
            added_user += sgprs;
        }
    };
    props(PROPS_PRIVATE_SEGMENT_BUFFER, needs.vsharp, 4);
    props(PROPS_DISPATCH_PTR, needs.dispatch, 2);
    props(PROPS_QUEUE_PTR, needs.queue, 2);
    let implicit_from_kernargs = matches!(needs.implicit, Some(Implicit::Kernarg(_)));
    props(
        PROPS_KERNARG_PTR,
        needs.kernarg || implicit_from_kernargs,
        2,
    );
    props(PROPS_DISPATCH_ID, needs.dispatch_id, 2);
    props(PROPS_FLAT_SCRATCH_INIT, needs.flat_scratch, 2);
    if added_user > 0 {
        if kd.kernarg_preload & 0x7f != 0 {
            return Err("the kernel preloads arguments into SGPRs, and the hooks need initial SGPRs it does not enable".into());
        }
        let count = (k.compute_pgm_rsrc2 >> 1 & 0x1f) + added_user;
        if count > 16 {
            return Err(format!(
                "the kernel would need {count} user SGPRs (at most 16)"
            ));
        }
        k.compute_pgm_rsrc2 = k.compute_pgm_rsrc2 & !(0x1f << 1) | count << 1;
    }
    if needs.vsharp || needs.flat_scratch {
        k.compute_pgm_rsrc2 |= RSRC2_PRIVATE_SEGMENT;
    }
    for d in 0..3 {
        if needs.workgroup_id[d] {
            k.compute_pgm_rsrc2 |= RSRC2_WORKGROUP_ID_X << d;
        }
    }
    if needs.workitem {
        // All three ids (x, y and z), packed in v0.
        k.compute_pgm_rsrc2 =
            k.compute_pgm_rsrc2 & !(3 << RSRC2_WORKITEM_ID_SHIFT) | 2 << RSRC2_WORKITEM_ID_SHIFT;
    }
    Ok(k)
}

/// The initial SGPRs of a layout: (first SGPR, count) of each value.
fn initial_values(s: &InitialSgprs) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    let mut put = |at: Option<u16>, n: u16| out.extend(at.map(|a| (a, n)));
    put(s.private_segment_buffer, 4);
    put(s.dispatch_ptr, 2);
    put(s.queue_ptr, 2);
    put(s.kernarg_segment_ptr, 2);
    put(s.dispatch_id, 2);
    put(s.flat_scratch_init, 2);
    put(s.private_segment_size, 1);
    for w in s.workgroup_id {
        put(w, 1);
    }
    put(s.workgroup_info, 1);
    put(s.private_segment_wave_offset, 1);
    out
}

/// Values hooks read from many sites, kept in homes for the whole kernel.
pub(super) struct Kept<'k> {
    /// Hooks' addresses (their symbols).
    pub(super) hooks: &'k [std::sync::Arc<str>],
    /// Addresses in hook modules and entries of their global offset tables.
    pub(super) module_values: &'k [ModuleValue],
    /// 64-bit inline constants inlined bodies read.
    pub(super) constants: &'k [u64],
}

/// Plans the homes of the launch values `needs` lists and of the values
/// `kept` lists, and the preamble that fills them; `kernel` names the
/// implicit-argument block the code object may carry.
pub(super) fn launch_state(
    asm: &Asm,
    kd: &KernelDescriptor,
    needs: &Needs,
    kept: &Kept<'_>,
    kernel: &str,
    avoid: &Avoid,
) -> Result<LaunchState, String> {
    let Kept {
        hooks,
        module_values,
        constants,
    } = *kept;
    if !needs.any() && hooks.is_empty() && module_values.is_empty() && constants.is_empty() {
        return Ok(LaunchState {
            homes: Homes::default(),
            descriptor: *kd,
            preamble: Snippet::default(),
        });
    }
    let family = inlay_codeobj::target::Family::Gfx90a;
    let new_kd = enable(kd, needs)?;
    let old = kd.decode(family, false);
    let new = new_kd.decode(family, false);
    let (was, now) = (old.initial_sgprs(), new.initial_sgprs());
    let initial_end = initial_values(&now)
        .iter()
        .map(|&(a, n)| a + n)
        .max()
        .unwrap_or(0)
        .max(new.rsrc2.user_sgpr_count as u16);

    // Homes: free SGPRs from the floor up (pairs aligned), else lanes of a
    // VGPR nobody uses.
    let mut homes = Homes::default();
    let free_sgpr = |n: u16| n >= avoid.sgpr_floor.max(initial_end) && !avoid.regs.has_sgpr(n);
    let mut next_sgpr = avoid.sgpr_floor.max(initial_end);
    let free_vgpr = |n: u16| n >= avoid.vgpr_floor && !avoid.regs.has_vgpr(n);
    let mut vgprs = (0..256u16).filter(|&n| free_vgpr(n));
    let mut lane_vgpr: Option<(u16, u8)> = None;
    let mut take = |n: u16, taken: &mut crate::RegSet| -> Result<Vec<Home>, String> {
        // n dwords, as aligned SGPRs when there are enough.
        let mut at = next_sgpr.next_multiple_of(if n > 1 { 2 } else { 1 });
        while at + n <= SGPRS && !(at..at + n).all(free_sgpr) {
            at += if n > 1 { 2 } else { 1 };
        }
        if at + n <= SGPRS {
            next_sgpr = at + n;
            for s in at..at + n {
                taken.insert(s);
            }
            return Ok((at..at + n).map(Home::Sgpr).collect());
        }
        let mut out = Vec::new();
        for _ in 0..n {
            let (v, lane) = match lane_vgpr {
                Some((v, l)) if l < 63 => (v, l + 1),
                _ => {
                    let v = vgprs
                        .next()
                        .ok_or("no SGPRs and no VGPR free to keep launch values in")?;
                    taken.insert(crate::regs::VGPR_BASE + v);
                    (v, 0)
                }
            };
            lane_vgpr = Some((v, lane));
            out.push(Home::Lane(v, lane));
        }
        Ok(out)
    };
    let mut taken = crate::RegSet::new();
    let arr4 = |v: Vec<Home>| [v[0], v[1], v[2], v[3]];
    let arr2 = |v: Vec<Home>| [v[0], v[1]];
    if needs.vsharp {
        homes.vsharp = Some(arr4(take(4, &mut taken)?));
    }
    if needs.dispatch {
        homes.dispatch = Some(arr2(take(2, &mut taken)?));
    }
    if needs.queue {
        homes.queue = Some(arr2(take(2, &mut taken)?));
    }
    if needs.kernarg {
        homes.kernarg = Some(arr2(take(2, &mut taken)?));
    }
    if needs.implicit.is_some() {
        homes.implicit = Some(arr2(take(2, &mut taken)?));
    }
    if needs.dispatch_id {
        homes.dispatch_id = Some(arr2(take(2, &mut taken)?));
    }
    // The x and y ids as an aligned pair when both are kept (a call
    // moves them into s[12:13] at once).
    let mut first_id = 0;
    if needs.workgroup_id[0] && needs.workgroup_id[1] {
        let xy = take(2, &mut taken)?;
        homes.workgroup_id[0] = Some(xy[0]);
        homes.workgroup_id[1] = Some(xy[1]);
        first_id = 2;
    }
    for d in first_id..3 {
        if needs.workgroup_id[d] {
            homes.workgroup_id[d] = Some(take(1, &mut taken)?[0]);
        }
    }
    for h in hooks {
        homes.hooks.push((h.clone(), arr2(take(2, &mut taken)?)));
    }
    // Module values in SGPRs or lanes (two lane reads cost less than
    // finding one), while homes are left (else the code finds them).
    for g in module_values {
        let Ok(h) = take(2, &mut taken) else { break };
        homes.module_values.push((g.clone(), arr2(h)));
    }
    // Constants only in aligned SGPR pairs (in lanes the inlined code
    // sets them itself: one move).
    for &c in constants {
        match take(2, &mut taken)?[..] {
            [Home::Sgpr(a), Home::Sgpr(_)] if a % 2 == 0 => homes.constants.push((c, a)),
            _ => break,
        }
    }
    if needs.workitem {
        let v = vgprs
            .next()
            .ok_or("no VGPR free to keep the work-item ids in")?;
        taken.insert(crate::regs::VGPR_BASE + v);
        homes.workitem = Some(v);
    }
    homes.taken = taken;

    // The preamble: homes first, from the new layout.
    let mut code = Snippet::default();
    // SGPRs the kernel does not start with (an aligned four), for values
    // on their way to their homes.
    let temp = (initial_end.next_multiple_of(2)..SGPRS)
        .step_by(2)
        .find(|&n| (n..n + 4).all(|s| !homes.taken.has_sgpr(s)) && n + 4 <= SGPRS)
        .ok_or("no SGPRs free for the preamble")?;
    let s1 = |n: u16| Asm::sgpr(n, 1);
    let put = |code: &mut Snippet, home: Home, src: u16| -> Result<(), String> {
        code.push(
            match home {
                Home::Sgpr(h) => asm.build(Encoding::Sop1, "s_mov_b32", &[s1(h), s1(src)]),
                Home::Lane(v, l) => asm.writelane(v, Asm::sgpr(src, 1), l),
            }
            .map_err(|e| e.to_string())?,
        );
        Ok(())
    };
    let e = |x: RewriteError| x.to_string();
    if let Some(h) = homes.vsharp {
        let (Some(p), Some(w)) = (now.private_segment_buffer, now.private_segment_wave_offset)
        else {
            return Err("the private segment buffer is not enabled".into());
        };
        // The V# callees get: the wave's offset added to the base.
        code.push(
            asm.build(Encoding::Sop2, "s_add_u32", &[s1(temp), s1(p), s1(w)])
                .map_err(e)?,
        );
        code.push(
            asm.build(
                Encoding::Sop2,
                "s_addc_u32",
                &[s1(temp + 1), s1(p + 1), Asm::konst(0)],
            )
            .map_err(e)?,
        );
        put(&mut code, h[0], temp)?;
        put(&mut code, h[1], temp + 1)?;
        put(&mut code, h[2], p + 2)?;
        put(&mut code, h[3], p + 3)?;
    }
    for (home, at) in [
        (homes.dispatch, now.dispatch_ptr),
        (homes.queue, now.queue_ptr),
        (homes.kernarg, now.kernarg_segment_ptr),
        (homes.dispatch_id, now.dispatch_id),
    ] {
        if let (Some(h), Some(p)) = (home, at) {
            put(&mut code, h[0], p)?;
            put(&mut code, h[1], p + 1)?;
        }
    }
    for d in 0..3 {
        if let (Some(h), Some(p)) = (homes.workgroup_id[d], now.workgroup_id[d]) {
            put(&mut code, h, p)?;
        }
    }
    if let Some(v) = homes.workitem {
        code.push(
            asm.vmov(v, Operand::Vgpr { first: 0, count: 1 })
                .map_err(e)?,
        );
    }
    // Pointers computed once: the implicit arguments (the kernel's own
    // block, or the one the code object carries), each hook's address and
    // the module values inlined hooks read, straight into their homes when
    // those are an aligned SGPR pair (every wave runs this, whether it
    // makes a call or not), else through `temp`.
    let to_home = |code: &mut Snippet, h: [Home; 2], d: u16| -> Result<(), String> {
        if d == temp {
            put(code, h[0], temp)?;
            put(code, h[1], temp + 1)?;
        }
        Ok(())
    };
    if let (Some(h), Some(from)) = (homes.implicit, needs.implicit) {
        let d = sgpr_pair(h).unwrap_or(temp);
        match from {
            Implicit::Kernarg(off) => {
                let p = now
                    .kernarg_segment_ptr
                    .ok_or("the kernel-argument pointer is not enabled")?;
                let b = |m, ops: &[Operand]| asm.build(Encoding::Sop2, m, ops).map_err(e);
                code.push(b("s_add_u32", &[s1(d), s1(p), Asm::konst(off)])?);
                code.push(b("s_addc_u32", &[s1(d + 1), s1(p + 1), Asm::konst(0)])?);
            }
            Implicit::Block => {
                code.pc_relative(asm, d, crate::emit::implicit_args_name(kernel).into())
                    .map_err(e)?;
            }
        }
        to_home(&mut code, h, d)?;
    }
    for (symbol, h) in &homes.hooks {
        let d = sgpr_pair(*h).unwrap_or(temp);
        code.pc_relative(asm, d, symbol.clone()).map_err(e)?;
        to_home(&mut code, *h, d)?;
    }
    let wait_loads = || {
        // lgkmcnt(0)
        asm.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])
            .map_err(e)
    };
    for (g, h) in &homes.module_values {
        let d = sgpr_pair(*h).unwrap_or(temp);
        code.pc_relative_at(asm, d, g.symbol.clone(), g.distance)
            .map_err(e)?;
        if g.loaded {
            code.push(
                asm.build(
                    Encoding::Smem,
                    "s_load_dwordx2",
                    &[Asm::sgpr(d, 2), Asm::sgpr(d, 2), Operand::Imm(0)],
                )
                .map_err(e)?,
            );
            // (Into lanes once it has landed; into a pair, waited for
            // at the end.)
            if d == temp {
                code.push(wait_loads()?);
            }
        }
        to_home(&mut code, *h, d)?;
    }
    if needs.flat_scratch && was.flat_scratch_init.is_none() {
        if let (Some(f), Some(w)) = (now.flat_scratch_init, now.private_segment_wave_offset) {
            let fs = |c: u8| Operand::Special { code: c, count: 1 };
            code.push(
                asm.build(Encoding::Sop2, "s_add_u32", &[fs(102), s1(f), s1(w)])
                    .map_err(e)?,
            );
            code.push(
                asm.build(
                    Encoding::Sop2,
                    "s_addc_u32",
                    &[fs(103), s1(f + 1), Asm::konst(0)],
                )
                .map_err(e)?,
            );
        }
    }
    // Then the kernel's own initial SGPRs back where it expects them
    // (each value moves down or stays, so ascending order is safe).
    let moves: Vec<(u16, u16, u16)> = {
        let pairs = [
            (was.private_segment_buffer, now.private_segment_buffer, 4),
            (was.dispatch_ptr, now.dispatch_ptr, 2),
            (was.queue_ptr, now.queue_ptr, 2),
            (was.kernarg_segment_ptr, now.kernarg_segment_ptr, 2),
            (was.dispatch_id, now.dispatch_id, 2),
            (was.flat_scratch_init, now.flat_scratch_init, 2),
            (was.private_segment_size, now.private_segment_size, 1),
            (was.workgroup_id[0], now.workgroup_id[0], 1),
            (was.workgroup_id[1], now.workgroup_id[1], 1),
            (was.workgroup_id[2], now.workgroup_id[2], 1),
            (was.workgroup_info, now.workgroup_info, 1),
            (
                was.private_segment_wave_offset,
                now.private_segment_wave_offset,
                1,
            ),
        ];
        let mut m: Vec<(u16, u16, u16)> = pairs
            .iter()
            .filter_map(|&(a, b, n)| match (a, b) {
                (Some(a), Some(b)) if a != b => Some((a, b, n)),
                _ => None,
            })
            .collect();
        m.sort_unstable();
        m
    };
    for (to, from, n) in moves {
        for k in 0..n {
            code.push(
                asm.build(Encoding::Sop1, "s_mov_b32", &[s1(to + k), s1(from + k)])
                    .map_err(e)?,
            );
        }
    }
    // Initial SGPRs the original does not start with read as zero there
    // (as the original's uninitialized ones would on a fresh wave).
    let old_end = initial_values(&was)
        .iter()
        .map(|&(a, n)| a + n)
        .max()
        .unwrap_or(0)
        .max(old.rsrc2.user_sgpr_count as u16);
    let original: Vec<u16> = initial_values(&was)
        .iter()
        .flat_map(|&(a, n)| a..a + n)
        .collect();
    for n in 0..initial_end {
        if n >= old_end && !original.contains(&n) && !homes.taken.has_sgpr(n) {
            code.push(asm.mov(n, 0).map_err(e)?);
        }
    }
    let old_ids = old.rsrc2.enable_vgpr_workitem_id;
    if needs.workitem && old_ids < 2 {
        let mask = if old_ids == 0 { 0x3ff } else { 0xf_ffff };
        code.push(
            asm.build(
                Encoding::Vop2,
                "v_and_b32_e32",
                &[
                    Operand::Vgpr { first: 0, count: 1 },
                    Operand::Literal(mask),
                    Operand::Vgpr { first: 0, count: 1 },
                ],
            )
            .map_err(e)?,
        );
    }
    for &(c, h) in &homes.constants {
        let k = Asm::inline_int(c as i64 as i32)
            .filter(|_| (-16..=64).contains(&(c as i64)))
            .ok_or("a constant home of no inline constant")?;
        code.push(
            asm.build(Encoding::Sop1, "s_mov_b64", &[Asm::sgpr(h, 2), k])
                .map_err(e)?,
        );
    }
    if homes.module_values.iter().any(|(g, _)| g.loaded) {
        // The entries are there before the kernel's code.
        code.push(wait_loads()?);
    }
    Ok(LaunchState {
        homes,
        descriptor: new_kd,
        preamble: code,
    })
}
