//! Predecoded instructions: the execution-friendly form of one machine
//! instruction, built once per code object from inlay-isa's decoding.
//!
//! Every field the executor needs is pulled out of the words here, so the hot
//! loop only matches on [`Op`] and reads plain fields. Anything the emulator
//! does not implement becomes [`Op::Unimplemented`] and faults only if run.

use inlay_isa::tables::{Field, Slot};
use inlay_isa::{Encoding, Instruction};

/// A source operand, resolved from the 9-bit source encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Src {
    /// Scalar register file by source code 0..=127 (SGPRs, vcc, m0, exec, ttmp...).
    S(u8),
    V(u16),
    A(u16),
    /// Inline integer constant.
    Int(i32),
    /// Inline float constant: index into [`F32_CONSTS`] / [`F64_CONSTS`].
    F(u8),
    Lit(u32),
    Scc,
    Vccz,
    Execz,
    /// `src_shared_base` etc. by source code (235..=239).
    Aperture(u8),
    #[default]
    None,
}

pub const F32_CONSTS: [u32; 9] = [
    0x3f00_0000,
    0xbf00_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x4000_0000,
    0xc000_0000,
    0x4080_0000,
    0xc080_0000,
    0x3e22_f983,
];
pub const F64_CONSTS: [u64; 9] = [
    0x3fe0_0000_0000_0000,
    0xbfe0_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x4000_0000_0000_0000,
    0xc000_0000_0000_0000,
    0x4010_0000_0000_0000,
    0xc010_0000_0000_0000,
    0x3fc4_5f30_6dc9_c882,
];

/// Resolves a 9-bit source code (`lit` is the literal dword, if any).
pub fn src_of(code: u32, lit: u32) -> Src {
    match code {
        0..=127 => Src::S(code as u8),
        128..=192 => Src::Int(code as i32 - 128),
        193..=208 => Src::Int(192 - code as i32),
        235..=239 => Src::Aperture(code as u8),
        240..=248 => Src::F((code - 240) as u8),
        251 => Src::Vccz,
        252 => Src::Execz,
        253 => Src::Scc,
        255 => Src::Lit(lit),
        256..=511 => Src::V((code - 256) as u16),
        _ => Src::None,
    }
}

/// Comparison condition of `s_cmp*`, `v_cmp*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Cond {
    #[default]
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Ne,
    Ge,
    T,
    /// Ordered / unordered (floats).
    O,
    U,
    /// Negated float compares (true if unordered): nge, nlg, ngt, nle, neq, nlt.
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
}

/// Operand type of a compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ty {
    #[default]
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
    U16,
    I16,
}

/// Width and extension of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Width {
    U8,
    I8,
    U16,
    I16,
    /// `n` dwords.
    #[default]
    D1,
    D2,
    D3,
    D4,
}

impl Width {
    pub fn bytes(self) -> usize {
        match self {
            Width::U8 | Width::I8 => 1,
            Width::U16 | Width::I16 => 2,
            Width::D1 => 4,
            Width::D2 => 8,
            Width::D3 => 12,
            Width::D4 => 16,
        }
    }
    pub fn dwords(self) -> usize {
        self.bytes().div_ceil(4)
    }
}

/// Read-modify-write operation of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Atomic {
    #[default]
    Add,
    Sub,
    Swap,
    CmpSwap,
    SMin,
    UMin,
    SMax,
    UMax,
    And,
    Or,
    Xor,
    Inc,
    Dec,
    AddF32,
    AddF64,
    /// Float min / max as the ISA's pseudo-code has them: the new value
    /// replaces the old only when it compares less (greater).
    MinF32,
    MaxF32,
    MinF64,
    MaxF64,
    /// Two f16 additions, one per half.
    PkAddF16,
}

macro_rules! ops {
    ($($v:ident = $n:literal),* $(,)?) => {
        /// What an instruction does. Families that differ only in data (compares,
        /// memory widths) share a variant; [`Inst`] carries the data.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op {
            Unimplemented,
            /// `v_cmp*`, `v_cmpx*`, `v_cmp_class*`: see `Inst::ty`, `Inst::cond`.
            VCmp,
            VCmpx,
            VCmpClass,
            /// `s_cmp*`, `s_cmpk*`.
            SCmp,
            /// Memory: width and atomic kind in `Inst::mem`, `Inst::atomic`.
            GlobalLoad, GlobalStore, GlobalAtomic,
            FlatLoad, FlatStore, FlatAtomic,
            ScratchLoad, ScratchStore,
            BufLoad, BufStore,
            DsRead, DsRead2, DsWrite, DsWrite2, DsAtomic,
            SLoad,
            /// `s_atomic_*`: see `Inst::atomic`, `Inst::wide`, `Inst::ret`.
            SAtomic,
            $($v),*
        }
        fn by_name(n: &str) -> Op {
            match n { $($n => Op::$v,)* _ => Op::Unimplemented }
        }
    }
}

