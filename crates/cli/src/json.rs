//! Writing the `--json` documents: pretty-printed as `serde_json` prints a
//! `Value` (two-space indents, keys of every object sorted, which the
//! documents promise), with a `<key>_demangled` sibling beside every mangled
//! C++ name, but straight from the `Serialize` types, without building a
//! `Value` tree: an object's members are written one after another, key and
//! value, into the output buffer, and moved into key order at the end only if
//! they did not come in key order; no key is allocated and no tree is freed.
//! Documents are written piece by piece ([`JsonObject`], [`JsonArray`]), so
//! only one entry of a file is ever held in memory.

use std::io::{self, Write};
use std::ops::Range;

use serde::ser::{self, Serialize};

use crate::demangle::demangle;

/// Appends `value` to `out` as it would appear `depth` levels deep in a
/// document pretty-printed by `serde_json` after converting to a `Value`
/// (two spaces per level), names demangled beside mangled ones.
pub fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T, depth: usize) {
    write_value_with(out, value, depth, &mut Scratch::default());
}

/// [`write_value`] with scratch buffers the caller keeps for the next value.
fn write_value_with<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
    depth: usize,
    scratch: &mut Scratch,
) {
    // Serializing into memory cannot fail; a type that refuses (a map with
    // keys that are not strings or numbers) prints as null, as nothing better
    // fits, and leaves no members of its unfinished objects behind.
    scratch.members.clear();
    let start = out.len();
    if value
        .serialize(Pretty {
            out,
            depth,
            scratch,
        })
        .is_err()
    {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        Error(msg.to_string())
    }
}

type Result<T = ()> = std::result::Result<T, Error>;

/// The serializer: writes one value at `depth` into `out`.
struct Pretty<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: &'a mut Scratch,
}

/// Buffers reused from value to value.
#[derive(Default)]
struct Scratch {
    /// Where an object's members are copied while they are put in order.
    bytes: Vec<u8>,
    /// The members of the objects being written, innermost last: each object
    /// owns the entries from the length it found to the end.
    members: Vec<Member>,
    /// Objects whose members had to be moved into key order. Types declare
    /// their fields in key order so that this stays 0: every unsorted object
    /// moves all it contains, and so does every unsorted object around it.
    reordered: usize,
}

/// A member written in place: its key, and where in the output its text
/// (indent, key and value, without the separator before it) lies.
struct Member {
    key: Key,
    text: Range<usize>,
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    out.resize(out.len() + 2 * depth, b' ');
}

fn scalar<T: Serialize>(out: &mut Vec<u8>, value: T) -> Result {
    serde_json::to_writer(out, &value).map_err(|e| Error(e.to_string()))
}

/// A JSON string, as serde_json writes it; most strings need no escape and
/// are copied as they are.
fn string(out: &mut Vec<u8>, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(out, s);
    }
}

/// Whether `s` holds a byte JSON escapes: checked 16 bytes at a time without
/// stopping at each byte, which the compiler turns into vector compares.
fn needs_escape(s: &[u8]) -> bool {
    let escaped = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let chunks = s.chunks_exact(16);
    let rest = chunks.remainder();
    chunks
        .into_iter()
        .any(|c| c.iter().fold(false, |any, &b| any | escaped(b)))
        || rest.iter().any(|&b| escaped(b))
}

/// The demangled form of a name written as the JSON string `value` under
/// `key`, if the key holds names and the name is a mangled C++ one.
fn demangled(key: &str, value: &[u8]) -> Option<String> {
    if !matches!(key, "name" | "symbol" | "kernel" | "entry_symbol") || !value.starts_with(b"\"_Z")
    {
        return None;
    }
    demangle(&serde_json::from_slice::<String>(value).ok()?)
}

/// How many objects of `value` came with their members out of key order
/// (see [`Scratch::reordered`]).
#[cfg(test)]
pub fn reordered_objects<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut scratch = Scratch::default();
    write_value_with(&mut Vec::new(), value, 0, &mut scratch);
    scratch.reordered
}

