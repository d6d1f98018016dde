//! `Executable`: code objects loaded per agent, their symbols, and linking at freeze.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use inlay_codeobj::symbols::SymbolKind as ElfKind;
use inlay_codeobj::TargetId;

use crate::error::{ErrorKind, LoadError};
use crate::image::Image;
use crate::memory::DeviceMemory;
use crate::names::NameMap;

/// An agent as the loader sees it: a key chosen by the caller (the runtime
/// uses its agent handle) and the target ID its code must be compatible with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRef {
    pub key: u64,
    pub target: TargetId,
}

/// Index of a loaded code object in its executable (load order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeObjectId(pub usize);

/// Index of a symbol in its executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId(pub usize);

/// One code object in device memory.
pub struct LoadedCodeObject {
    pub id: CodeObjectId,
    pub agent: u64,
    pub target: TargetId,
    pub code_object_version: u8,
    /// URI given at load, or "code object #n"; names it in errors.
    pub name: String,
    /// The bytes it was loaded from (kept for loader-extension queries).
    pub storage: Arc<[u8]>,
    /// Address of the allocation holding its segments.
    pub load_base: u64,
    /// Device address minus ELF virtual address for every byte loaded.
    pub load_delta: u64,
    pub load_size: u64,
    image: Image,
}

impl LoadedCodeObject {
    /// The device address of ELF virtual address `vaddr`.
    pub fn address_of(&self, vaddr: u64) -> u64 {
        self.load_delta.wrapping_add(vaddr)
    }

    /// Its code as the virtual GPU predecodes it: `.text` and kernels.
    pub fn code_region(&self) -> Option<inlay_vgpu::CodeRegion> {
        let (vaddr, size) = self.image.text?;
        Some(inlay_vgpu::CodeRegion {
            load_base: self.load_delta,
            text_vaddr: vaddr,
            text_size: size,
            code_object_version: self.code_object_version,
            kernels: self
                .kernel_objects()
                .map(|(name, kd)| (name.to_string(), kd))
                .collect(),
        })
    }