ops! {
    // SOP2
    SAddU32 = "s_add_u32", SSubU32 = "s_sub_u32", SAddI32 = "s_add_i32", SSubI32 = "s_sub_i32",
    SAddcU32 = "s_addc_u32", SSubbU32 = "s_subb_u32",
    SMinI32 = "s_min_i32", SMinU32 = "s_min_u32", SMaxI32 = "s_max_i32", SMaxU32 = "s_max_u32",
    SCselectB32 = "s_cselect_b32", SCselectB64 = "s_cselect_b64",
    SAndB32 = "s_and_b32", SAndB64 = "s_and_b64", SOrB32 = "s_or_b32", SOrB64 = "s_or_b64",
    SXorB32 = "s_xor_b32", SXorB64 = "s_xor_b64", SAndn2B32 = "s_andn2_b32", SAndn2B64 = "s_andn2_b64",
    SOrn2B32 = "s_orn2_b32", SOrn2B64 = "s_orn2_b64", SNandB64 = "s_nand_b64", SNorB64 = "s_nor_b64",
    SLshlB32 = "s_lshl_b32", SLshlB64 = "s_lshl_b64", SLshrB32 = "s_lshr_b32", SLshrB64 = "s_lshr_b64",
    SAshrI32 = "s_ashr_i32", SAshrI64 = "s_ashr_i64", SBfmB32 = "s_bfm_b32", SMulI32 = "s_mul_i32",
    SBfeU32 = "s_bfe_u32", SBfeI32 = "s_bfe_i32", SBfeU64 = "s_bfe_u64", SBfeI64 = "s_bfe_i64",
    SMulHiU32 = "s_mul_hi_u32", SMulHiI32 = "s_mul_hi_i32",
    SLshl1AddU32 = "s_lshl1_add_u32", SLshl2AddU32 = "s_lshl2_add_u32",
    SLshl3AddU32 = "s_lshl3_add_u32", SLshl4AddU32 = "s_lshl4_add_u32",
    SPackLlB32B16 = "s_pack_ll_b32_b16",
    // SOPK
    SMovkI32 = "s_movk_i32", SAddkI32 = "s_addk_i32", SMulkI32 = "s_mulk_i32",
    SGetregB32 = "s_getreg_b32", SSetregB32 = "s_setreg_b32", SSetregImm32B32 = "s_setreg_imm32_b32",
    // SOP1
    SMovB32 = "s_mov_b32", SMovB64 = "s_mov_b64", SCmovB32 = "s_cmov_b32", SCmovB64 = "s_cmov_b64",
    SNotB32 = "s_not_b32", SNotB64 = "s_not_b64", SBrevB32 = "s_brev_b32",
    SBcnt1I32B32 = "s_bcnt1_i32_b32", SBcnt1I32B64 = "s_bcnt1_i32_b64",
    SFf1I32B32 = "s_ff1_i32_b32", SFf1I32B64 = "s_ff1_i32_b64", SFlbitI32B32 = "s_flbit_i32_b32",
    SSextI32I8 = "s_sext_i32_i8", SSextI32I16 = "s_sext_i32_i16", SAbsI32 = "s_abs_i32",
    SGetpcB64 = "s_getpc_b64", SSetpcB64 = "s_setpc_b64", SSwappcB64 = "s_swappc_b64",
    SAndSaveexecB64 = "s_and_saveexec_b64", SOrSaveexecB64 = "s_or_saveexec_b64",
    SXorSaveexecB64 = "s_xor_saveexec_b64", SAndn2SaveexecB64 = "s_andn2_saveexec_b64",
    // SOPP
    SNop = "s_nop", SEndpgm = "s_endpgm", SBranch = "s_branch",
    SCbranchScc0 = "s_cbranch_scc0", SCbranchScc1 = "s_cbranch_scc1",
    SCbranchVccz = "s_cbranch_vccz", SCbranchVccnz = "s_cbranch_vccnz",
    SCbranchExecz = "s_cbranch_execz", SCbranchExecnz = "s_cbranch_execnz",
    SBarrier = "s_barrier", SWaitcnt = "s_waitcnt", STrap = "s_trap", SSleep = "s_sleep",
    SSetprio = "s_setprio", SIcacheInv = "s_icache_inv", SDcacheWb = "s_dcache_wb",
    SSendmsg = "s_sendmsg", STtracedata = "s_ttracedata",
    // VOP2
    VCndmaskB32 = "v_cndmask_b32", VAddF32 = "v_add_f32", VSubF32 = "v_sub_f32", VSubrevF32 = "v_subrev_f32",
    VMulF32 = "v_mul_f32", VMinF32 = "v_min_f32", VMaxF32 = "v_max_f32",
    VMulI32I24 = "v_mul_i32_i24", VMulU32U24 = "v_mul_u32_u24",
    VMinI32 = "v_min_i32", VMaxI32 = "v_max_i32", VMinU32 = "v_min_u32", VMaxU32 = "v_max_u32",
    VLshrrevB32 = "v_lshrrev_b32", VAshrrevI32 = "v_ashrrev_i32", VLshlrevB32 = "v_lshlrev_b32",
    VAndB32 = "v_and_b32", VOrB32 = "v_or_b32", VXorB32 = "v_xor_b32",
    VMacF32 = "v_mac_f32", VFmacF32 = "v_fmac_f32", VFmacF64 = "v_fmac_f64",
    VAddCoU32 = "v_add_co_u32", VSubCoU32 = "v_sub_co_u32", VSubrevCoU32 = "v_subrev_co_u32",
    VAddcCoU32 = "v_addc_co_u32", VSubbCoU32 = "v_subb_co_u32", VSubbrevCoU32 = "v_subbrev_co_u32",
    VAddU32 = "v_add_u32", VSubU32 = "v_sub_u32", VSubrevU32 = "v_subrev_u32",
    VLdexpF32 = "v_ldexp_f32", VMadmkF32 = "v_madmk_f32", VMadakF32 = "v_madak_f32",
    // VOP1
    VMovB32 = "v_mov_b32", VReadfirstlaneB32 = "v_readfirstlane_b32",
    VCvtF32I32 = "v_cvt_f32_i32", VCvtF32U32 = "v_cvt_f32_u32", VCvtU32F32 = "v_cvt_u32_f32",
    VCvtI32F32 = "v_cvt_i32_f32", VCvtF64F32 = "v_cvt_f64_f32", VCvtF32F64 = "v_cvt_f32_f64",
    VCvtF64I32 = "v_cvt_f64_i32", VCvtF64U32 = "v_cvt_f64_u32", VCvtI32F64 = "v_cvt_i32_f64",
    VCvtU32F64 = "v_cvt_u32_f64",
    VRcpF32 = "v_rcp_f32", VRcpIflagF32 = "v_rcp_iflag_f32", VRsqF32 = "v_rsq_f32", VSqrtF32 = "v_sqrt_f32",
    VRcpF64 = "v_rcp_f64", VRsqF64 = "v_rsq_f64", VSqrtF64 = "v_sqrt_f64",
    VNotB32 = "v_not_b32", VBfrevB32 = "v_bfrev_b32", VFfbhU32 = "v_ffbh_u32", VFfblB32 = "v_ffbl_b32",
    VFractF32 = "v_fract_f32", VTruncF32 = "v_trunc_f32", VFloorF32 = "v_floor_f32", VCeilF32 = "v_ceil_f32",
    VRndneF32 = "v_rndne_f32", VExpF32 = "v_exp_f32", VLogF32 = "v_log_f32",
    VCvtF16F32 = "v_cvt_f16_f32", VCvtF32F16 = "v_cvt_f32_f16",
    // VOP3 only
    VMadU64U32 = "v_mad_u64_u32", VMadI64I32 = "v_mad_i64_i32", VMulLoU32 = "v_mul_lo_u32",
    VMulHiU32 = "v_mul_hi_u32", VMulHiI32 = "v_mul_hi_i32", VAdd3U32 = "v_add3_u32",
    VLshlAddU32 = "v_lshl_add_u32", VAddLshlU32 = "v_add_lshl_u32", VLshlOrB32 = "v_lshl_or_b32",
    VAndOrB32 = "v_and_or_b32", VOr3B32 = "v_or3_b32", VXadU32 = "v_xad_u32",
    VBfeU32 = "v_bfe_u32", VBfeI32 = "v_bfe_i32", VBfiB32 = "v_bfi_b32", VAlignbitB32 = "v_alignbit_b32",
    VFmaF32 = "v_fma_f32", VFmaF64 = "v_fma_f64", VAddF64 = "v_add_f64", VMulF64 = "v_mul_f64",
    VMinF64 = "v_min_f64", VMaxF64 = "v_max_f64", VLdexpF64 = "v_ldexp_f64",
    VLshlrevB64 = "v_lshlrev_b64", VLshrrevB64 = "v_lshrrev_b64", VAshrrevI64 = "v_ashrrev_i64",
    VReadlaneB32 = "v_readlane_b32", VWritelaneB32 = "v_writelane_b32",
    VMbcntLoU32B32 = "v_mbcnt_lo_u32_b32", VMbcntHiU32B32 = "v_mbcnt_hi_u32_b32", VBcntU32B32 = "v_bcnt_u32_b32",
    VMin3I32 = "v_min3_i32", VMin3U32 = "v_min3_u32", VMax3I32 = "v_max3_i32", VMax3U32 = "v_max3_u32",
    VMin3F32 = "v_min3_f32", VMax3F32 = "v_max3_f32", VMadU32U24 = "v_mad_u32_u24",
    VPermB32 = "v_perm_b32", VMadF32 = "v_mad_f32",
    SMemtime = "s_memtime", SMemrealtime = "s_memrealtime",
    VDivScaleF32 = "v_div_scale_f32", VDivScaleF64 = "v_div_scale_f64",
    VDivFmasF32 = "v_div_fmas_f32", VDivFmasF64 = "v_div_fmas_f64",
    VDivFixupF32 = "v_div_fixup_f32", VDivFixupF64 = "v_div_fixup_f64",
    // VOP3P / MAI
    VAccvgprReadB32 = "v_accvgpr_read_b32", VAccvgprWriteB32 = "v_accvgpr_write_b32",
    VAccvgprMovB32 = "v_accvgpr_mov_b32", VMfmaF32_32x32x2f32 = "v_mfma_f32_32x32x2f32",
    VPkMovB32 = "v_pk_mov_b32", VPkAddF32 = "v_pk_add_f32", VPkMulF32 = "v_pk_mul_f32",
    VPkFmaF32 = "v_pk_fma_f32",
    // Added for librocsparse coverage.
    SBitcmp0B32 = "s_bitcmp0_b32", SBitcmp1B32 = "s_bitcmp1_b32",
    SBitcmp0B64 = "s_bitcmp0_b64", SBitcmp1B64 = "s_bitcmp1_b64",
    BufferWbinvl1 = "buffer_wbinvl1", BufferWbinvl1Vol = "buffer_wbinvl1_vol",
    // Cache maintenance of the memory model (system-scope release and
    // acquire): memory here is coherent, so they order nothing further.
    BufferWbl2 = "buffer_wbl2", BufferInvl2 = "buffer_invl2",
    // GWS (global wave sync): barriers and semaphores shared by the waves
    // of a dispatch (see `gws`).
    DsGwsInit = "ds_gws_init", DsGwsBarrier = "ds_gws_barrier",
    DsGwsSemaV = "ds_gws_sema_v", DsGwsSemaP = "ds_gws_sema_p",
    DsGwsSemaBr = "ds_gws_sema_br", DsGwsSemaReleaseAll = "ds_gws_sema_release_all",
    VAddU16 = "v_add_u16", VSubU16 = "v_sub_u16", VSubrevU16 = "v_subrev_u16",
    VMulLoU16 = "v_mul_lo_u16", VLshlrevB16 = "v_lshlrev_b16", VLshrrevB16 = "v_lshrrev_b16",
    VAshrrevI16 = "v_ashrrev_i16", VMinU16 = "v_min_u16", VMaxU16 = "v_max_u16",
    VMinI16 = "v_min_i16", VMaxI16 = "v_max_i16",
    VCvtF32Ubyte0 = "v_cvt_f32_ubyte0", VCvtF32Ubyte1 = "v_cvt_f32_ubyte1",
    VCvtF32Ubyte2 = "v_cvt_f32_ubyte2", VCvtF32Ubyte3 = "v_cvt_f32_ubyte3",
    VMadI32I24 = "v_mad_i32_i24", VMulHiU32U24 = "v_mul_hi_u32_u24", VMulHiI32I24 = "v_mul_hi_i32_i24",
    // DS (non-generic)
    DsBpermuteB32 = "ds_bpermute_b32", DsPermuteB32 = "ds_permute_b32", DsSwizzleB32 = "ds_swizzle_b32",
}