/// An array being written: `[`, then each element on its own line.
struct Seq<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: &'a mut Scratch,
    items: usize,
    /// For enum variants: an object `{"variant": [...]}` to close too.
    variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.out
            .extend_from_slice(if self.items == 0 { b"\n" } else { b",\n" });
        self.items += 1;
        indent(self.out, self.depth + 1);
        value.serialize(Pretty {
            out: self.out,
            depth: self.depth + 1,
            scratch: self.scratch,
        })
    }

    fn finish(self) -> Result {
        if self.items > 0 {
            self.out.push(b'\n');
            indent(self.out, self.depth);
        }
        self.out.push(b']');
        if self.variant {
            close_variant(self.out, self.depth - 1);
        }
        Ok(())
    }
}

/// An object being written: members are written in the order they come, key
/// and value, and put in key order at the end if they came in another order.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: &'a mut Scratch,
    /// Where this object's members start in `out` (after the `{`).
    start: usize,
    /// Where this object's members start in `scratch.members`.
    first: usize,
    /// Whether the members so far came in key order.
    sorted: bool,
    /// A map key waiting for its value.
    pending: Option<Key>,
    variant: bool,
}

enum Key {
    Static(&'static str),
    Owned(String),
}

impl Key {
    fn as_str(&self) -> &str {
        match self {
            Key::Static(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl Object<'_> {
    fn member<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result {
        let members = &self.scratch.members;
        if let Some(last) = members.last().filter(|_| members.len() > self.first) {
            self.sorted &= last.key.as_str() <= key.as_str();
        }
        let first = members.len() == self.first;
        self.out
            .extend_from_slice(if first { b"\n" } else { b",\n" });
        let text_start = self.out.len();
        indent(self.out, self.depth + 1);
        string(self.out, key.as_str());
        self.out.extend_from_slice(b": ");
        let value_start = self.out.len();
        value.serialize(Pretty {
            out: self.out,
            depth: self.depth + 1,
            scratch: self.scratch,
        })?;
        let sibling = demangled(key.as_str(), &self.out[value_start..])
            .map(|d| (format!("{}_demangled", key.as_str()), d));
        self.scratch.members.push(Member {
            key,
            text: text_start..self.out.len(),
        });
        match sibling {
            Some((key, d)) => self.member(Key::Owned(key), d.as_str()),
            None => Ok(()),
        }
    }

    fn finish(self) -> Result {
        let members = &mut self.scratch.members[self.first..];
        if !self.sorted {
            self.scratch.reordered += 1;
            members.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
            let bytes = &mut self.scratch.bytes;
            bytes.clear();
            bytes.extend_from_slice(&self.out[self.start..]);
            self.out.truncate(self.start);
            for (i, m) in members.iter().enumerate() {
                self.out
                    .extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
                self.out
                    .extend_from_slice(&bytes[m.text.start - self.start..m.text.end - self.start]);
            }
        }
        if !members.is_empty() {
            self.out.push(b'\n');
            indent(self.out, self.depth);
        }
        self.scratch.members.truncate(self.first);
        self.out.push(b'}');
        if self.variant {
            close_variant(self.out, self.depth - 1);
        }
        Ok(())
    }
}

/// Opens `{"variant": ` around an enum variant's contents (as `serde_json`
/// writes externally tagged variants); returns the depth of the contents.
fn open_variant(out: &mut Vec<u8>, depth: usize, variant: &str) -> Result<usize> {
    out.extend_from_slice(b"{\n");
    indent(out, depth + 1);
    string(out, variant);
    out.extend_from_slice(b": ");
    Ok(depth + 1)
}

fn close_variant(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    indent(out, depth);
    out.push(b'}');
}

impl<'a> Pretty<'a> {
    fn seq(self, variant: bool) -> Seq<'a> {
        self.out.push(b'[');
        Seq {
            out: self.out,
            depth: self.depth,
            scratch: self.scratch,
            items: 0,
            variant,
        }
    }

    fn object(self, variant: bool) -> Object<'a> {
        self.out.push(b'{');
        Object {
            start: self.out.len(),
            first: self.scratch.members.len(),
            out: self.out,
            depth: self.depth,
            scratch: self.scratch,
            sorted: true,
            pending: None,
            variant,
        }
    }
}

impl<'a> ser::Serializer for Pretty<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Result {
        scalar(self.out, v)
    }
    fn serialize_i8(self, v: i8) -> Result {
        scalar(self.out, v)
    }
    fn serialize_i16(self, v: i16) -> Result {
        scalar(self.out, v)
    }
    fn serialize_i32(self, v: i32) -> Result {
        scalar(self.out, v)
    }
    fn serialize_i64(self, v: i64) -> Result {
        scalar(self.out, v)
    }
    fn serialize_i128(self, v: i128) -> Result {
        scalar(self.out, v)
    }
    fn serialize_u8(self, v: u8) -> Result {
        scalar(self.out, v)
    }
    fn serialize_u16(self, v: u16) -> Result {
        scalar(self.out, v)
    }
    fn serialize_u32(self, v: u32) -> Result {
        scalar(self.out, v)
    }
    fn serialize_u64(self, v: u64) -> Result {
        scalar(self.out, v)
    }
    fn serialize_u128(self, v: u128) -> Result {
        scalar(self.out, v)
    }
    // A Value holds every float as an f64.
    fn serialize_f32(self, v: f32) -> Result {
        scalar(self.out, f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        scalar(self.out, v)
    }
    fn serialize_char(self, v: char) -> Result {
        scalar(self.out, v)
    }
    fn serialize_str(self, v: &str) -> Result {
        string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        let mut seq = self.seq(false);
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        seq.finish()
    }
    fn serialize_none(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        string(self.out, variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        let depth = open_variant(self.out, self.depth, variant)?;
        value.serialize(Pretty {
            out: self.out,
            depth,
            scratch: self.scratch,
        })?;
        close_variant(self.out, self.depth);
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>> {
        Ok(self.seq(false))
    }
    fn serialize_tuple(self, _: usize) -> Result<Seq<'a>> {
        Ok(self.seq(false))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Seq<'a>> {
        Ok(self.seq(false))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Seq<'a>> {
        let depth = open_variant(self.out, self.depth, variant)?;
        Ok(Pretty { depth, ..self }.seq(true))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'a>> {
        Ok(self.object(false))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object<'a>> {
        Ok(self.object(false))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Object<'a>> {
        let depth = open_variant(self.out, self.depth, variant)?;
        Ok(Pretty { depth, ..self }.object(true))
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Seq<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.pending = Some(Key::Owned(key.serialize(MapKey)?));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        let key = self
            .pending
            .take()
            .ok_or_else(|| Error("a map value without a key".into()))?;
        self.member(key, value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.member(Key::Static(key), value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.member(Key::Static(key), value)
    }
    fn end(self) -> Result {
        self.finish()
    }
}

/// Map keys as `serde_json` makes them: strings, and numbers, chars and
/// unit variants turned into strings.
struct MapKey;

impl ser::Serializer for MapKey {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, v: bool) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_f32(self, _: f32) -> Result<String> {
        Err(Error("a float as a map key".into()))
    }
    fn serialize_f64(self, _: f64) -> Result<String> {
        Err(Error("a float as a map key".into()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String> {
        Err(Error("bytes as a map key".into()))
    }
    fn serialize_none(self) -> Result<String> {
        Err(Error("null as a map key".into()))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String> {
        Err(Error("an option as a map key".into()))
    }
    fn serialize_unit(self) -> Result<String> {
        Err(Error("() as a map key".into()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String> {
        Err(Error("a unit struct as a map key".into()))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String> {
        Err(Error("an enum as a map key".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Error("an array as a map key".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(Error("a tuple as a map key".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Error("a tuple as a map key".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Error("an enum as a map key".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Error("a map as a map key".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(Error("a struct as a map key".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Error("an enum as a map key".into()))
    }
}

/// Writes a pretty-printed JSON object one member at a time, in the layout
/// of [`write_value`]. Members must come in key order (the documents'
/// promise); arrays may be written item by item.
pub struct JsonObject {
    depth: usize,
    members: usize,
}

impl JsonObject {
    /// Starts an object at `depth` (the `{` is written where the cursor is).
    pub fn start(out: &mut dyn Write, depth: usize) -> io::Result<JsonObject> {
        out.write_all(b"{")?;
        Ok(JsonObject { depth, members: 0 })
    }

    fn key(&mut self, out: &mut dyn Write, key: &str) -> io::Result<()> {
        let mut line = Vec::with_capacity(2 * self.depth + key.len() + 8);
        line.extend_from_slice(if self.members == 0 { b"\n" } else { b",\n" });
        self.members += 1;
        indent(&mut line, self.depth + 1);
        string(&mut line, key);
        line.extend_from_slice(b": ");
        out.write_all(&line)
    }

    /// A member; a mangled name (under one of the name keys) is followed by
    /// its `<key>_demangled` sibling, as inside values.
    pub fn member<T: Serialize + ?Sized>(
        &mut self,
        out: &mut dyn Write,
        key: &str,
        value: &T,
    ) -> io::Result<()> {
        self.key(out, key)?;
        let mut buf = Vec::new();
        write_value(&mut buf, value, self.depth + 1);
        out.write_all(&buf)?;
        match demangled(key, &buf) {
            Some(d) => self.member(out, &format!("{key}_demangled"), &d),
            None => Ok(()),
        }
    }

    /// A member whose value is an array written item by item.
    pub fn array(&mut self, out: &mut dyn Write, key: &str) -> io::Result<JsonArray> {
        self.key(out, key)?;
        out.write_all(b"[")?;
        Ok(JsonArray {
            depth: self.depth + 1,
            items: 0,
            buf: Vec::new(),
            scratch: Scratch::default(),
        })
    }

    /// A member whose value is an object written member by member.
    pub fn object(&mut self, out: &mut dyn Write, key: &str) -> io::Result<JsonObject> {
        self.key(out, key)?;
        JsonObject::start(out, self.depth + 1)
    }

    pub fn end(self, out: &mut dyn Write) -> io::Result<()> {
        if self.members > 0 {
            let mut line = vec![b'\n'];
            indent(&mut line, self.depth);
            out.write_all(&line)?;
        }
        out.write_all(b"}")
    }
}

/// An array being written item by item (see [`JsonObject::array`]).
pub struct JsonArray {
    depth: usize,
    items: usize,
    /// Reused for each item: its text, and the serializer's scratch.
    buf: Vec<u8>,
    scratch: Scratch,
}

impl JsonArray {
    /// Starts a new item: separator and indent.
    fn next(&mut self) {
        self.buf.clear();
        self.buf
            .extend_from_slice(if self.items == 0 { b"\n" } else { b",\n" });
        self.items += 1;
        indent(&mut self.buf, self.depth + 1);
    }

    pub fn item<T: Serialize + ?Sized>(
        &mut self,
        out: &mut dyn Write,
        value: &T,
    ) -> io::Result<()> {
        self.next();
        write_value_with(&mut self.buf, value, self.depth + 1, &mut self.scratch);
        out.write_all(&self.buf)
    }

    /// An item that is an object written member by member.
    pub fn object(&mut self, out: &mut dyn Write) -> io::Result<JsonObject> {
        self.next();
        out.write_all(&self.buf)?;
        JsonObject::start(out, self.depth + 1)
    }

    pub fn end(self, out: &mut dyn Write) -> io::Result<()> {
        if self.items > 0 {
            let mut line = vec![b'\n'];
            indent(&mut line, self.depth);
            out.write_all(&line)?;
        }
        out.write_all(b"]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn pretty(v: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, v, 0);
        String::from_utf8(out).unwrap()
    }

    /// What serde_json prints for the same value, with names annotated as
    /// `annotate_json` does: the layout this module must reproduce.
    fn reference(v: &Value) -> String {
        let mut v = v.clone();
        crate::demangle::annotate_json(&mut v);
        serde_json::to_string_pretty(&v).unwrap()
    }

    #[test]
    fn strings_are_escaped_wherever_the_escape_falls() {
        for len in [1, 15, 16, 17, 40] {
            for at in 0..len {
                for bad in ["\"", "\\", "\n", "\u{1f}"] {
                    let v = Value::String(format!(
                        "{}{bad}{}",
                        "é".repeat(at),
                        "x".repeat(len - at - 1)
                    ));
                    assert_eq!(pretty(&v), reference(&v));
                }
            }
            let v = Value::String("xé~\u{7f}".repeat(len));
            assert_eq!(pretty(&v), reference(&v));
        }
    }

    #[test]
    fn values_print_as_serde_json_prints_them() {
        let doc = json!({
            "z": [],
            "b": [1, {"x": [true, false], "y": {}}, "s\nt\u{1}"],
            "a": {"d": [[]], "e": null, "c": -3.5},
            "f": {},
            "name": "_Z3fooi",
            "kernels": [{"symbol": "_Z3barv.kd", "kernel": "plain"}],
        });
        assert_eq!(pretty(&doc), reference(&doc));
        for v in [json!(null), json!([]), json!({}), json!(7), json!("x")] {
            assert_eq!(pretty(&v), reference(&v));
        }
    }

    #[test]
    fn structs_and_enums_print_as_their_values_do() {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        enum E {
            Unit,
            New(u8),
            Tuple(u8, String),
            Fields { zeta: u8, alpha: Option<u8> },
        }
        #[derive(serde::Serialize)]
        #[serde(tag = "layout", rename_all = "snake_case")]
        enum Tagged {
            Wide { width: u32 },
        }
        #[derive(serde::Serialize)]
        struct S<'a> {
            zulu: u32,
            name: &'a str,
            alpha: Vec<E>,
            tagged: Tagged,
            map: std::collections::HashMap<u32, &'a str>,
            float: f32,
            bytes: [u8; 2],
        }
        let s = S {
            zulu: 1,
            name: "_Z10vector_addPKfS0_Pfi",
            alpha: vec![
                E::Unit,
                E::New(2),
                E::Tuple(3, "t".into()),
                E::Fields {
                    zeta: 4,
                    alpha: None,
                },
            ],
            tagged: Tagged::Wide { width: 9 },
            map: [(10, "ten"), (2, "two")].into_iter().collect(),
            float: 0.1,
            bytes: [1, 2],
        };
        let mut out = Vec::new();
        write_value(&mut out, &s, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            reference(&serde_json::to_value(&s).unwrap())
        );
    }

    #[test]
    fn streamed_documents_print_as_serde_json_prints_them() {
        let doc = json!({
            "a": [],
            "b": [1, {"x": [true, false], "y": {}}, "s\nt"],
            "c": {"d": [[]], "e": null},
            "f": {},
        });
        let mut out = Vec::new();
        let mut top = JsonObject::start(&mut out, 0).unwrap();
        let a = top.array(&mut out, "a").unwrap();
        a.end(&mut out).unwrap();
        let mut b = top.array(&mut out, "b").unwrap();
        b.item(&mut out, &json!(1)).unwrap();
        let mut inner = b.object(&mut out).unwrap();
        let mut x = inner.array(&mut out, "x").unwrap();
        x.item(&mut out, &true).unwrap();
        x.item(&mut out, &false).unwrap();
        x.end(&mut out).unwrap();
        inner.member(&mut out, "y", &json!({})).unwrap();
        inner.end(&mut out).unwrap();
        b.item(&mut out, "s\nt").unwrap();
        b.end(&mut out).unwrap();
        top.member(&mut out, "c", &doc["c"]).unwrap();
        let f = top.object(&mut out, "f").unwrap();
        f.end(&mut out).unwrap();
        top.end(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), reference(&doc));
    }
}
