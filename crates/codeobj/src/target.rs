//! Target IDs: which processor (and which xnack/sramecc mode) a code object is for.
//!
//! Read from ELF `e_flags` (code object v4+ encoding) and printed exactly as LLVM
//! prints them, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`. Also parsed from
//! such strings, so that code objects can later be matched against agents.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::{Error, Result};

/// `EF_AMDGPU_MACH`: the low byte of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_FEATURE_XNACK_V4`: the two xnack bits.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4`: the two sramecc bits.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// `EF_AMDGPU_GENERIC_VERSION`: the generic-target version (code object v6).
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;

/// Which of the two target features a processor supports.
const XNACK: u8 = 1;
const SRAMECC: u8 = 2;

/// One processor: its `EF_AMDGPU_MACH_*` value, its name and the features it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mach {
    value: u8,
    name: &'static str,
    features: u8,
}

const fn m(value: u8, name: &'static str, features: u8) -> Mach {
    Mach {
        value,
        name,
        features,
    }
}

/// Every AMDGCN processor of LLVM's AMDGPUUsage table (values as in LLVM's ELF.h;
/// gfx950, gfx1153 and gfx9-4-generic are LLVM 20 additions; gfx117x, gfx125x,
/// gfx12-5-generic and gfx1310 are newer still, and their feature support is not
/// yet checked against an LLVM we can run, so none is assumed).
const MACHS: &[Mach] = &[
    m(0x20, "gfx600", 0),
    m(0x21, "gfx601", 0),
    m(0x3a, "gfx602", 0),
    m(0x22, "gfx700", 0),
    m(0x23, "gfx701", 0),
    m(0x24, "gfx702", 0),
    m(0x25, "gfx703", 0),
    m(0x26, "gfx704", 0),
    m(0x3b, "gfx705", 0),
    m(0x28, "gfx801", XNACK),
    m(0x29, "gfx802", 0),
    m(0x2a, "gfx803", 0),
    m(0x3c, "gfx805", 0),
    m(0x2b, "gfx810", XNACK),
    m(0x2c, "gfx900", XNACK),
    m(0x2d, "gfx902", XNACK),
    m(0x2e, "gfx904", XNACK),
    m(0x2f, "gfx906", XNACK | SRAMECC),
    m(0x30, "gfx908", XNACK | SRAMECC),
    m(0x31, "gfx909", XNACK),
    m(0x32, "gfx90c", XNACK),
    m(0x3f, "gfx90a", XNACK | SRAMECC),
    m(0x40, "gfx940", XNACK | SRAMECC),
    m(0x4b, "gfx941", XNACK | SRAMECC),
    m(0x4c, "gfx942", XNACK | SRAMECC),
    m(0x4f, "gfx950", XNACK | SRAMECC),
    m(0x33, "gfx1010", XNACK),
    m(0x34, "gfx1011", XNACK),
    m(0x35, "gfx1012", XNACK),
    m(0x42, "gfx1013", XNACK),
    m(0x36, "gfx1030", 0),
    m(0x37, "gfx1031", 0),
    m(0x38, "gfx1032", 0),
    m(0x39, "gfx1033", 0),
    m(0x3e, "gfx1034", 0),
    m(0x3d, "gfx1035", 0),
    m(0x45, "gfx1036", 0),
    m(0x41, "gfx1100", 0),
    m(0x46, "gfx1101", 0),
    m(0x47, "gfx1102", 0),
    m(0x44, "gfx1103", 0),
    m(0x43, "gfx1150", 0),
    m(0x4a, "gfx1151", 0),
    m(0x55, "gfx1152", 0),
    m(0x58, "gfx1153", 0),
    m(0x48, "gfx1200", 0),
    m(0x4e, "gfx1201", 0),
    m(0x5d, "gfx1170", 0),
    m(0x5e, "gfx1171", 0),
    m(0x5c, "gfx1172", 0),
    m(0x49, "gfx1250", 0),
    m(0x5a, "gfx1251", 0),
    m(0x50, "gfx1310", 0),
    m(0x51, "gfx9-generic", XNACK),
    m(0x5f, "gfx9-4-generic", XNACK | SRAMECC),
    m(0x52, "gfx10-1-generic", XNACK),
    m(0x53, "gfx10-3-generic", 0),
    m(0x54, "gfx11-generic", 0),
    m(0x59, "gfx12-generic", 0),
    m(0x5b, "gfx12-5-generic", 0),
];