/// Memory instruction names: width suffix and atomic op.
fn mem_width(suffix: &str) -> Option<Width> {
    Some(match suffix {
        "ubyte" | "byte" | "u8" | "b8" => Width::U8,
        "sbyte" | "i8" => Width::I8,
        "ushort" | "short" | "u16" | "b16" => Width::U16,
        "sshort" | "i16" => Width::I16,
        "dword" | "b32" => Width::D1,
        "dwordx2" | "b64" => Width::D2,
        "dwordx3" | "b96" => Width::D3,
        "dwordx4" | "b128" => Width::D4,
        _ => return None,
    })
}

fn atomic_of(name: &str) -> Option<(Atomic, bool)> {
    // The float forms of gfx90a name their type.
    match name {
        "add_f64" => return Some((Atomic::AddF64, true)),
        "min_f64" => return Some((Atomic::MinF64, true)),
        "max_f64" => return Some((Atomic::MaxF64, true)),
        "pk_add_f16" => return Some((Atomic::PkAddF16, false)),
        _ => {}
    }
    // `_x2` suffixes select 64-bit forms.
    let (base, wide) = match name.strip_suffix("_x2") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let a = match base {
        "add" => Atomic::Add,
        "sub" => Atomic::Sub,
        "swap" => Atomic::Swap,
        "cmpswap" => Atomic::CmpSwap,
        "smin" => Atomic::SMin,
        "umin" => Atomic::UMin,
        "smax" => Atomic::SMax,
        "umax" => Atomic::UMax,
        "and" => Atomic::And,
        "or" => Atomic::Or,
        "xor" => Atomic::Xor,
        "inc" => Atomic::Inc,
        "dec" => Atomic::Dec,
        "add_f32" => Atomic::AddF32,
        _ => return None,
    };
    Some((a, wide))
}

