//! HSA status codes, the error type of the whole runtime.
//!
//! Values are those of `hsa_status_t` in hsa.h and hsa_ext_amd.h, so the C
//! layer passes them through unchanged.

/// An HSA status other than success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Status {
    InfoBreak = 0x1,
    Error = 0x1000,
    InvalidArgument = 0x1001,
    InvalidQueueCreation = 0x1002,
    InvalidAllocation = 0x1003,
    InvalidAgent = 0x1004,
    InvalidRegion = 0x1005,
    InvalidSignal = 0x1006,
    InvalidQueue = 0x1007,
    OutOfResources = 0x1008,
    InvalidPacketFormat = 0x1009,
    ResourceFree = 0x100A,
    NotInitialized = 0x100B,
    RefcountOverflow = 0x100C,
    IncompatibleArguments = 0x100D,
    InvalidIndex = 0x100E,
    InvalidIsa = 0x100F,
    InvalidCodeObject = 0x1010,
    InvalidExecutable = 0x1011,
    FrozenExecutable = 0x1012,
    InvalidSymbolName = 0x1013,
    VariableAlreadyDefined = 0x1014,
    VariableUndefined = 0x1015,
    Exception = 0x1016,
    InvalidIsaName = 0x1017,
    InvalidCodeSymbol = 0x1018,
    InvalidExecutableSymbol = 0x1019,
    InvalidFile = 0x1020,
    InvalidCodeObjectReader = 0x1021,
    InvalidCache = 0x1022,
    InvalidWavefront = 0x1023,
    InvalidSignalGroup = 0x1024,
    InvalidRuntimeState = 0x1025,
    Fatal = 0x1026,
    InvalidMemoryPool = 40,
    MemoryApertureViolation = 41,
    IllegalInstruction = 42,
    MemoryFault = 43,
    CuMaskReduced = 44,
}

impl Status {
    pub fn code(self) -> u32 {
        self as u32
    }
}

pub type Result<T> = std::result::Result<T, Status>;
