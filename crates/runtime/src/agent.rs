//! The two agents: the host CPU and the virtual gfx90a GPU (an MI210-class device).

/// Index of an agent in [`crate::Runtime::agents`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AgentId(pub u32);

pub const CPU: AgentId = AgentId(0);
pub const GPU: AgentId = AgentId(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceType {
    Cpu = 0,
    Gpu = 1,
}

/// An instruction set the GPU agent supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa {
    pub name: &'static str,
    pub wavefront_size: u32,
    pub wavefronts_per_cu: u32,
    pub workgroup_max_dim: [u16; 3],
    pub workgroup_max_size: u32,
    pub grid_max_dim: [u32; 3],
    pub grid_max_size: u64,
    pub fbarrier_max_size: u32,
}

/// The one ISA of the virtual GPU, named as ROCr names gfx90a with SRAM ECC on, XNACK off.
pub const GFX90A: Isa = Isa {
    name: "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    wavefront_size: 64,
    wavefronts_per_cu: 32,
    workgroup_max_dim: [1024, 1024, 1024],
    workgroup_max_size: 1024,
    grid_max_dim: [u32::MAX, u32::MAX, u32::MAX],
    grid_max_size: u32::MAX as u64,
    fbarrier_max_size: 32,
};

/// Everything a caller can ask about an agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    pub id: AgentId,
    pub name: String,
    pub vendor: &'static str,
    pub product_name: String,
    pub device_type: DeviceType,
    pub isa: Option<Isa>,
    /// HSA node id (the KFD topology node).
    pub node: u32,
    /// Driver node id as ROCr reports it (HSA_AMD_AGENT_INFO_DRIVER_NODE_ID).
    pub driver_node_id: u32,
    pub compute_units: u32,
    pub simds_per_cu: u32,
    pub shader_engines: u32,
    pub shader_arrays_per_engine: u32,
    pub max_waves_per_cu: u32,
    pub max_clock_mhz: u32,
    pub memory_width_bits: u32,
    pub memory_max_clock_mhz: u32,
    pub chip_id: u32,
    pub asic_revision: u32,
    pub cacheline_size: u32,
    /// L1..L4 data cache sizes in bytes.
    pub cache_sizes: [u32; 4],
    pub watch_points: u32,
    pub bdf_id: u32,
    pub uuid: String,
    pub queues_max: u32,
    pub queue_min_size: u32,
    pub queue_max_size: u32,
}

impl Agent {
    pub fn is_gpu(&self) -> bool {
        self.device_type == DeviceType::Gpu
    }
}

/// The host CPU, described from /proc where Linux offers it.
pub fn host_cpu() -> Agent {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let name = field("model name").unwrap_or_else(|| "Host CPU".to_string());
    let vendor_id = field("vendor_id").unwrap_or_default();
    let mhz = field("cpu MHz")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0) as u32;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    Agent {
        id: CPU,
        product_name: name.clone(),
        name,
        vendor: if vendor_id.contains("AMD") {
            "AMD"
        } else {
            "CPU"
        },
        device_type: DeviceType::Cpu,
        isa: None,
        node: 0,
        driver_node_id: 0,
        compute_units: cpus,
        simds_per_cu: 0,
        shader_engines: 0,
        shader_arrays_per_engine: 0,
        max_waves_per_cu: 0,
        max_clock_mhz: mhz,
        memory_width_bits: 0,
        memory_max_clock_mhz: 0,
        chip_id: 0,
        asic_revision: 0,
        cacheline_size: 64,
        cache_sizes: [32 << 10, 0, 0, 0],
        watch_points: 0,
        bdf_id: 0,
        uuid: "CPU-XX".to_string(),
        queues_max: 0,
        queue_min_size: 0,
        queue_max_size: 0,
    }
}

/// The virtual GPU: the figures of an AMD Instinct MI210.
pub fn virtual_gfx90a() -> Agent {
    Agent {
        id: GPU,
        name: "gfx90a".to_string(),
        vendor: "AMD",
        product_name: "AMD Instinct MI210 (Inlay virtual GPU)".to_string(),
        device_type: DeviceType::Gpu,
        isa: Some(GFX90A),
        node: 1,
        driver_node_id: 1,
        compute_units: 104,
        simds_per_cu: 4,
        shader_engines: 8,
        shader_arrays_per_engine: 1,
        max_waves_per_cu: 32,
        max_clock_mhz: 1700,
        memory_width_bits: 4096,
        memory_max_clock_mhz: 1600,
        chip_id: 0x740f,
        asic_revision: 1,
        cacheline_size: 64,
        cache_sizes: [16 << 10, 8 << 20, 0, 0],
        watch_points: 4,
        bdf_id: 0x0300,
        uuid: "GPU-1a7e5b0c9d2f4e81".to_string(),
        queues_max: 128,
        queue_min_size: 64,
        queue_max_size: 131072,
    }
}