/// A DS atomic by name (without `ds_`): the operation, whether it returns
/// the old value (`_rtn`), and whether it is 64-bit.
fn ds_atomic_of(name: &str) -> Option<(Atomic, bool, bool)> {
    let (rest, ty) = name.rsplit_once('_')?;
    let wide = match ty {
        "u32" | "i32" | "b32" | "f32" => false,
        "u64" | "i64" | "b64" | "f64" => true,
        _ => return None,
    };
    let (base, ret) = match rest.strip_suffix("_rtn") {
        Some(b) => (b, true),
        None => (rest, false),
    };
    let (signed, float) = (ty.starts_with('i'), ty.starts_with('f'));
    let a = match (base, float) {
        ("add", false) => Atomic::Add,
        ("add", true) if wide => Atomic::AddF64,
        ("add", true) => Atomic::AddF32,
        ("min", true) if wide => Atomic::MinF64,
        ("min", true) => Atomic::MinF32,
        ("max", true) if wide => Atomic::MaxF64,
        ("max", true) => Atomic::MaxF32,
        ("sub", false) => Atomic::Sub,
        ("min", false) if signed => Atomic::SMin,
        ("min", false) => Atomic::UMin,
        ("max", false) if signed => Atomic::SMax,
        ("max", false) => Atomic::UMax,
        ("and", false) => Atomic::And,
        ("or", false) => Atomic::Or,
        ("xor", false) => Atomic::Xor,
        ("inc", false) => Atomic::Inc,
        ("dec", false) => Atomic::Dec,
        ("wrxchg", false) => Atomic::Swap,
        // Compare-store: data0 is the compare value, data1 the new one
        // (ds_kind swaps them into the cmpswap order).
        ("cmpst", false) => Atomic::CmpSwap,
        _ => return None,
    };
    Some((a, ret, wide))
}

fn cond_of(s: &str) -> Option<Cond> {
    Some(match s {
        "f" => Cond::F,
        "lt" => Cond::Lt,
        "eq" => Cond::Eq,
        "le" => Cond::Le,
        "gt" => Cond::Gt,
        "lg" | "ne" => Cond::Ne,
        "ge" => Cond::Ge,
        "t" | "tru" => Cond::T,
        "o" => Cond::O,
        "u" => Cond::U,
        "nge" => Cond::Nge,
        "nlg" => Cond::Nlg,
        "ngt" => Cond::Ngt,
        "nle" => Cond::Nle,
        "neq" => Cond::Neq,
        "nlt" => Cond::Nlt,
        _ => return None,
    })
}

