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

/// Text for every status of hsa.h, hsa_ext_amd.h, hsa_ext_finalize.h and
/// hsa_ext_image.h (NUL-terminated), starting with the status name.
pub fn status_text(s: u32) -> Option<&'static str> {
    Some(match s {
        0x0 => "HSA_STATUS_SUCCESS: The function has been executed successfully.\0",
        0x1 => "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application.\0",
        0x1000 => "HSA_STATUS_ERROR: A generic error has occurred.\0",
        0x1001 => "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition.\0",
        0x1002 => "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue cannot be created with these parameters.\0",
        0x1003 => "HSA_STATUS_ERROR_INVALID_ALLOCATION: The allocation request is not valid for this pool or region.\0",
        0x1004 => "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.\0",
        0x1005 => "HSA_STATUS_ERROR_INVALID_REGION: The memory region is invalid.\0",
        0x1006 => "HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.\0",
        0x1007 => "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.\0",
        0x1008 => "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime could not obtain the memory, threads or other resources it needs.\0",
        0x1009 => "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: An AQL packet is malformed.\0",
        0x100A => "HSA_STATUS_ERROR_RESOURCE_FREE: A resource is still in use and cannot be released.\0",
        0x100B => "HSA_STATUS_ERROR_NOT_INITIALIZED: The runtime has not been initialized with hsa_init.\0",
        0x100C => "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: The runtime reference count would overflow.\0",
        0x100D => "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments are valid alone but not together.\0",
        0x100E => "HSA_STATUS_ERROR_INVALID_INDEX: The index is invalid.\0",
        0x100F => "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.\0",
        0x1017 => "HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid.\0",
        0x1010 => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.\0",
        0x1011 => "HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.\0",
        0x1012 => "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.\0",
        0x1013 => "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: No symbol has that name.\0",
        0x1014 => "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: The variable is already defined.\0",
        0x1015 => "HSA_STATUS_ERROR_VARIABLE_UNDEFINED: The variable is undefined.\0",
        0x1016 => "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation raised an exception.\0",
        0x1018 => "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: The code object symbol is invalid.\0",
        0x1019 => "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.\0",
        0x1020 => "HSA_STATUS_ERROR_INVALID_FILE: The file descriptor is invalid.\0",
        0x1021 => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid.\0",
        0x1022 => "HSA_STATUS_ERROR_INVALID_CACHE: The cache is invalid.\0",
        0x1023 => "HSA_STATUS_ERROR_INVALID_WAVEFRONT: The wavefront is invalid.\0",
        0x1024 => "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: The signal group is invalid.\0",
        0x1025 => "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: The runtime is not in a state that allows this operation.\0",
        0x1026 => "HSA_STATUS_ERROR_FATAL: The queue received an error that may require process termination.\0",
        40 => "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid.\0",
        41 => "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: An agent accessed memory beyond the aperture it may use.\0",
        42 => "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: An agent tried to execute an illegal instruction.\0",
        43 => "HSA_STATUS_ERROR_MEMORY_FAULT: An agent accessed memory it may not access.\0",
        44 => "HSA_STATUS_CU_MASK_REDUCED: The CU mask was applied, reduced to the compute units present.\0",
        0x2000 => "HSA_EXT_STATUS_ERROR_INVALID_PROGRAM: The HSAIL program is invalid.\0",
        0x2001 => "HSA_EXT_STATUS_ERROR_INVALID_MODULE: The HSAIL module is invalid.\0",
        0x2002 => "HSA_EXT_STATUS_ERROR_INCOMPATIBLE_MODULE: The module does not fit the program's profile or machine model.\0",
        0x2003 => "HSA_EXT_STATUS_ERROR_MODULE_ALREADY_INCLUDED: The module is already part of the program.\0",
        0x2004 => "HSA_EXT_STATUS_ERROR_SYMBOL_MISMATCH: A symbol is declared differently in two modules.\0",
        0x2005 => "HSA_EXT_STATUS_ERROR_FINALIZATION_FAILED: Finalization failed.\0",
        0x2006 => "HSA_EXT_STATUS_ERROR_DIRECTIVE_MISMATCH: A control directive disagrees with the finalizer's.\0",
        0x3000 => "HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED: The image format is not supported.\0",
        0x3001 => "HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED: The image size is not supported.\0",
        0x3002 => "HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED: The image pitch is not supported.\0",
        0x3003 => "HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED: The sampler descriptor is not supported.\0",
        _ => return None,
    })
}
