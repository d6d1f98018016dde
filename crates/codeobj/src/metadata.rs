//! The `NT_AMDGPU_METADATA` note: a msgpack map describing the code object's kernels
//! (AMDGPUUsage, "Code Object V3+ Metadata"). Known keys become typed fields; every
//! other key is kept as a raw msgpack value, so that writing it back drops nothing.

use serde::{Serialize, Serializer};

use crate::elf::{self, Section, Segment};
use crate::{Error, Result};

use rmpv::{Value, ValueRef};

/// Note type of the metadata note.
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Note owner name.
pub const AMDGPU_NOTE_NAME: &str = "AMDGPU";

/// One ELF note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note<'data> {
    #[serde(skip)]
    pub desc: &'data [u8],
    /// File offset of `desc`.
    pub desc_offset: u64,
    pub n_type: u32,
    pub name: &'data str,
}

/// Reads every note of the SHT_NOTE sections (or, without sections, of the PT_NOTE segments).
pub fn parse_notes<'d>(
    data: &'d [u8],
    sections: &[Section<'d>],
    segments: &[Segment],
) -> Result<Vec<Note<'d>>> {
    let mut regions: Vec<(u64, u64, u64)> = sections
        .iter()
        .filter(|s| s.sh_type == elf::SHT_NOTE)
        .map(|s| (s.offset, s.size, s.addralign))
        .collect();
    if sections.is_empty() {
        regions = segments
            .iter()
            .filter(|p| p.p_type == elf::PT_NOTE)
            .map(|p| (p.offset, p.filesz, p.align))
            .collect();
    }
    let mut notes = Vec::new();
    for (offset, size, align) in regions {
        let align = if align == 8 { 8 } else { 4 };
        let bytes = elf::slice(data, offset, size, "note section")?;
        let mut pos = 0u64;
        while pos < size {
            let at = offset + pos;
            let namesz = u64::from(
                elf::u32_at(bytes, pos, "note header")
                    .map_err(|_| Error::at(at, "truncated note header"))?,
            );
            let descsz = u64::from(
                elf::u32_at(bytes, pos + 4, "note header")
                    .map_err(|_| Error::at(at, "truncated note header"))?,
            );
            let n_type = elf::u32_at(bytes, pos + 8, "note header")
                .map_err(|_| Error::at(at, "truncated note header"))?;
            let name_at = pos + 12;
            let name_bytes = elf::slice(bytes, name_at, namesz, "note name").map_err(|_| {
                Error::at(
                    at,
                    format!("note name ({namesz} bytes) extends past the end of the note section"),
                )
            })?;
            let name = std::str::from_utf8(name_bytes.strip_suffix(&[0]).unwrap_or(name_bytes))
                .map_err(|_| Error::at(offset + name_at, "note name is not UTF-8"))?;
            let desc_at = name_at + namesz.next_multiple_of(align);
            let desc = elf::slice(bytes, desc_at, descsz, "note descriptor").map_err(|_| {
                Error::at(
                    at,
                    format!(
                        "note descriptor ({descsz} bytes) extends past the end of the note section"
                    ),
                )
            })?;
            notes.push(Note {
                name,
                n_type,
                desc,
                desc_offset: offset + desc_at,
            });
            pos = desc_at + descsz.next_multiple_of(align);
        }
    }
    Ok(notes)
}

/// The whole metadata document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metadata {
    /// `amdhsa.kernels`.
    pub kernels: Vec<KernelMetadata>,
    /// `amdhsa.printf`: printf format descriptors.
    pub printf: Option<Vec<String>>,
    /// `amdhsa.target`: the target ID string.
    pub target: Option<String>,
    /// Keys this crate does not model, with their values.
    #[serde(serialize_with = "unknown_as_json")]
    pub unknown: Vec<(String, Value)>,
    /// `amdhsa.version`: [major, minor] (1.1 = v4, 1.2 = v5, 1.3 = v6).
    pub version: Option<Vec<u64>>,
}