fn ty_of(s: &str) -> Option<Ty> {
    Some(match s {
        "u32" => Ty::U32,
        "i32" => Ty::I32,
        "u64" => Ty::U64,
        "i64" => Ty::I64,
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        "u16" => Ty::U16,
        "i16" => Ty::I16,
        _ => return None,
    })
}

/// One predecoded instruction.
#[derive(Clone, Copy, Debug)]
pub struct Inst {
    pub op: Op,
    pub encoding: Encoding,
    /// inlay-isa opcode id (for per-opcode statistics).
    pub opcode: u16,
    /// Byte offset of the instruction in the loaded image.
    pub addr: u64,
    pub len: u8,
    /// Vector destination, or scalar destination code for SALU/SMEM/readlane.
    pub dst: u16,
    /// Scalar destination of VOP3b carry-outs and VOPC e64 (106 = vcc).
    pub sdst: u8,
    pub src: [Src; 3],
    /// SOPP/SOPK immediate, memory offset (signed), DS offset0.
    pub imm: i32,
    /// DS offset1, SMEM soffset code (or 0xff for none).
    pub imm2: u32,
    /// Branch target as an instruction index (u32::MAX: not an instruction).
    pub target: u32,
    /// VOP3 abs / neg bits per source; clamp; omod.
    pub abs: u8,
    pub neg: u8,
    pub clamp: bool,
    pub omod: u8,
    /// VOP3P: which half of each source feeds the low / high result, and
    /// the negation of the high half (`neg` negates the low half).
    pub opsel: u8,
    pub opsel_hi: u8,
    pub neg_hi: u8,
    /// DPP control word (0 = no DPP): bits 0..9 ctrl, bit 9 bound_ctrl, 12..16 bank mask, 16..20 row mask.
    pub dpp: u32,
    pub ty: Ty,
    pub cond: Cond,
    pub width: Width,
    pub atomic: Atomic,
    /// Atomic returns the old value (glc) / 64-bit atomic.
    pub ret: bool,
    pub wide: bool,
    /// SDWA dword with [`SDWA_PRESENT`] set (0 = no SDWA): operand and
    /// destination sub-dword selects.
    pub sdwa: u32,
    /// SMEM: dwords loaded.
    pub count: u8,
    /// MUBUF: offen / idxen.
    pub offen: bool,
    pub idxen: bool,
    /// Destination / data in AGPRs (gfx90a acc bit).
    pub acc: bool,
    /// A vector ALU instruction (VOP1/2/C/3/3P, DPP, SDWA): the executor
    /// runs it without going through the scalar and memory dispatch.
    pub valu: bool,
    /// Registers each source operand spans (0: no such operand), from the
    /// instruction tables: a constant in a 1-register slot is 32-bit even
    /// where the other operands are 64-bit (the shift of v_lshlrev_b64).
    pub src_regs: [u8; 3],
}

impl Default for Inst {
    fn default() -> Self {
        Inst {
            op: Op::Unimplemented,
            encoding: Encoding::Invalid,
            opcode: u16::MAX,
            addr: 0,
            len: 4,
            dst: 0,
            sdst: 106,
            src: [Src::None; 3],
            imm: 0,
            imm2: 0,
            target: u32::MAX,
            abs: 0,
            neg: 0,
            clamp: false,
            omod: 0,
            opsel: 0,
            opsel_hi: 0,
            neg_hi: 0,
            dpp: 0,
            ty: Ty::U32,
            cond: Cond::F,
            width: Width::D1,
            atomic: Atomic::Add,
            ret: false,
            wide: false,
            sdwa: 0,
            count: 0,
            offen: false,
            idxen: false,
            acc: false,
            valu: false,
            src_regs: [0; 3],
        }
    }
}

fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

