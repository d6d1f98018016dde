//! Per-target facts that are not per-opcode: which bits exist and how cache
//! policy bits are named. Data, so code never asks `if target == ...`.

use crate::model::Target;

pub struct TargetInfo {
    /// Memory instructions (DS, FLAT, MUBUF) can name AGPRs through an acc bit.
    pub acc_memory: bool,
    /// MAI instructions choose VGPR/AGPR for vdst and src2 by bit 15.
    pub acc_cd_bit: bool,
    /// Names of the cache-policy bits of memory instructions, in printed order:
    /// (bit 16 = glc/sc0, bit 17 = slc/nt, bit 25 of FLAT/MUBUF dword 0 = scc/sc1).
    pub cpol: [&'static str; 3],
    /// Scratch instructions use a VGPR address only when bit 13 (SVE) is set.
    pub scratch_sve: bool,
    /// DS instructions have a `gds` bit.
    pub ds_gds: bool,
    /// Buffer cache maintenance (wbl2, inv) takes the scope bits sc0/sc1;
    /// before gfx940 it takes no cache-policy bit at all.
    pub maintenance_scope: bool,
    /// The blgp field of the f64 MFMAs negates their sources (`neg:[...]`).
    pub mfma_f64_neg: bool,
    /// DPP controls 0x150-0x15F broadcast a lane of each row (`row_newbcast`).
    pub row_newbcast: bool,
}

static GFX908: TargetInfo = TargetInfo {
    acc_memory: false,
    acc_cd_bit: false,
    cpol: ["glc", "slc", ""],
    scratch_sve: false,
    ds_gds: true,
    maintenance_scope: false,
    mfma_f64_neg: false,
    row_newbcast: false,
};
static GFX90A: TargetInfo = TargetInfo {
    acc_memory: true,
    acc_cd_bit: true,
    cpol: ["glc", "slc", "scc"],
    scratch_sve: false,
    ds_gds: false,
    maintenance_scope: false,
    mfma_f64_neg: false,
    row_newbcast: true,
};
static GFX942: TargetInfo = TargetInfo {
    acc_memory: true,
    acc_cd_bit: true,
    cpol: ["sc0", "nt", "sc1"],
    scratch_sve: true,
    ds_gds: false,
    maintenance_scope: true,
    mfma_f64_neg: true,
    row_newbcast: true,
};

pub fn info(t: Target) -> &'static TargetInfo {
    match t {
        Target::Gfx908 => &GFX908,
        Target::Gfx90a => &GFX90A,
        Target::Gfx942 => &GFX942,
    }
}
