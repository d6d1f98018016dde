//! Built-in hook code: counting with scalar atomics, records appended to
//! traces, the values they record.

use inlay_codeobj::descriptor::InitialSgprs;
use inlay_isa::{encode, Encoding, Instruction, Modifier, Operand};

use super::asm::{scalar_pair, Asm, Code, EXEC};
use super::regs::Regs;
use super::*;

impl Asm {
    /// `s_atomic_add_x2 s[data:data+1], s[base:base+1], offset`.
    pub(super) fn atomic_add(&self, r: &Regs, offset: u32) -> Result<Instruction, RewriteError> {
        if let Some((data, base, mut i)) = self.atomic.get() {
            if (data, base) == (r.data, r.base) && i.set_modifier(Modifier::Offset(offset as i32)) {
                return Ok(i);
            }
        }
        let i = self.build(
            Encoding::Smem,
            "s_atomic_add_x2",
            &[
                Self::sgpr(r.data, 2),
                Self::sgpr(r.base, 2),
                Operand::Imm(offset),
            ],
        )?;
        self.atomic.set(Some((r.data, r.base, i)));
        Ok(i)
    }

    /// Sets up `r`: the base address, and data = (1, 0) in one 64-bit move
    /// of the inline constant 1.
    /// Built once per (base, data): the counters' address is the same
    /// for every hook of a rewrite.
    pub(super) fn setup(&self, r: &Regs, counters: u64) -> Result<Vec<Instruction>, RewriteError> {
        if let Some(code) = self.setups.borrow().get(&(r.base, r.data)) {
            return Ok(code.to_vec());
        }
        let code = [
            self.mov(r.base, counters as u32)?,
            self.mov(r.base + 1, (counters >> 32) as u32)?,
            self.build(
                Encoding::Sop1,
                "s_mov_b64",
                &[Self::sgpr(r.data, 2), Self::konst(1)],
            )?,
        ];
        self.setups.borrow_mut().insert((r.base, r.data), code);
        Ok(code.to_vec())
    }