/// Builds the executable form of one decoded instruction at `addr`.
/// Branch targets are left as byte addresses in `imm` for the caller to resolve.
pub fn predecode(i: &Instruction, addr: u64) -> Inst {
    let mut p = Inst {
        encoding: i.encoding(),
        addr,
        len: i.len() as u8,
        ..Inst::default()
    };
    let Some(opc) = i.opcode() else {
        return p;
    };
    p.opcode = opc.0;
    let name = opc.name();
    let w = i.words();
    let w0 = w[0];
    let w1 = w.get(1).copied().unwrap_or(0);
    let f = |fl: Field| i.field(fl);
    p.op = by_name(name);
    for slot in i.slots() {
        if let Slot::Reg { field, regs, .. } = *slot {
            let k = match field {
                Field::Src0 | Field::Ssrc0 => 0,
                Field::Src1 | Field::Vsrc1 | Field::Ssrc1 => 1,
                Field::Src2 => 2,
                _ => continue,
            };
            p.src_regs[k] = regs;
        }
    }
    p.valu = matches!(
        i.encoding(),
        Encoding::Vop1
            | Encoding::Vop2
            | Encoding::Vopc
            | Encoding::Vop3
            | Encoding::Vop3p
            | Encoding::Vop1Dpp
            | Encoding::Vop2Dpp
            | Encoding::VopcDpp
            | Encoding::Vop1Sdwa
            | Encoding::Vop2Sdwa
            | Encoding::VopcSdwa
    );
    match i.encoding() {
        Encoding::Sop2 | Encoding::Sop1 => {
            p.dst = f(Field::Sdst) as u16;
            p.src[0] = src_of(f(Field::Ssrc0), w1);
            p.src[1] = src_of(f(Field::Ssrc1), w1);
        }
        Encoding::Sopc => {
            p.src[0] = src_of(f(Field::Ssrc0), w1);
            p.src[1] = src_of(f(Field::Ssrc1), w1);
            if let Some(rest) = name.strip_prefix("s_cmp_") {
                if let Some((c, t)) = rest.split_once('_') {
                    if let (Some(c), Some(t)) = (cond_of(c), ty_of(t)) {
                        p.op = Op::SCmp;
                        p.cond = c;
                        p.ty = t;
                    }
                }
            }
        }
        Encoding::Sopk => {
            p.dst = f(Field::Sdst) as u16;
            let k = f(Field::Simm16);
            p.imm = sext(k, 16);
            // s_setreg: the sdst field names the source; imm32 form has a literal.
            p.imm2 = k;
            p.src[0] = match p.op {
                Op::SSetregImm32B32 => Src::Lit(w1),
                _ => Src::S(p.dst as u8),
            };
            if let Some(rest) = name.strip_prefix("s_cmpk_") {
                if let Some((c, t)) = rest.split_once('_') {
                    if let (Some(c), Some(t)) = (cond_of(c), ty_of(t)) {
                        p.op = Op::SCmp;
                        p.cond = c;
                        p.ty = t;
                        // SOPK compares: sdst field is the register, imm the constant.
                        p.src[0] = Src::S(p.dst as u8);
                        p.src[1] = match t {
                            Ty::U32 => Src::Lit(k),
                            _ => Src::Lit(sext(k, 16) as u32),
                        };
                    }
                }
            }
        }
        Encoding::Sopp => {
            p.imm = sext(w0 & 0xffff, 16);
        }
        Encoding::Smem => {
            if matches!(p.op, Op::SMemtime | Op::SMemrealtime) {
                p.dst = f(Field::Sdata) as u16;
            }
            if let Some((a, wide)) = name.strip_prefix("s_atomic_").and_then(atomic_of) {
                p.op = if matches!(
                    a,
                    Atomic::AddF32
                        | Atomic::AddF64
                        | Atomic::MinF32
                        | Atomic::MaxF32
                        | Atomic::MinF64
                        | Atomic::MaxF64
                        | Atomic::PkAddF16
                ) {
                    Op::Unimplemented
                } else {
                    Op::SAtomic
                };
                p.atomic = a;
                p.wide = wide;
                p.ret = w0 >> 16 & 1 != 0; // glc: sdata receives the old value
                p.dst = f(Field::Sdata) as u16;
                p.src[0] = Src::S(f(Field::Sbase) as u8);
                p.imm2 = 0xff;
                if w0 >> 17 & 1 != 0 {
                    p.imm = sext(w1 & 0x1f_ffff, 21);
                    if w0 >> 14 & 1 != 0 {
                        p.imm2 = w1 >> 25;
                    }
                } else {
                    p.imm2 = w1 & 0x7f;
                }
            }
            if let Some(suf) = name.strip_prefix("s_load_") {
                p.op = Op::SLoad;
                p.dst = f(Field::Sdata) as u16;
                p.src[0] = Src::S(f(Field::Sbase) as u8);
                p.imm2 = 0xff;
                let imm_bit = w0 >> 17 & 1 != 0;
                let soe = w0 >> 14 & 1 != 0;
                if imm_bit {
                    p.imm = sext(w1 & 0x1f_ffff, 21);
                    if soe {
                        p.imm2 = w1 >> 25;
                    }
                } else {
                    p.imm2 = w1 & 0x7f;
                }
                p.count = match suf {
                    "dword" => 1,
                    "dwordx2" => 2,
                    "dwordx4" => 4,
                    "dwordx8" => 8,
                    "dwordx16" => 16,
                    _ => {
                        p.op = Op::Unimplemented;
                        0
                    }
                };
            }
        }
        Encoding::Vop1
        | Encoding::Vop2
        | Encoding::Vopc
        | Encoding::Vop1Dpp
        | Encoding::Vop2Dpp
        | Encoding::VopcDpp
        | Encoding::Vop1Sdwa
        | Encoding::Vop2Sdwa
        | Encoding::VopcSdwa => {
            p.dst = f(Field::Vdst) as u16;
            p.src[0] = src_of(f(Field::Src0), w1);
            p.src[1] = src_of(f(Field::Vsrc1), 0);
            match i.encoding() {
                Encoding::Vop2 | Encoding::Vop2Dpp | Encoding::Vop2Sdwa => {
                    // VOP2 carry-in reads vcc; fmac/mac accumulate into vdst.
                    p.src[2] = match p.op {
                        Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32 | Op::VCndmaskB32 => {
                            Src::S(106)
                        }
                        Op::VFmacF32 | Op::VFmacF64 | Op::VMacF32 => Src::V(p.dst),
                        _ => Src::None,
                    };
                    if i.encoding() == Encoding::Vop2 && w0 & 0x1ff == 255 {
                        p.src[0] = Src::Lit(w1);
                    }
                    // The constant K of madmk (S0·K + S1) and madak (S0·S1 + K).
                    match p.op {
                        Op::VMadmkF32 => p.src = [p.src[0], Src::Lit(w1), p.src[1]],
                        Op::VMadakF32 => p.src[2] = Src::Lit(w1),
                        _ => {}
                    }
                }
                _ => {}
            }
            if i.encoding().is_dpp() {
                p.dpp = (w1 >> 8 & 0x1ff)
                    | (w1 >> 19 & 1) << 9
                    | (w1 >> 24 & 0xf) << 12
                    | (w1 >> 28 & 0xf) << 16
                    | 1 << 31;
                p.neg = (w1 >> 20 & 1) as u8 | ((w1 >> 22 & 1) as u8) << 1;
                p.abs = (w1 >> 21 & 1) as u8 | ((w1 >> 23 & 1) as u8) << 1;
            }
            if i.encoding().is_sdwa() {
                p.src[0] = src_of(f(Field::Src0), 0);
                p.sdwa = w1 | SDWA_PRESENT;
                p.neg = (w1 >> 20 & 1) as u8 | ((w1 >> 28 & 1) as u8) << 1;
                p.abs = (w1 >> 21 & 1) as u8 | ((w1 >> 29 & 1) as u8) << 1;
                p.clamp = w1 >> 13 & 1 != 0;
                p.omod = (w1 >> 14 & 3) as u8;
            }
        }
        Encoding::Vop3 => {
            p.dst = (w0 & 0xff) as u16;
            p.sdst = (w0 >> 8 & 0x7f) as u8;
            p.src = [
                src_of(w1 & 0x1ff, 0),
                src_of(w1 >> 9 & 0x1ff, 0),
                src_of(w1 >> 18 & 0x1ff, 0),
            ];
            // VOP3b (carry-outs, v_div_scale, v_mad_u64_u32) has its SGPR
            // destination where VOP3a has abs: no abs bits there.
            let vop3b = i.slots().iter().any(|s| {
                matches!(
                    s,
                    Slot::Reg {
                        field: Field::Sdst,
                        ..
                    }
                )
            });
            p.abs = if vop3b { 0 } else { (w0 >> 8 & 7) as u8 };
            p.neg = (w1 >> 29 & 7) as u8;
            p.clamp = w0 >> 15 & 1 != 0;
            p.omod = (w1 >> 27 & 3) as u8;
            // VOP3-encoded VOP2 carry and cndmask ops read their mask from
            // src2 as decoded; fmac/mac accumulate into vdst.
            if matches!(p.op, Op::VFmacF32 | Op::VFmacF64 | Op::VMacF32) {
                p.src[2] = Src::V(p.dst);
            }
        }
        Encoding::Vop3p => {
            p.dst = (w0 & 0xff) as u16;
            p.src = [
                src_of(w1 & 0x1ff, 0),
                src_of(w1 >> 9 & 0x1ff, 0),
                src_of(w1 >> 18 & 0x1ff, 0),
            ];
            p.opsel = (w0 >> 11 & 7) as u8;
            p.opsel_hi = (w1 >> 27 & 3) as u8 | ((w0 >> 14 & 1) as u8) << 2;
            p.neg = (w1 >> 29 & 7) as u8;
            p.neg_hi = (w0 >> 8 & 7) as u8;
            p.clamp = w0 >> 15 & 1 != 0;
            if name.starts_with("v_mfma") {
                // acc_cd: C and D in AGPRs; src0/src1 acc bits in w1[27], w1[28].
                p.acc = w0 >> 15 & 1 != 0;
                for (k, bit) in [(0usize, 27u32), (1, 28)] {
                    if w1 >> bit & 1 != 0 {
                        if let Src::V(n) = p.src[k] {
                            p.src[k] = Src::A(n);
                        }
                    }
                }
                if p.acc {
                    if let Src::V(n) = p.src[2] {
                        p.src[2] = Src::A(n);
                    }
                }
            }
            if p.op == Op::VAccvgprReadB32 || p.op == Op::VAccvgprMovB32 {
                if let Src::V(n) = p.src[0] {
                    p.src[0] = Src::A(n);
                }
            }
        }
        Encoding::Ds => {
            p.dst = (w1 >> 24) as u16;
            p.src[0] = Src::V((w1 & 0xff) as u16);
            p.src[1] = Src::V((w1 >> 8 & 0xff) as u16);
            p.src[2] = Src::V((w1 >> 16 & 0xff) as u16);
            p.imm = (w0 & 0xff) as i32;
            p.imm2 = w0 >> 8 & 0xff;
            p.acc = w0 >> 25 & 1 != 0;
            ds_kind(name, &mut p);
        }
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            p.dst = (w1 >> 24) as u16;
            p.src[0] = Src::V((w1 & 0xff) as u16);
            p.src[1] = Src::V((w1 >> 8 & 0xff) as u16);
            let saddr = w1 >> 16 & 0x7f;
            p.src[2] = if saddr == 0x7f || i.encoding() == Encoding::Flat {
                Src::None
            } else {
                Src::S(saddr as u8)
            };
            p.imm = if i.encoding() == Encoding::Flat {
                (w0 & 0xfff) as i32
            } else {
                sext(w0 & 0x1fff, 13)
            };
            p.ret = w0 >> 16 & 1 != 0;
            p.acc = w1 >> 23 & 1 != 0;
            flat_kind(name, i.encoding(), &mut p);
        }
        Encoding::Mubuf => {
            p.imm = (w0 & 0xfff) as i32;
            p.offen = w0 >> 12 & 1 != 0;
            p.idxen = w0 >> 13 & 1 != 0;
            p.ret = w0 >> 14 & 1 != 0;
            p.src[0] = Src::V((w1 & 0xff) as u16);
            p.src[1] = Src::S((w1 >> 16 & 0x1f) as u8 * 4);
            p.src[2] = src_of(w1 >> 24, 0);
            p.dst = (w1 >> 8 & 0xff) as u16;
            p.acc = w1 >> 23 & 1 != 0;
            if let Some(s) = name.strip_prefix("buffer_load_") {
                if let Some(wd) = mem_width(s) {
                    p.op = Op::BufLoad;
                    p.width = wd;
                }
            } else if let Some(s) = name.strip_prefix("buffer_store_") {
                if let Some(wd) = mem_width(s) {
                    p.op = Op::BufStore;
                    p.width = wd;
                }
            }
        }
        _ => {}
    }
    // Compares in every encoding.
    if let Some(rest) = name
        .strip_prefix("v_cmpx_")
        .map(|r| (r, true))
        .or(name.strip_prefix("v_cmp_").map(|r| (r, false)))
    {
        let (rest, x) = rest;
        if let Some((c, t)) = rest.split_once('_') {
            let ty = ty_of(t);
            if c == "class" {
                if let Some(t) = ty {
                    p.op = Op::VCmpClass;
                    p.ty = t;
                    p.ret = x;
                }
            } else if let (Some(c), Some(t)) = (cond_of(c), ty) {
                p.op = if x { Op::VCmpx } else { Op::VCmp };
                p.cond = c;
                p.ty = t;
            }
        }
        if i.encoding() == Encoding::Vop3 {
            p.sdst = (w0 & 0xff) as u8;
        } else if i.encoding() == Encoding::VopcSdwa && w1 >> 15 & 1 != 0 {
            // SDWA compares name their SGPR-pair destination (sd set) or write VCC.
            p.sdst = (w1 >> 8 & 0x7f) as u8;
        } else {
            p.sdst = 106;
        }
        if i.encoding() == Encoding::Vopc && w0 & 0x1ff == 255 {
            p.src[0] = Src::Lit(w1);
        }
    }
    // VOP1/VOP2 with a literal src0 (decoder said 8 bytes).
    if matches!(i.encoding(), Encoding::Vop1) && w0 & 0x1ff == 255 {
        p.src[0] = Src::Lit(w1);
    }
    // Loads into LDS and GDS are not modelled: they fault if run (GWS
    // instructions always carry the gds bit).
    let to_lds = match i.encoding() {
        Encoding::Mubuf => w0 >> 16 & 1 != 0,
        Encoding::Flat | Encoding::Global | Encoding::Scratch => w0 >> 13 & 1 != 0,
        Encoding::Ds => w0 >> 16 & 1 != 0 && !is_gws(p.op),
        _ => false,
    };
    if to_lds {
        p.op = Op::Unimplemented;
    }
    p
}