/// `amdhsa.kernels[i]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelMetadata {
    pub agpr_count: Option<u64>,
    pub args: Vec<KernelArg>,
    pub device_enqueue_symbol: Option<String>,
    pub group_segment_fixed_size: Option<u64>,
    pub kernarg_segment_align: Option<u64>,
    pub kernarg_segment_size: Option<u64>,
    pub language: Option<String>,
    pub language_version: Option<Vec<u64>>,
    pub max_flat_workgroup_size: Option<u64>,
    pub name: String,
    pub private_segment_fixed_size: Option<u64>,
    pub reqd_workgroup_size: Option<Vec<u64>>,
    pub sgpr_count: Option<u64>,
    pub sgpr_spill_count: Option<u64>,
    pub symbol: String,
    pub uniform_work_group_size: Option<u64>,
    #[serde(serialize_with = "unknown_as_json")]
    pub unknown: Vec<(String, Value)>,
    pub uses_dynamic_stack: Option<bool>,
    pub vec_type_hint: Option<String>,
    pub vgpr_count: Option<u64>,
    pub vgpr_spill_count: Option<u64>,
    pub wavefront_size: Option<u64>,
    /// LLVM 19 writes an integer here (AMDGPUUsage documents a boolean).
    pub workgroup_processor_mode: Option<u64>,
    pub workgroup_size_hint: Option<Vec<u64>>,
}

/// `.args[i]` of a kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelArg {
    pub access: Option<String>,
    pub actual_access: Option<String>,
    pub address_space: Option<String>,
    pub is_const: Option<bool>,
    pub is_pipe: Option<bool>,
    pub is_restrict: Option<bool>,
    pub is_volatile: Option<bool>,
    pub name: Option<String>,
    pub offset: u64,
    pub pointee_align: Option<u64>,
    pub size: u64,
    pub type_name: Option<String>,
    #[serde(serialize_with = "unknown_as_json")]
    pub unknown: Vec<(String, Value)>,
    pub value_kind: String,
}

/// A decoded msgpack value the typed view can be read from: owned
/// ([`rmpv::Value`]) or borrowing the note's bytes ([`rmpv::ValueRef`], which
/// avoids an allocation per string when parsing).
trait Doc: Sized {
    fn map(&self) -> Option<&[(Self, Self)]>;
    fn array(&self) -> Option<&[Self]>;
    fn str(&self) -> Option<&str>;
    fn u64(&self) -> Option<u64>;
    fn bool(&self) -> Option<bool>;
    fn kind(&self) -> &'static str;
    fn owned(&self) -> Value;
}

impl Doc for Value {
    fn map(&self) -> Option<&[(Self, Self)]> {
        self.as_map().map(Vec::as_slice)
    }
    fn array(&self) -> Option<&[Self]> {
        self.as_array().map(Vec::as_slice)
    }
    fn str(&self) -> Option<&str> {
        self.as_str()
    }
    fn u64(&self) -> Option<u64> {
        self.as_u64()
    }
    fn bool(&self) -> Option<bool> {
        self.as_bool()
    }
    fn kind(&self) -> &'static str {
        kind(self)
    }
    fn owned(&self) -> Value {
        self.clone()
    }
}

impl Doc for ValueRef<'_> {
    fn map(&self) -> Option<&[(Self, Self)]> {
        match self {
            ValueRef::Map(m) => Some(m),
            _ => None,
        }
    }
    fn array(&self) -> Option<&[Self]> {
        match self {
            ValueRef::Array(a) => Some(a),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            ValueRef::String(s) => s.as_str(),
            _ => None,
        }
    }
    fn u64(&self) -> Option<u64> {
        self.as_u64()
    }
    fn bool(&self) -> Option<bool> {
        match self {
            ValueRef::Boolean(b) => Some(*b),
            _ => None,
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            ValueRef::Integer(i) if i.is_u64() => "an unsigned integer",
            ValueRef::Integer(_) => "a negative integer",
            ValueRef::Nil => "nil",
            ValueRef::Boolean(_) => "a boolean",
            ValueRef::F32(_) | ValueRef::F64(_) => "a float",
            ValueRef::String(_) => "a string",
            ValueRef::Binary(_) => "binary data",
            ValueRef::Array(_) => "an array",
            ValueRef::Map(_) => "a map",
            ValueRef::Ext(..) => "an extension value",
        }
    }
    fn owned(&self) -> Value {
        self.to_owned()
    }
}

/// Where a map is in the document, for error messages; formatted only on error.
#[derive(Clone, Copy)]
struct Path<'p> {
    parent: &'p str,
    /// (array key, index) of the map inside its parent, if any.
    item: Option<(&'static str, usize)>,
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.parent)?;
        match self.item {
            Some((key, i)) => write!(f, "{key}[{i}]."),
            None => Ok(()),
        }
    }
}

/// Reads a msgpack map key by key, naming the path of any key with the wrong shape.
struct MapReader<'v, 'p, D> {
    entries: Vec<(&'v str, &'v D)>,
    path: Path<'p>,
    offset: u64,
}