/// A processor known to this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Processor(u8);

impl Processor {
    /// The processor with this `EF_AMDGPU_MACH_*` value, if it is an AMDGCN processor.
    pub fn from_mach(value: u32) -> Option<Processor> {
        MACHS
            .iter()
            .find(|m| u32::from(m.value) == value)
            .map(|m| Processor(m.value))
    }

    /// Every processor this crate knows.
    pub fn all() -> impl Iterator<Item = Processor> {
        MACHS.iter().map(|m| Processor(m.value))
    }

    /// The processor named `name` (`gfx90a`, `gfx9-generic`, ...).
    pub fn from_name(name: &str) -> Option<Processor> {
        MACHS
            .iter()
            .find(|m| m.name == name)
            .map(|m| Processor(m.value))
    }

    fn mach(self) -> Mach {
        // Processor values are only ever made from MACHS entries.
        MACHS
            .iter()
            .copied()
            .find(|m| m.value == self.0)
            .unwrap_or(m(self.0, "unknown", 0))
    }

    pub fn name(self) -> &'static str {
        self.mach().name
    }

    /// The `EF_AMDGPU_MACH_*` value.
    pub fn mach_value(self) -> u32 {
        u32::from(self.0)
    }

    pub fn supports_xnack(self) -> bool {
        self.mach().features & XNACK != 0
    }

    pub fn supports_sramecc(self) -> bool {
        self.mach().features & SRAMECC != 0
    }

    /// True for the `gfxN-generic` targets.
    pub fn is_generic(self) -> bool {
        self.name().ends_with("-generic")
    }

    /// The ISA family, which decides descriptor layouts and register granules.
    pub fn family(self) -> Family {
        let name = self.name();
        match name {
            "gfx90a" => Family::Gfx90a,
            "gfx940" | "gfx941" | "gfx942" | "gfx950" | "gfx9-4-generic" => Family::Gfx94x,
            _ if name.starts_with("gfx13") => Family::Gfx13,
            _ if name.starts_with("gfx12") => Family::Gfx12,
            _ if name.starts_with("gfx11") => Family::Gfx11,
            _ if name.starts_with("gfx10") => Family::Gfx10,
            _ if name.starts_with("gfx9") => Family::Gfx9,
            _ if name.starts_with("gfx8") => Family::Gfx8,
            _ if name.starts_with("gfx7") => Family::Gfx7,
            _ => Family::Gfx6,
        }
    }
}

impl Serialize for Processor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// ISA families whose kernel descriptor fields differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Gfx6,
    Gfx7,
    Gfx8,
    /// gfx900..gfx90c except gfx90a.
    Gfx9,
    Gfx90a,
    /// gfx940, gfx941, gfx942, gfx950.
    Gfx94x,
    Gfx10,
    Gfx11,
    Gfx12,
    Gfx13,
}

/// State of one target feature (xnack or sramecc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureState {
    /// The processor does not have the feature.
    Unsupported,
    /// Code works either way.
    Any,
    Off,
    On,
}

impl FeatureState {
    fn from_bits(bits: u32) -> FeatureState {
        match bits {
            0 => FeatureState::Unsupported,
            1 => FeatureState::Any,
            2 => FeatureState::Off,
            _ => FeatureState::On,
        }
    }

    fn to_bits(self) -> u32 {
        match self {
            FeatureState::Unsupported => 0,
            FeatureState::Any => 1,
            FeatureState::Off => 2,
            FeatureState::On => 3,
        }
    }

    /// True if code built with `self` may run where the feature is `actual`.
    pub fn compatible_with(self, actual: FeatureState) -> bool {
        matches!(self, FeatureState::Any | FeatureState::Unsupported) || self == actual
    }
}

/// A target ID: processor plus feature states (and, for generic targets, the generic version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TargetId {
    /// `EF_AMDGPU_GENERIC_VERSION` (code object v6 generic targets), 0 if absent.
    pub generic_version: u8,
    pub processor: Processor,
    pub sramecc: FeatureState,
    pub xnack: FeatureState,
}