    /// Names and device addresses of the descriptors of its kernels.
    pub fn kernel_objects(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.image
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), self.address_of(k.descriptor)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Device address of the kernel descriptor (HSA's kernel object).
    pub object: u64,
    /// Device address of the first instruction.
    pub entry: Option<u64>,
    pub kernarg_size: u32,
    pub kernarg_align: u32,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
    pub dynamic_callstack: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariableAllocation {
    Agent,
    Program,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableInfo {
    pub address: u64,
    pub size: u64,
    pub align: u64,
    pub allocation: VariableAllocation,
    /// Lives in a segment the code object does not write (or defined read-only).
    pub is_const: bool,
}

/// A function without a kernel descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    pub address: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolKind {
    Kernel(KernelInfo),
    Variable(VariableInfo),
    Function(FunctionInfo),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    /// `None` for program-wide variables the host defined.
    pub agent: Option<u64>,
    /// `None` for variables the host defined.
    pub code_object: Option<CodeObjectId>,
    /// ELF local binding (visible in this code object only).
    pub local: bool,
    pub kind: SymbolKind,
}

/// Code objects loaded for one or more agents, linked together at freeze.
pub struct Executable {
    memory: Arc<dyn DeviceMemory>,
    code_objects: Vec<LoadedCodeObject>,
    by_base: BTreeMap<u64, CodeObjectId>,
    symbols: Vec<Symbol>,
    by_name: NameMap<Vec<SymbolId>>,
    kernels: Vec<SymbolId>,
    variables: Vec<SymbolId>,
    functions: Vec<SymbolId>,
    /// Addresses of global ELF names per agent (`None`: defined by the host for
    /// the whole program); undefined references resolve here.
    exports: HashMap<Option<u64>, NameMap<u64>>,
    frozen: bool,
}

impl Executable {
    pub fn new(memory: Arc<dyn DeviceMemory>) -> Self {
        Executable {
            memory,
            code_objects: Vec::new(),
            by_base: BTreeMap::new(),
            symbols: Vec::new(),
            by_name: NameMap::default(),
            kernels: Vec::new(),
            variables: Vec::new(),
            functions: Vec::new(),
            exports: HashMap::new(),
            frozen: false,
        }
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    fn check_unfrozen(&self, co: Option<&str>) -> Result<(), LoadError> {
        if self.frozen {
            return Err(LoadError::new(
                ErrorKind::Frozen,
                co,
                "the executable is frozen",
            ));
        }
        Ok(())
    }

    fn exported(&self, agent: Option<u64>, name: &str) -> Option<u64> {
        let in_map = |a: Option<u64>| self.exports.get(&a).and_then(|m| m.get(name));
        in_map(agent).or_else(|| in_map(None)).copied()
    }

    /// Loads a code object for `agent`: checks its target, copies its segments
    /// into device memory and records its symbols. `uri` names it (errors,
    /// loader-extension queries).
    pub fn load(
        &mut self,
        agent: &AgentRef,
        bytes: &[u8],
        uri: Option<&str>,
    ) -> Result<CodeObjectId, LoadError> {
        self.load_shared(agent, Arc::from(bytes), uri)
    }

    /// [`Executable::load`] from bytes the caller already shares: they are
    /// kept as the code object's storage without another copy.
    pub fn load_shared(
        &mut self,
        agent: &AgentRef,
        storage: Arc<[u8]>,
        uri: Option<&str>,
    ) -> Result<CodeObjectId, LoadError> {
        let bytes: &[u8] = &storage;
        let id = CodeObjectId(self.code_objects.len());
        let name = uri.map_or_else(|| format!("code object #{}", id.0), str::to_string);
        let here = Some(name.as_str());
        self.check_unfrozen(here)?;
        let image = Image::read(bytes)
            .map_err(|what| LoadError::new(ErrorKind::InvalidCodeObject, here, what))?;
        if !image.target.compatible_with(&agent.target) {
            return Err(LoadError::new(
                ErrorKind::IncompatibleTarget,
                here,
                format!(
                    "built for {} (xnack {:?}, sramecc {:?}); the agent is {} (xnack {:?}, sramecc {:?})",
                    image.target, image.target.xnack, image.target.sramecc,
                    agent.target, agent.target.xnack, agent.target.sramecc
                ),
            ));
        }
        // A weak definition never conflicts (HIP code objects built with
        // -fgpu-rdc all define __cxa_pure_virtual weak).
        for d in image.defined.iter().filter(|d| !d.local && !d.weak) {
            if self.exported(Some(agent.key), &d.name).is_some() {
                return Err(LoadError::new(
                    ErrorKind::AlreadyDefined,
                    here,
                    format!("symbol {} is already defined in this executable", d.name),
                ));
            }
        }
        let base = self
            .memory
            .allocate(image.span_size, image.align)
            .map_err(|e| LoadError::new(ErrorKind::OutOfResources, here, e))?;
        let delta = base.wrapping_sub(image.span_start);
        for seg in &image.segments {
            // Bounds were checked when the image was read.
            let from = seg.file_offset as usize;
            let data = &bytes[from..from + seg.filesz as usize];
            if let Err(e) = self.memory.write(delta.wrapping_add(seg.vaddr), data) {
                self.memory.release(base);
                return Err(LoadError::new(ErrorKind::OutOfResources, here, e));
            }
        }
        self.register_symbols(id, agent.key, delta, &image);
        self.by_base.insert(base, id);
        self.code_objects.push(LoadedCodeObject {
            id,
            agent: agent.key,
            target: image.target,
            code_object_version: image.version,
            name,
            storage: storage.clone(),
            load_base: base,
            load_delta: delta,
            load_size: image.span_size,
            image,
        });
        Ok(id)
    }

    fn push_symbol(&mut self, s: Symbol) {
        let id = SymbolId(self.symbols.len());
        match s.kind {
            SymbolKind::Kernel(_) => self.kernels.push(id),
            SymbolKind::Variable(_) => self.variables.push(id),
            SymbolKind::Function(_) => self.functions.push(id),
        }
        self.by_name.entry(s.name.clone()).or_default().push(id);
        self.symbols.push(s);
    }

    fn register_symbols(&mut self, co: CodeObjectId, agent: u64, delta: u64, image: &Image) {
        let local_names: HashSet<&str> = image
            .defined
            .iter()
            .filter(|d| d.local)
            .map(|d| d.name.as_str())
            .collect();
        for k in &image.kernels {
            let local = local_names.contains(format!("{}.kd", k.name).as_str());
            self.push_symbol(Symbol {
                name: k.name.clone(),
                agent: Some(agent),
                code_object: Some(co),
                local,
                kind: SymbolKind::Kernel(KernelInfo {
                    object: delta.wrapping_add(k.descriptor),
                    entry: k.entry.map(|e| delta.wrapping_add(e)),
                    kernarg_size: k.kernarg_size,
                    kernarg_align: k.kernarg_align,
                    group_segment_size: k.group_segment_size,
                    private_segment_size: k.private_segment_size,
                    dynamic_callstack: k.dynamic_callstack,
                }),
            });
        }
        // A weak definition of a name already exported stays private to
        // its code object: the first definition wins, as in ELF loaders.
        let shadowed: HashSet<&str> = image
            .defined
            .iter()
            .filter(|d| d.weak && self.exported(Some(agent), &d.name).is_some())
            .map(|d| d.name.as_str())
            .collect();
        for d in &image.defined {
            let address = delta.wrapping_add(d.value);
            let local = d.local || shadowed.contains(d.name.as_str());
            if !local {
                self.exports
                    .entry(Some(agent))
                    .or_default()
                    .insert(d.name.clone(), address);
            }
            let kind = match d.kind {
                // ROCr lists global variables only; local data stays private.
                ElfKind::Variable if !local => SymbolKind::Variable(VariableInfo {
                    address,
                    size: d.size,
                    align: d.align,
                    allocation: VariableAllocation::Agent,
                    is_const: !image.writable(d.value),
                }),
                ElfKind::DeviceFunction => SymbolKind::Function(FunctionInfo {
                    address,
                    size: d.size,
                }),
                _ => continue,
            };
            self.push_symbol(Symbol {
                name: d.name.clone(),
                agent: Some(agent),
                code_object: Some(co),
                local,
                kind,
            });
        }
    }

    /// Defines a variable the host allocated, for one agent (`Some`) or the
    /// whole program (`None`), so code objects' references to `name` resolve to `address`.
    pub fn define_variable(
        &mut self,
        agent: Option<u64>,
        name: &str,
        address: u64,
        readonly: bool,
    ) -> Result<SymbolId, LoadError> {
        self.check_unfrozen(None)?;
        let clash = match agent {
            Some(_) => self.exported(agent, name).is_some(),
            None => self.exports.values().any(|m| m.contains_key(name)),
        };
        if clash {
            return Err(LoadError::new(
                ErrorKind::AlreadyDefined,
                None,
                format!("variable {name} is already defined"),
            ));
        }
        self.exports
            .entry(agent)
            .or_default()
            .insert(name.to_string(), address);
        let id = SymbolId(self.symbols.len());
        self.push_symbol(Symbol {
            name: name.to_string(),
            agent,
            code_object: None,
            local: false,
            kind: SymbolKind::Variable(VariableInfo {
                address,
                size: 0,
                align: 0,
                allocation: if agent.is_some() {
                    VariableAllocation::Agent
                } else {
                    VariableAllocation::Program
                },
                is_const: readonly,
            }),
        });
        Ok(id)
    }

    /// Resolves every external and applies every dynamic relocation; then no
    /// more code objects or variables can be added. On error nothing is
    /// written and the executable stays unfrozen (define what is missing and retry).
    pub fn freeze(&mut self) -> Result<(), LoadError> {
        self.check_unfrozen(None)?;
        let mut patches = Vec::new();
        let mut missing: Vec<(String, String)> = Vec::new();
        for co in &self.code_objects {
            let resolve = |name: &str| self.exported(Some(co.agent), name);
            for r in &co.image.relocs {
                let s = match (&r.symbol, r.defined_value) {
                    (None, _) => 0,
                    (Some(_), Some(v)) => co.address_of(v),
                    (Some(name), None) => match resolve(name) {
                        Some(address) => address,
                        // An unresolved weak reference is zero, as in any ELF loader.
                        None if co.image.undefined.get(name) == Some(&true) => 0,
                        None => {
                            if !missing.iter().any(|(n, c)| n == name && *c == co.name) {
                                missing.push((name.clone(), co.name.clone()));
                            }
                            0
                        }
                    },
                };
                let p = co.address_of(r.offset);
                if let Some(bytes) = crate::reloc::compute(r.r_type, s, r.addend, p, co.load_delta)
                {
                    patches.push((p, bytes, co.id));
                }
            }
        }
        if let Some((name, co)) = missing.first() {
            let others = missing.len() - 1;
            let what = if others > 0 {
                format!("undefined symbol {name} (and {others} more unresolved)")
            } else {
                format!("undefined symbol {name}")
            };
            return Err(LoadError::new(ErrorKind::Undefined, Some(co), what));
        }
        for (p, bytes, co) in patches {
            self.memory.write(p, &bytes).map_err(|e| {
                let name = &self.code_objects[co.0].name;
                LoadError::new(ErrorKind::InvalidCodeObject, Some(name), e)
            })?;
        }
        self.frozen = true;
        Ok(())
    }

    pub fn code_objects(&self) -> &[LoadedCodeObject] {
        &self.code_objects
    }

    pub fn code_object(&self, id: CodeObjectId) -> Option<&LoadedCodeObject> {
        self.code_objects.get(id.0)
    }

    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    pub fn get(&self, id: SymbolId) -> Option<&Symbol> {
        self.symbols.get(id.0)
    }

    /// The symbol called `name` for `agent` (or any agent), globals before locals.
    pub fn symbol(&self, name: &str, agent: Option<u64>) -> Option<SymbolId> {
        let ids = self.by_name.get(name)?;
        let fits = |id: &&SymbolId| {
            let s = &self.symbols[id.0];
            agent.is_none() || s.agent.is_none() || s.agent == agent
        };
        let mut candidates = ids.iter().filter(fits);
        let first = candidates.clone().find(|id| !self.symbols[id.0].local);
        first.or_else(|| candidates.next()).copied()
    }

    pub fn kernels(&self) -> &[SymbolId] {
        &self.kernels
    }

    pub fn variables(&self) -> &[SymbolId] {
        &self.variables
    }

    pub fn functions(&self) -> &[SymbolId] {
        &self.functions
    }

    /// The loaded code object holding device address `addr`, and the offset from its load base.
    pub fn find_address(&self, addr: u64) -> Option<(CodeObjectId, u64)> {
        let (&base, &id) = self.by_base.range(..=addr).next_back()?;
        let co = &self.code_objects[id.0];
        (addr - base < co.load_size).then_some((id, addr - base))
    }

    pub fn memory(&self) -> &Arc<dyn DeviceMemory> {
        &self.memory
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        for co in &self.code_objects {
            self.memory.release(co.load_base);
        }
    }
}