    /// The code of one hook.
    pub(super) fn hook(
        &self,
        h: Hook,
        r: &Regs,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        match h {
            Hook::Count { offset } => out.push(self.atomic_add(r, offset)?),
            Hook::Add { offset, value } => {
                // data = (value, 0) for the atomic (a 32-bit value leaves
                // the high half 0), then (1, 0) again for the hooks that follow.
                self.value_into(value, r.data, false, at, out)?;
                out.push(self.atomic_add(r, offset)?);
                out.push(self.reset_data(r, value.is_64_bit())?);
            }
            Hook::CountLanes { offset } => {
                if at.scc_live {
                    out.push(self.save_scc(r)?);
                }
                out.push(self.build(
                    Encoding::Sop1,
                    "s_bcnt1_i32_b64",
                    &[Self::sgpr(r.data, 1), EXEC],
                )?);
                out.push(self.atomic_add(r, offset)?);
                out.push(self.mov(r.data, 1)?);
                if at.scc_live {
                    out.push(self.restore_scc(r)?);
                }
            }
            Hook::Record { trace, id, value } => {
                let mut code = Code::default();
                if at.scc_live {
                    code.push(self.save_scc(r)?);
                }
                // The value first: it may be EXEC, which the store changes.
                self.value_into(value, r.u, true, at, &mut code.insts)?;
                self.claim(r, trace, SCALAR_RECORD, &mut code)?;
                // Lane 0 alone stores: (value) at 8, then (id, 0) at 0.
                let (pair, off) = at
                    .vgprs
                    .ok_or(RewriteError::NoRegisters { addr: at.addr })?;
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[Self::sgpr(r.t, 2), EXEC])?);
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[EXEC, Self::konst(1)])?);
                code.push(self.vmov(off, Self::konst(0))?);
                code.push(self.vmov(pair, Self::sgpr(r.u, 1))?);
                code.push(self.vmov(pair + 1, Self::sgpr(r.u + 1, 1))?);
                code.push(self.store(off, pair, r.data, 8)?);
                code.push(self.vmov(pair, Operand::Literal(id))?);
                code.push(self.vmov(pair + 1, Self::konst(0))?);
                code.push(self.store(off, pair, r.data, 0)?);
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[EXEC, Self::sgpr(r.t, 2)])?);
                self.finish_record(r, at, code, out)?;
            }
            Hook::RecordLanes { trace, id, value } => {
                let mut code = Code::default();
                if at.scc_live {
                    code.push(self.save_scc(r)?);
                }
                code.branch_to_end(self.build(
                    Encoding::Sopp,
                    "s_cbranch_execz",
                    &[Operand::Imm(0)],
                )?);
                self.claim(r, trace, LANE_RECORD, &mut code)?;
                let (pair, off) = at
                    .vgprs
                    .ok_or(RewriteError::NoRegisters { addr: at.addr })?;
                // Every enabled lane stores the same header: (id, 0) at 0,
                // EXEC at 8; then its own value at 16 + 8 * lane.
                code.push(self.vmov(off, Self::konst(0))?);
                code.push(self.vmov(pair, Operand::Literal(id))?);
                code.push(self.vmov(pair + 1, Self::konst(0))?);
                code.push(self.store(off, pair, r.data, 0)?);
                code.push(self.vmov(
                    pair,
                    Operand::Special {
                        code: 126,
                        count: 1,
                    },
                )?);
                code.push(self.vmov(
                    pair + 1,
                    Operand::Special {
                        code: 127,
                        count: 1,
                    },
                )?);
                code.push(self.store(off, pair, r.data, 8)?);
                let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
                let minus_one = Operand::Inline(193);
                code.push(self.build(
                    Encoding::Vop3,
                    "v_mbcnt_lo_u32_b32",
                    &[v1(off), minus_one, Self::konst(0)],
                )?);
                code.push(self.build(
                    Encoding::Vop3,
                    "v_mbcnt_hi_u32_b32",
                    &[v1(off), minus_one, v1(off)],
                )?);
                code.push(self.build(
                    Encoding::Vop2,
                    "v_lshlrev_b32_e32",
                    &[v1(off), Self::konst(3), v1(off)],
                )?);
                self.lane_value_into(value, pair, r, at, &mut code.insts)?;
                code.push(self.store(off, pair, r.data, 16)?);
                self.finish_record(r, at, code, out)?;
            }
        }
        Ok(())
    }

    /// `s_cselect_b32 scc_save, 1, 0`: SCC into an SGPR.
    pub(super) fn save_scc(&self, r: &Regs) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop2,
            "s_cselect_b32",
            &[Self::sgpr(r.scc, 1), Self::konst(1), Self::konst(0)],
        )
    }

    /// `s_cmp_lg_u32 scc_save, 0`: SCC back from the SGPR.
    pub(super) fn restore_scc(&self, r: &Regs) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.scc, 1), Self::konst(0)],
        )
    }

    /// data = (1, 0) again after a hook used it for something else.
    pub(super) fn reset_data(&self, r: &Regs, both: bool) -> Result<Instruction, RewriteError> {
        if both {
            self.build(
                Encoding::Sop1,
                "s_mov_b64",
                &[Self::sgpr(r.data, 2), Self::konst(1)],
            )
        } else {
            self.mov(r.data, 1)
        }
    }

    /// `global_store_dwordx2 v_off, v[pair:pair+1], s[base:base+1] offset:at`.
    pub(super) fn store(
        &self,
        off: u16,
        pair: u16,
        base: u16,
        at: i32,
    ) -> Result<Instruction, RewriteError> {
        let mut i = self.build(
            Encoding::Global,
            "global_store_dwordx2",
            &[
                Operand::Vgpr {
                    first: off,
                    count: 1,
                },
                Operand::Vgpr {
                    first: pair,
                    count: 2,
                },
                Self::sgpr(base, 2),
            ],
        )?;
        if !i.set_modifier(inlay_isa::Modifier::Offset(at)) {
            return Err(RewriteError::Trace);
        }
        Ok(i)
    }

    /// Puts `v` in SGPR `p` (and `p + 1`: its high half, or 0 when `both`).
    pub(super) fn value_into(
        &self,
        v: Value,
        p: u16,
        both: bool,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        let pair = |src: Operand| self.build(Encoding::Sop1, "s_mov_b64", &[Self::sgpr(p, 2), src]);
        let load = |base: u16, offset: u32| {
            self.build(
                Encoding::Smem,
                "s_load_dword",
                &[Self::sgpr(p, 1), Self::sgpr(base, 2), Operand::Imm(offset)],
            )
        };
        match v {
            Value::Const(c) => out.push(self.mov(p, c)?),
            Value::Sgpr(n) => out.push(self.build(
                Encoding::Sop1,
                "s_mov_b32",
                &[Self::sgpr(p, 1), Self::sgpr(n, 1)],
            )?),
            Value::WorkgroupId(d) => {
                let n = at.launch.workgroup_id[usize::from(d)]
                    .ok_or(RewriteError::NotReceived("workgroup id"))?;
                out.push(self.build(
                    Encoding::Sop1,
                    "s_mov_b32",
                    &[Self::sgpr(p, 1), Self::sgpr(n, 1)],
                )?);
            }
            Value::SgprPair(n) => out.push(pair(Self::sgpr(n, 2))?),
            Value::Exec => out.push(pair(EXEC)?),
            Value::Vcc => out.push(pair(Operand::Special {
                code: 106,
                count: 2,
            })?),
            Value::KernArg(offset) | Value::Packet(offset) => {
                let base = match v {
                    Value::KernArg(_) => at.launch.kernarg_segment_ptr,
                    _ => at.launch.dispatch_ptr,
                };
                let base = base.ok_or(RewriteError::NotReceived(launch_name(v)))?;
                out.push(load(base, offset)?);
                // lgkmcnt(0): the loaded value is there before it is used.
                out.push(self.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])?);
            }
        }
        if both && !v.is_64_bit() {
            out.push(self.mov(p + 1, 0)?);
        }
        Ok(())
    }

    /// Puts each enabled lane's `v` in VGPRs `d`, `d + 1`; `r.t` and `r.u`
    /// are free SGPRs (address arithmetic carries into `r.t`).
    pub(super) fn lane_value_into(
        &self,
        v: LaneValue,
        d: u16,
        r: &Regs,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
        match v {
            LaneValue::Vgpr(n) => {
                out.push(self.vmov(d, v1(n))?);
                out.push(self.vmov(d + 1, Self::konst(0))?);
            }
            LaneValue::VgprPair(n) => {
                out.push(self.vmov(d, v1(n))?);
                out.push(self.vmov(d + 1, v1(n + 1))?);
            }
            LaneValue::Address => {
                let i = at.inst;
                let no = || RewriteError::NoAddress { addr: at.addr };
                let w0 = *i.words().first().ok_or_else(no)?;
                let w1 = *i.words().get(1).ok_or_else(no)?;
                let vaddr = (w1 & 0xff) as u16;
                let saddr = (w1 >> 16 & 0x7f) as u16;
                let (offset, scalar_base) = match i.encoding() {
                    Encoding::Flat => ((w0 & 0xfff) as i32, None),
                    Encoding::Global => (
                        ((w0 & 0x1fff) << 19) as i32 >> 19,
                        (saddr != 0x7f).then_some(saddr),
                    ),
                    _ => return Err(no()),
                };
                let mad = |m: &'static str, a: Operand, b: Operand, c: Operand| {
                    self.build(
                        Encoding::Vop3,
                        m,
                        &[
                            Operand::Vgpr { first: d, count: 2 },
                            Self::sgpr(r.t, 2),
                            a,
                            b,
                            c,
                        ],
                    )
                };
                match scalar_base {
                    // saddr + zero-extended vaddr, in one multiply-add by 1.
                    Some(s) => out.push(mad(
                        "v_mad_u64_u32",
                        v1(vaddr),
                        Self::konst(1),
                        scalar_pair(s),
                    )?),
                    None => {
                        out.push(self.vmov(d, v1(vaddr))?);
                        out.push(self.vmov(d + 1, v1(vaddr + 1))?);
                    }
                }
                if offset != 0 {
                    // The signed offset, sign-extended, added the same way.
                    let o = match Self::inline_int(offset) {
                        Some(o) => o,
                        None => {
                            out.push(self.mov(r.u, offset as u32)?);
                            Self::sgpr(r.u, 1)
                        }
                    };
                    out.push(mad(
                        "v_mad_i64_i32",
                        o,
                        Self::konst(1),
                        Operand::Vgpr { first: d, count: 2 },
                    )?);
                }
            }
        }
        Ok(())
    }

    /// Claims `size` bytes of `trace` (data = the claim's address), or
    /// branches to the end when they are not all within its capacity.
    pub(super) fn claim(
        &self,
        r: &Regs,
        trace: Trace,
        size: u32,
        code: &mut Code,
    ) -> Result<(), RewriteError> {
        code.push(self.mov(r.data, size)?);
        code.push(self.mov(r.data + 1, 0)?);
        code.push(self.atomic_add_returning(r, trace.cursor)?);
        code.push(self.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])?);
        // Past 4 GiB, or past the capacity less one record: no room.
        code.push(self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.data + 1, 1), Self::konst(0)],
        )?);
        code.branch_to_end(self.build(Encoding::Sopp, "s_cbranch_scc1", &[Operand::Imm(0)])?);
        code.push(self.build(
            Encoding::Sopc,
            "s_cmp_gt_u32",
            &[
                Self::sgpr(r.data, 1),
                Operand::Literal(trace.capacity - size),
            ],
        )?);
        code.branch_to_end(self.build(Encoding::Sopp, "s_cbranch_scc1", &[Operand::Imm(0)])?);
        code.push(self.add_lit("s_add_u32", r.data, trace.records as u32)?);
        code.push(self.add_lit("s_addc_u32", r.data + 1, (trace.records >> 32) as u32)?);
        Ok(())
    }

    /// Ends a record's code: its branches land on the SCC restore (or the
    /// data reset), which every path runs.
    pub(super) fn finish_record(
        &self,
        r: &Regs,
        at: &Point,
        mut code: Code,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        code.end();
        if at.scc_live {
            code.push(self.restore_scc(r)?);
        }
        code.push(self.reset_data(r, true)?);
        code.resolve(&mut self.facts.borrow_mut())?;
        out.extend(code.insts);
        Ok(())
    }

    /// `s_atomic_add_x2 ... glc`: the counter's old value comes back in data.
    /// (The glc bit is set in its bytes, which are decoded again, so the
    /// instruction is whatever the decoder makes of the returning form.)
    pub(super) fn atomic_add_returning(
        &self,
        r: &Regs,
        offset: u32,
    ) -> Result<Instruction, RewriteError> {
        let mut bytes = encode(&self.atomic_add(r, offset)?);
        bytes[2] |= 1; // glc, bit 16 of the first word
        self.decoder.decode(&bytes).map_err(|_| {
            RewriteError::Build(
                "s_atomic_add_x2 glc",
                inlay_isa::BuildError::Unknown("glc".into()),
            )
        })
    }
}