/// The GWS instructions (global wave sync).
pub fn is_gws(op: Op) -> bool {
    matches!(
        op,
        Op::DsGwsInit
            | Op::DsGwsBarrier
            | Op::DsGwsSemaV
            | Op::DsGwsSemaP
            | Op::DsGwsSemaBr
            | Op::DsGwsSemaReleaseAll
    )
}

/// Marks `Inst::sdwa` as present (the SDWA dword itself may be 0).
pub const SDWA_PRESENT: u32 = 1 << 22;

fn ds_kind(name: &str, p: &mut Inst) {
    if matches!(
        p.op,
        Op::DsBpermuteB32
            | Op::DsPermuteB32
            | Op::DsSwizzleB32
            | Op::DsGwsInit
            | Op::DsGwsBarrier
            | Op::DsGwsSemaV
            | Op::DsGwsSemaP
            | Op::DsGwsSemaBr
            | Op::DsGwsSemaReleaseAll
    ) {
        return;
    }
    if let Some(s) = name.strip_prefix("ds_read2st64_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsRead2;
            p.width = wd;
            p.wide = true;
        }
    } else if let Some(s) = name.strip_prefix("ds_read2_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsRead2;
            p.width = wd;
        }
    } else if let Some(s) = name.strip_prefix("ds_write2st64_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsWrite2;
            p.width = wd;
            p.wide = true;
        }
    } else if let Some(s) = name.strip_prefix("ds_write2_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsWrite2;
            p.width = wd;
        }
    } else if let Some(s) = name.strip_prefix("ds_read_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsRead;
            p.width = wd;
        }
    } else if let Some(s) = name.strip_prefix("ds_write_") {
        if let Some(wd) = mem_width(s) {
            p.op = Op::DsWrite;
            p.width = wd;
        }
    } else if let Some(s) = name.strip_prefix("ds_") {
        if let Some((a, ret, wide)) = ds_atomic_of(s) {
            p.op = Op::DsAtomic;
            p.atomic = a;
            p.ret = ret;
            p.wide = wide;
            if s.starts_with("cmpst") {
                // Executed as cmpswap: new value first, compare value second.
                p.src.swap(1, 2);
            }
        }
    }
}

fn flat_kind(name: &str, enc: Encoding, p: &mut Inst) {
    let Some((seg, rest)) = name.split_once('_') else {
        return;
    };
    let (load, store, atomic) = match enc {
        Encoding::Global => (Op::GlobalLoad, Op::GlobalStore, Op::GlobalAtomic),
        Encoding::Flat => (Op::FlatLoad, Op::FlatStore, Op::FlatAtomic),
        _ => (Op::ScratchLoad, Op::ScratchStore, Op::Unimplemented),
    };
    let _ = seg;
    if let Some(s) = rest.strip_prefix("load_") {
        if let Some(wd) = mem_width(s) {
            p.op = load;
            p.width = wd;
        }
    } else if let Some(s) = rest.strip_prefix("store_") {
        if let Some(wd) = mem_width(s) {
            p.op = store;
            p.width = wd;
        }
    } else if let Some(s) = rest.strip_prefix("atomic_") {
        if let Some((a, wide)) = atomic_of(s) {
            p.op = atomic;
            p.atomic = a;
            p.wide = wide;
        }
    }
}