impl TargetId {
    /// Decodes `e_flags` of a code object v4+ (EI_ABIVERSION >= 2).
    pub fn from_e_flags(e_flags: u32) -> Result<TargetId> {
        let mach = e_flags & EF_AMDGPU_MACH;
        let processor = Processor::from_mach(mach).ok_or_else(|| {
            Error::new(format!(
                "e_flags {e_flags:#x}: unknown EF_AMDGPU_MACH value {mach:#x}"
            ))
        })?;
        let xnack = FeatureState::from_bits((e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8);
        let sramecc = FeatureState::from_bits((e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10);
        let generic_version = (e_flags >> 24) as u8;
        Ok(TargetId {
            processor,
            xnack,
            sramecc,
            generic_version,
        })
    }

    /// The `e_flags` value that encodes this target (inverse of [`TargetId::from_e_flags`]).
    pub fn e_flags(&self) -> u32 {
        self.processor.mach_value()
            | (self.xnack.to_bits() << 8)
            | (self.sramecc.to_bits() << 10)
            | (u32::from(self.generic_version) << 24)
    }

    /// True if code for `self` may run on an agent whose target is `agent`
    /// (same processor; each feature "any" or equal). Generic targets are not expanded here.
    pub fn compatible_with(&self, agent: &TargetId) -> bool {
        self.processor == agent.processor
            && self.xnack.compatible_with(agent.xnack)
            && self.sramecc.compatible_with(agent.sramecc)
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "amdgcn-amd-amdhsa--{}", self.processor.name())?;
        // LLVM's order: sramecc before xnack; only explicit on/off are printed.
        for (name, state) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match state {
                FeatureState::On => write!(f, ":{name}+")?,
                FeatureState::Off => write!(f, ":{name}-")?,
                FeatureState::Any | FeatureState::Unsupported => {}
            }
        }
        Ok(())
    }
}

impl FromStr for TargetId {
    type Err = Error;

    /// Parses `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`, or just `gfx90a:xnack+`.
    fn from_str(s: &str) -> Result<TargetId> {
        let id = s.strip_prefix("amdgcn-amd-amdhsa--").unwrap_or(s);
        let mut parts = id.split(':');
        let name = parts.next().unwrap_or("");
        let processor = Processor::from_name(name)
            .ok_or_else(|| Error::new(format!("target '{s}': unknown processor '{name}'")))?;
        let default = |supported: bool| {
            if supported {
                FeatureState::Any
            } else {
                FeatureState::Unsupported
            }
        };
        let mut xnack = default(processor.supports_xnack());
        let mut sramecc = default(processor.supports_sramecc());
        for feature in parts {
            let (fname, state) = match feature.split_at_checked(feature.len().saturating_sub(1)) {
                Some((n, "+")) => (n, FeatureState::On),
                Some((n, "-")) => (n, FeatureState::Off),
                _ => {
                    return Err(Error::new(format!(
                        "target '{s}': feature '{feature}' must end in + or -"
                    )))
                }
            };
            let slot = match fname {
                "xnack" if processor.supports_xnack() => &mut xnack,
                "sramecc" if processor.supports_sramecc() => &mut sramecc,
                _ => {
                    return Err(Error::new(format!(
                        "target '{s}': feature '{fname}' is not supported by {name}"
                    )))
                }
            };
            *slot = state;
        }
        Ok(TargetId {
            processor,
            xnack,
            sramecc,
            generic_version: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mach_value_and_name_is_unique() {
        for (i, a) in MACHS.iter().enumerate() {
            for b in &MACHS[i + 1..] {
                assert_ne!(a.value, b.value, "{} and {}", a.name, b.name);
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn string_round_trip() {
        for s in [
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
            "amdgcn-amd-amdhsa--gfx1100",
            "amdgcn-amd-amdhsa--gfx908:xnack+",
        ] {
            let t: TargetId = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
            assert_eq!(TargetId::from_e_flags(t.e_flags()).unwrap(), t);
        }
        assert!("gfx1100:xnack+".parse::<TargetId>().is_err());
        assert!("gfx9000".parse::<TargetId>().is_err());
        assert!("gfx90a:xnack".parse::<TargetId>().is_err());
    }
}