/// What hook code knows about the point it runs at.
pub(super) struct Point<'a> {
    pub(super) inst: &'a Instruction,
    pub(super) addr: u64,
    pub(super) scc_live: bool,
    pub(super) launch: &'a InitialSgprs,
    /// VGPR pair and single VGPR for records.
    pub(super) vgprs: Option<(u16, u16)>,
}

pub(super) fn launch_name(v: Value) -> &'static str {
    match v {
        Value::KernArg(_) => "kernel argument pointer",
        Value::Packet(_) => "dispatch packet pointer",
        _ => "workgroup id",
    }
}

/// Checks what a hook asks for that does not depend on where it is.
pub(super) fn check_hook(h: &Hook) -> Result<(), RewriteError> {
    if h.offset() > MAX_SMEM_OFFSET - 7 {
        return Err(RewriteError::CounterOffset(h.offset()));
    }
    if let Hook::Record { trace, .. } | Hook::RecordLanes { trace, .. } = h {
        let size = if h.vgprs() == Some(Lanes::All) {
            SCALAR_RECORD
        } else {
            LANE_RECORD
        };
        if trace.cursor % 8 != 0 || trace.records % 8 != 0 || trace.capacity < size {
            return Err(RewriteError::Trace);
        }
    }
    match h.value() {
        Some(Value::Sgpr(n)) if n >= SGPRS => Err(RewriteError::NoSuchSgpr(n)),
        Some(Value::SgprPair(n)) if n % 2 != 0 || n + 1 >= SGPRS => {
            Err(RewriteError::NoSuchSgpr(n))
        }
        Some(Value::KernArg(o) | Value::Packet(o)) if o % 4 != 0 || o > MAX_SMEM_OFFSET => {
            Err(RewriteError::ArgumentOffset(o))
        }
        Some(Value::WorkgroupId(d)) if d > 2 => Err(RewriteError::NotReceived("workgroup id")),
        _ => match h {
            Hook::RecordLanes {
                value: LaneValue::Vgpr(n),
                ..
            } if *n > 255 => Err(RewriteError::NoSuchSgpr(*n)),
            Hook::RecordLanes {
                value: LaneValue::VgprPair(n),
                ..
            } if *n > 254 => Err(RewriteError::NoSuchSgpr(*n)),
            _ => Ok(()),
        },
    }
}
