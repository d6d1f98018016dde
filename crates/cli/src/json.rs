//! Writing the `--json` documents: pretty-printed as `serde_json` prints a
//! `Value` (two-space indents, keys of every object sorted, which the
//! documents promise), with a `<key>_demangled` sibling beside every mangled
//! C++ name, but straight from the `Serialize` types, without building a
//! `Value` tree: an object's members are serialized one after another into
//! the output buffer and then put in key order, so no key is allocated and
//! no tree is freed. Documents are written piece by piece ([`JsonObject`],
//! [`JsonArray`]), so only one entry of a file is ever held in memory.

use std::io::{self, Write};
use std::ops::Range;

use serde::ser::{self, Serialize};

use crate::demangle::demangle;

/// Keys whose string values are symbol names, which get a demangled sibling.
const NAME_KEYS: &[&str] = &["name", "symbol", "kernel", "entry_symbol"];

/// Appends `value` to `out` as it would appear `depth` levels deep in a
/// document pretty-printed by `serde_json` after converting to a `Value`
/// (two spaces per level), names demangled beside mangled ones.
pub fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T, depth: usize) {
    write_value_with(out, value, depth, &mut Vec::new());
}

/// [`write_value`] with a scratch buffer the caller keeps for the next value.
fn write_value_with<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
    depth: usize,
    scratch: &mut Vec<u8>,
) {
    // Serializing into memory cannot fail; a type that refuses (a map with
    // keys that are not strings or numbers) prints as null, as nothing better fits.
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
    /// Where an object's members are copied while they are put in order.
    scratch: &'a mut Vec<u8>,
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

fn scalar<T: Serialize>(out: &mut Vec<u8>, value: T) -> Result {
    serde_json::to_writer(out, &value).map_err(|e| Error(e.to_string()))
}

/// An array being written: `[`, then each element on its own line.
struct Seq<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: &'a mut Vec<u8>,
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

/// An object being written: members are serialized in the order they come,
/// each value in place, and put in key order at the end.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: &'a mut Vec<u8>,
    /// Where this object's member values start in `out`.
    start: usize,
    members: Vec<(Key, Range<usize>)>,
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
        let from = self.out.len();
        value.serialize(Pretty {
            out: self.out,
            depth: self.depth + 1,
            scratch: self.scratch,
        })?;
        let range = from..self.out.len();
        let demangled = NAME_KEYS
            .contains(&key.as_str())
            .then(|| serde_json::from_slice::<String>(&self.out[range.clone()]).ok())
            .flatten()
            .and_then(|name| demangle(&name));
        if let Some(d) = demangled {
            let at = self.out.len();
            scalar(self.out, d)?;
            let sibling = format!("{}_demangled", key.as_str());
            self.members.push((Key::Owned(sibling), at..self.out.len()));
        }
        self.members.push((key, range));
        Ok(())
    }

    fn finish(mut self) -> Result {
        self.members
            .sort_by(|(a, _), (b, _)| a.as_str().cmp(b.as_str()));
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.out[self.start..]);
        self.out.truncate(self.start);
        self.out.push(b'{');
        for (i, (key, range)) in self.members.iter().enumerate() {
            self.out
                .extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
            indent(self.out, self.depth + 1);
            scalar(self.out, key.as_str())?;
            self.out.extend_from_slice(b": ");
            let r = range.start - self.start..range.end - self.start;
            self.out.extend_from_slice(&self.scratch[r]);
        }
        if !self.members.is_empty() {
            self.out.push(b'\n');
            indent(self.out, self.depth);
        }
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
    scalar(out, variant)?;
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
        let start = self.out.len();
        Object {
            out: self.out,
            depth: self.depth,
            scratch: self.scratch,
            start,
            members: Vec::new(),
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
        scalar(self.out, v)
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
        scalar(self.out, variant)
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
        let _ = scalar(&mut line, key);
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
        let demangled = NAME_KEYS
            .contains(&key)
            .then(|| serde_json::from_slice::<String>(&buf).ok())
            .flatten()
            .and_then(|name| demangle(&name));
        match demangled {
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
            scratch: Vec::new(),
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
    scratch: Vec<u8>,
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