impl<'v, 'p, D: Doc> MapReader<'v, 'p, D> {
    fn new(v: &'v D, path: Path<'p>, offset: u64) -> Result<Self> {
        let map = v.map().ok_or_else(|| {
            Error::at(
                offset,
                format!("metadata {path}: expected a map, found {}", v.kind()),
            )
        })?;
        let mut entries = Vec::with_capacity(map.len());
        for (k, val) in map {
            let k = k.str().ok_or_else(|| {
                Error::at(
                    offset,
                    format!("metadata {path}: a map key is {}, not a string", k.kind()),
                )
            })?;
            entries.push((k, val));
        }
        Ok(MapReader {
            entries,
            path,
            offset,
        })
    }

    fn take(&mut self, key: &str) -> Option<&'v D> {
        let i = self.entries.iter().position(|(k, _)| *k == key)?;
        Some(self.entries.remove(i).1)
    }

    fn wrong(&self, key: &str, expected: &str, v: &D) -> Error {
        Error::at(
            self.offset,
            format!(
                "metadata {}{key}: expected {expected}, found {}",
                self.path,
                v.kind()
            ),
        )
    }

    fn missing(&self, key: &str) -> Error {
        Error::at(
            self.offset,
            format!("metadata {}{key}: required key missing", self.path),
        )
    }

    fn u64(&mut self, key: &str) -> Result<Option<u64>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an unsigned integer", v)),
        }
    }

    fn required_u64(&mut self, key: &str) -> Result<u64> {
        self.u64(key)?.ok_or_else(|| self.missing(key))
    }

    fn bool(&mut self, key: &str) -> Result<Option<bool>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .bool()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a boolean", v)),
        }
    }

    fn string(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| self.wrong(key, "a string", v)),
        }
    }

    fn required_string(&mut self, key: &str) -> Result<String> {
        self.string(key)?.ok_or_else(|| self.missing(key))
    }

    fn array(&mut self, key: &str) -> Result<Option<&'v [D]>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .array()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an array", v)),
        }
    }

    fn u64s(&mut self, key: &str) -> Result<Option<Vec<u64>>> {
        let Some(a) = self.array(key)? else {
            return Ok(None);
        };
        a.iter()
            .map(|v| {
                v.u64()
                    .ok_or_else(|| self.wrong(key, "an array of unsigned integers", v))
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    fn strings(&mut self, key: &str) -> Result<Option<Vec<String>>> {
        let Some(a) = self.array(key)? else {
            return Ok(None);
        };
        a.iter()
            .map(|v| {
                v.str()
                    .map(str::to_string)
                    .ok_or_else(|| self.wrong(key, "an array of strings", v))
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// The keys nobody asked for.
    fn rest(self) -> Vec<(String, Value)> {
        self.entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.owned()))
            .collect()
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "a boolean",
        Value::Integer(i) if i.is_u64() => "an unsigned integer",
        Value::Integer(_) => "a negative integer",
        Value::F32(_) | Value::F64(_) => "a float",
        Value::String(_) => "a string",
        Value::Binary(_) => "binary data",
        Value::Array(_) => "an array",
        Value::Map(_) => "a map",
        Value::Ext(..) => "an extension value",
    }
}

impl Metadata {
    /// Decodes the msgpack bytes of a metadata note; `offset` is their file offset, for errors.
    pub fn parse(desc: &[u8], offset: u64) -> Result<Metadata> {
        let mut rest = desc;
        let doc = rmpv::decode::read_value_ref(&mut rest).map_err(|e| {
            Error::at(
                offset + (desc.len() - rest.len()) as u64,
                format!("metadata is not valid msgpack: {e}"),
            )
        })?;
        Metadata::from_doc(&doc, offset)
    }

    /// Builds the typed view of an already decoded document.
    pub fn from_value(doc: &Value, offset: u64) -> Result<Metadata> {
        Metadata::from_doc(doc, offset)
    }

    fn from_doc<D: Doc>(doc: &D, offset: u64) -> Result<Metadata> {
        let root = Path {
            parent: "",
            item: None,
        };
        let mut r = MapReader::new(doc, root, offset)?;
        let version = r.u64s("amdhsa.version")?;
        let target = r.string("amdhsa.target")?;
        let printf = r.strings("amdhsa.printf")?;
        let kernels = match r.array("amdhsa.kernels")? {
            None => Vec::new(),
            Some(a) => a
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let path = Path {
                        parent: "",
                        item: Some(("amdhsa.kernels", i)),
                    };
                    KernelMetadata::from_doc(k, path, offset)
                })
                .collect::<Result<_>>()?,
        };
        Ok(Metadata {
            version,
            target,
            printf,
            kernels,
            unknown: r.rest(),
        })
    }

    /// The msgpack document, keys sorted like LLVM writes them.
    pub fn to_value(&self) -> Value {
        let mut m = MapWriter::default();
        m.opt("amdhsa.version", self.version.as_ref().map(|v| u64s(v)));
        m.opt("amdhsa.target", self.target.clone().map(Value::from));
        m.opt(
            "amdhsa.printf",
            self.printf
                .as_ref()
                .map(|v| Value::Array(v.iter().map(|s| Value::from(s.as_str())).collect())),
        );
        m.put(
            "amdhsa.kernels",
            Value::Array(self.kernels.iter().map(KernelMetadata::to_value).collect()),
        );
        m.finish(&self.unknown)
    }

    /// The msgpack bytes of [`Metadata::to_value`].
    pub fn to_msgpack(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = rmpv::encode::write_value(&mut out, &self.to_value());
        out
    }
}

impl KernelMetadata {
    fn from_doc<D: Doc>(v: &D, path: Path, offset: u64) -> Result<KernelMetadata> {
        let mut r = MapReader::new(v, path, offset)?;
        let mut k = KernelMetadata {
            name: r.required_string(".name")?,
            symbol: r.required_string(".symbol")?,
            kernarg_segment_size: r.u64(".kernarg_segment_size")?,
            kernarg_segment_align: r.u64(".kernarg_segment_align")?,
            group_segment_fixed_size: r.u64(".group_segment_fixed_size")?,
            private_segment_fixed_size: r.u64(".private_segment_fixed_size")?,
            uses_dynamic_stack: r.bool(".uses_dynamic_stack")?,
            sgpr_count: r.u64(".sgpr_count")?,
            vgpr_count: r.u64(".vgpr_count")?,
            agpr_count: r.u64(".agpr_count")?,
            sgpr_spill_count: r.u64(".sgpr_spill_count")?,
            vgpr_spill_count: r.u64(".vgpr_spill_count")?,
            wavefront_size: r.u64(".wavefront_size")?,
            max_flat_workgroup_size: r.u64(".max_flat_workgroup_size")?,
            uniform_work_group_size: r.u64(".uniform_work_group_size")?,
            workgroup_processor_mode: r.u64(".workgroup_processor_mode")?,
            language: r.string(".language")?,
            language_version: r.u64s(".language_version")?,
            reqd_workgroup_size: r.u64s(".reqd_workgroup_size")?,
            workgroup_size_hint: r.u64s(".workgroup_size_hint")?,
            vec_type_hint: r.string(".vec_type_hint")?,
            device_enqueue_symbol: r.string(".device_enqueue_symbol")?,
            args: Vec::new(),
            unknown: Vec::new(),
        };
        if let Some(args) = r.array(".args")? {
            // Built only when a kernel has arguments, not per argument.
            let kernel_path = path.to_string();
            for (i, a) in args.iter().enumerate() {
                let arg_path = Path {
                    parent: &kernel_path,
                    item: Some((".args", i)),
                };
                k.args.push(KernelArg::from_doc(a, arg_path, offset)?);
            }
        }
        k.unknown = r.rest();
        Ok(k)
    }

    fn to_value(&self) -> Value {
        let mut m = MapWriter::default();
        m.put(".name", Value::from(self.name.as_str()));
        m.put(".symbol", Value::from(self.symbol.as_str()));
        for (key, v) in [
            (".kernarg_segment_size", self.kernarg_segment_size),
            (".kernarg_segment_align", self.kernarg_segment_align),
            (".group_segment_fixed_size", self.group_segment_fixed_size),
            (
                ".private_segment_fixed_size",
                self.private_segment_fixed_size,
            ),
            (".sgpr_count", self.sgpr_count),
            (".vgpr_count", self.vgpr_count),
            (".agpr_count", self.agpr_count),
            (".sgpr_spill_count", self.sgpr_spill_count),
            (".vgpr_spill_count", self.vgpr_spill_count),
            (".wavefront_size", self.wavefront_size),
            (".max_flat_workgroup_size", self.max_flat_workgroup_size),
            (".uniform_work_group_size", self.uniform_work_group_size),
            (".workgroup_processor_mode", self.workgroup_processor_mode),
        ] {
            m.opt(key, v.map(Value::from));
        }
        m.opt(
            ".uses_dynamic_stack",
            self.uses_dynamic_stack.map(Value::from),
        );
        for (key, v) in [
            (".language", &self.language),
            (".vec_type_hint", &self.vec_type_hint),
            (".device_enqueue_symbol", &self.device_enqueue_symbol),
        ] {
            m.opt(key, v.as_deref().map(Value::from));
        }
        for (key, v) in [
            (".language_version", &self.language_version),
            (".reqd_workgroup_size", &self.reqd_workgroup_size),
            (".workgroup_size_hint", &self.workgroup_size_hint),
        ] {
            m.opt(key, v.as_ref().map(|v| u64s(v)));
        }
        if !self.args.is_empty() {
            m.put(
                ".args",
                Value::Array(self.args.iter().map(KernelArg::to_value).collect()),
            );
        }
        m.finish(&self.unknown)
    }
}

impl KernelArg {
    fn from_doc<D: Doc>(v: &D, path: Path, offset: u64) -> Result<KernelArg> {
        let mut r = MapReader::new(v, path, offset)?;
        Ok(KernelArg {
            name: r.string(".name")?,
            type_name: r.string(".type_name")?,
            offset: r.required_u64(".offset")?,
            size: r.required_u64(".size")?,
            value_kind: r.required_string(".value_kind")?,
            address_space: r.string(".address_space")?,
            access: r.string(".access")?,
            actual_access: r.string(".actual_access")?,
            is_const: r.bool(".is_const")?,
            is_restrict: r.bool(".is_restrict")?,
            is_volatile: r.bool(".is_volatile")?,
            is_pipe: r.bool(".is_pipe")?,
            pointee_align: r.u64(".pointee_align")?,
            unknown: r.rest(),
        })
    }

    fn to_value(&self) -> Value {
        let mut m = MapWriter::default();
        m.put(".offset", Value::from(self.offset));
        m.put(".size", Value::from(self.size));
        m.put(".value_kind", Value::from(self.value_kind.as_str()));
        m.opt(".pointee_align", self.pointee_align.map(Value::from));
        for (key, v) in [
            (".name", &self.name),
            (".type_name", &self.type_name),
            (".address_space", &self.address_space),
            (".access", &self.access),
            (".actual_access", &self.actual_access),
        ] {
            m.opt(key, v.as_deref().map(Value::from));
        }
        for (key, v) in [
            (".is_const", self.is_const),
            (".is_restrict", self.is_restrict),
            (".is_volatile", self.is_volatile),
            (".is_pipe", self.is_pipe),
        ] {
            m.opt(key, v.map(Value::from));
        }
        m.finish(&self.unknown)
    }
}

fn u64s(v: &[u64]) -> Value {
    Value::Array(v.iter().map(|&x| Value::from(x)).collect())
}

/// Collects map entries and emits them sorted by key, as LLVM's msgpack writer does.
#[derive(Default)]
struct MapWriter(Vec<(String, Value)>);

impl MapWriter {
    fn put(&mut self, key: &str, v: Value) {
        self.0.push((key.to_string(), v));
    }

    fn opt(&mut self, key: &str, v: Option<Value>) {
        if let Some(v) = v {
            self.put(key, v);
        }
    }

    fn finish(mut self, unknown: &[(String, Value)]) -> Value {
        self.0.extend(unknown.iter().cloned());
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Map(
            self.0
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        )
    }
}

/// msgpack value as JSON (binary data as an array of bytes, ext as [type, bytes]).
pub fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Nil => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => i
            .as_u64()
            .map(J::from)
            .or_else(|| i.as_i64().map(J::from))
            .unwrap_or(J::Null),
        Value::F32(f) => J::from(f64::from(*f)),
        Value::F64(f) => J::from(*f),
        Value::String(s) => J::String(
            s.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| String::from_utf8_lossy(s.as_bytes()).into_owned()),
        ),
        Value::Binary(b) => J::from(b.clone()),
        Value::Array(a) => J::Array(a.iter().map(to_json).collect()),
        Value::Map(m) => J::Object(
            m.iter()
                .map(|(k, v)| {
                    (
                        k.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| k.to_string()),
                        to_json(v),
                    )
                })
                .collect(),
        ),
        Value::Ext(t, b) => J::Array(vec![J::from(*t), J::from(b.clone())]),
    }
}

fn unknown_as_json<S: Serializer>(
    unknown: &[(String, Value)],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let map: serde_json::Map<String, serde_json::Value> = unknown
        .iter()
        .map(|(k, v)| (k.clone(), to_json(v)))
        .collect();
    map.serialize(s)
}
