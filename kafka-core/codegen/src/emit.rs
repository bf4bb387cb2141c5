//! Emits the Rust source of one struct: definition, `Default`, `Encodable`, `Decodable`,
//! and (behind the `oracle` feature) Kafka-JSON rendering and seeded samples.

use std::fmt::Write;

use crate::names::{json_name, snake};
use crate::schema::{Field, StructDef, Type, Versions};

/// What a struct's code depends on: the message's valid and flexible versions.
pub(crate) struct Ctx {
    pub(crate) valid: Versions,
    pub(crate) flexible: Versions,
}

impl Ctx {
    fn has_flexible(&self) -> bool {
        !self.flexible.intersect(self.valid).is_none()
    }

    /// Versions in which `f` exists, clamped to the message's valid versions.
    fn present(&self, f: &Field) -> Versions {
        f.versions.intersect(self.valid)
    }

    /// Versions in which `f` is a tagged field.
    fn tagged(&self, f: &Field) -> Versions {
        if f.tag.is_some() {
            f.tagged.intersect(self.valid)
        } else {
            Versions::None
        }
    }

    /// Versions in which `f` is a regular (positional) field.
    fn regular(&self, f: &Field) -> Versions {
        let present = self.present(f);
        match (present, self.tagged(f)) {
            (p, Versions::None) => p,
            (Versions::Range(lo, _), Versions::Range(tlo, _)) if lo < tlo => {
                Versions::Range(lo, tlo - 1)
            }
            _ => Versions::None,
        }
    }

    fn nullable(&self, f: &Field) -> Versions {
        f.nullable.intersect(self.present(f))
    }

    fn is_option(&self, f: &Field) -> bool {
        !self.nullable(f).is_none()
    }

    /// Expression telling whether strings/bytes/arrays of `f` use the compact form.
    fn compact(&self, f: &Field) -> String {
        match f.flexible_override {
            Some(v) => v.cond(self.valid),
            None if self.has_flexible() => "flexible".into(),
            None => "false".into(),
        }
    }
}

pub(crate) fn rust_elem(t: &Type) -> String {
    match t {
        Type::Bool => "bool".into(),
        Type::Int8 => "i8".into(),
        Type::Int16 => "i16".into(),
        Type::Int32 => "i32".into(),
        Type::Int64 => "i64".into(),
        Type::Uint16 => "u16".into(),
        Type::Uint32 => "u32".into(),
        Type::Float64 => "f64".into(),
        Type::Uuid => "Uuid".into(),
        Type::String => "String".into(),
        Type::Bytes | Type::Records => "Bytes".into(),
        Type::Struct(n) => n.clone(),
        Type::Array(t) => format!("Vec<{}>", rust_elem(t)),
    }
}

fn type_name(t: &Type) -> String {
    match t {
        Type::Array(t) => format!("[]{}", type_name(t)),
        Type::Struct(n) => n.clone(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn rust_ty(ctx: &Ctx, f: &Field) -> String {
    let base = rust_elem(&f.ty);
    if ctx.is_option(f) {
        format!("Option<{base}>")
    } else {
        base
    }
}

fn int_literal(d: &str, ty: &str) -> String {
    let d = d.trim();
    let v: i128 = if let Some(h) = d.strip_prefix("0x").or_else(|| d.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).expect("hex default")
    } else if let Some(h) = d.strip_prefix("-0x") {
        -i128::from_str_radix(h, 16).expect("hex default")
    } else {
        d.parse().unwrap_or_else(|_| panic!("int default {d}"))
    };
    format!("{v}{ty}")
}

/// The non-null default value of a type, from the schema's default text.
fn default_value(t: &Type, d: Option<&str>) -> String {
    let d = d.filter(|d| !d.is_empty() || matches!(t, Type::String));
    match t {
        Type::Bool => match d {
            Some("true") => "true".into(),
            _ => "false".into(),
        },
        Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 | Type::Uint16 | Type::Uint32 => {
            int_literal(d.unwrap_or("0"), &rust_elem(t))
        }
        Type::Float64 => {
            let v: f64 = d.unwrap_or("0").parse().expect("float default");
            format!("{v:?}_f64")
        }
        Type::Uuid => match d {
            Some(text) if text != "AAAAAAAAAAAAAAAAAAAAAA" => {
                panic!("uuid default {text} unsupported")
            }
            _ => "Uuid::ZERO".into(),
        },
        Type::String => match d {
            Some(s) if !s.is_empty() => format!("String::from({s:?})"),
            _ => "String::new()".into(),
        },
        Type::Bytes | Type::Records => "Bytes::new()".into(),
        Type::Struct(n) => format!("{n}::default()"),
        Type::Array(_) => "Vec::new()".into(),
    }
}

/// Expression that is true when field `f` of `self` differs from its default.
fn non_default(ctx: &Ctx, f: &Field) -> String {
    let n = snake(&f.name);
    let d = field_default(ctx, f);
    if matches!(d.as_str(), "Vec::new()" | "String::new()" | "Bytes::new()") {
        format!("!self.{n}.is_empty()")
    } else {
        format!("self.{n} != {d}")
    }
}

fn field_default(ctx: &Ctx, f: &Field) -> String {
    let d = f.default.as_deref();
    if ctx.is_option(f) {
        if d == Some("null") || (d.is_none() && f.ty == Type::Records) {
            "None".into()
        } else {
            format!("Some({})", default_value(&f.ty, d))
        }
    } else {
        default_value(&f.ty, d.filter(|d| *d != "null"))
    }
}

/// Statements writing the non-null value `v` (an expression of type `&T`).
fn write_value(ctx: &Ctx, f: &Field, t: &Type, v: &str) -> String {
    let c = ctx.compact(f);
    match t {
        Type::Bool => format!("wire::put_bool(s, *{v});"),
        Type::Int8 => format!("wire::put_i8(s, *{v});"),
        Type::Int16 => format!("wire::put_i16(s, *{v});"),
        Type::Int32 => format!("wire::put_i32(s, *{v});"),
        Type::Int64 => format!("wire::put_i64(s, *{v});"),
        Type::Uint16 => format!("wire::put_u16(s, *{v});"),
        Type::Uint32 => format!("wire::put_u32(s, *{v});"),
        Type::Float64 => format!("wire::put_f64(s, *{v});"),
        Type::Uuid => format!("wire::put_uuid(s, {v});"),
        Type::String => format!("wire::put_str(s, {v}, {c})?;"),
        Type::Bytes | Type::Records => format!("wire::put_bytes(s, {v}, {c})?;"),
        Type::Struct(_) => format!("({v}).encode(s, version)?;"),
        Type::Array(inner) => format!(
            "wire::put_array_len(s, ({v}).len(), {c})?; for e in ({v}).iter() {{ {} }}",
            write_value(ctx, f, inner, "e")
        ),
    }
}

/// Statements writing field `f` of `self`, null handling included.
fn write_field(ctx: &Ctx, f: &Field) -> String {
    let name = snake(&f.name);
    if !ctx.is_option(f) {
        return write_value(ctx, f, &f.ty, &format!("&self.{name}"));
    }
    let c = ctx.compact(f);
    let null = match &f.ty {
        Type::String => format!("wire::put_opt_str(s, None, {c})?;"),
        Type::Struct(_) => "wire::put_i8(s, -1);".into(),
        _ => format!("wire::put_null_len(s, {c});"),
    };
    let some = match &f.ty {
        Type::Struct(_) => format!("wire::put_i8(s, 1); {}", write_value(ctx, f, &f.ty, "v")),
        t => write_value(ctx, f, t, "v"),
    };
    let ncond = ctx.nullable(f).cond(ctx.valid);
    let none_arm = if ncond == "true" {
        null
    } else {
        format!(
            "if {ncond} {{ {null} }} else {{ return Err(EncodeError::NullNotAllowed {{ field: {:?}, version }}); }}",
            f.name
        )
    };
    format!("match &self.{name} {{ Some(v) => {{ {some} }} None => {{ {none_arm} }} }}")
}

/// Expression reading a non-null value of type `t` from `b`.
fn read_value(ctx: &Ctx, f: &Field, t: &Type) -> String {
    let c = ctx.compact(f);
    let n = &f.name;
    match t {
        Type::Bool => "wire::get_bool(b)?".into(),
        Type::Int8 => "wire::get_i8(b)?".into(),
        Type::Int16 => "wire::get_i16(b)?".into(),
        Type::Int32 => "wire::get_i32(b)?".into(),
        Type::Int64 => "wire::get_i64(b)?".into(),
        Type::Uint16 => "wire::get_u16(b)?".into(),
        Type::Uint32 => "wire::get_u32(b)?".into(),
        Type::Float64 => "wire::get_f64(b)?".into(),
        Type::Uuid => "wire::get_uuid(b)?".into(),
        Type::String => format!("wire::get_str(b, {c}, {n:?})?"),
        Type::Bytes | Type::Records => format!("wire::get_bytes(b, {c}, {n:?})?"),
        Type::Struct(s) => format!("{s}::decode(b, version)?"),
        Type::Array(inner) => format!(
            "{{ let n = wire::get_array_len(b, {c}, {n:?})?; let mut v = Vec::with_capacity(n.min(wire::PREALLOC_LIMIT)); for _ in 0..n {{ v.push({}); }} v }}",
            read_value(ctx, f, inner)
        ),
    }
}

fn read_field(ctx: &Ctx, f: &Field) -> String {
    if !ctx.is_option(f) {
        return read_value(ctx, f, &f.ty);
    }
    let c = ctx.compact(f);
    let n = &f.name;
    let opt = match &f.ty {
        Type::String => format!("wire::get_opt_str(b, {c}, {n:?})?"),
        Type::Bytes | Type::Records => format!("wire::get_opt_bytes(b, {c}, {n:?})?"),
        Type::Struct(s) => format!("if wire::get_i8(b)? < 0 {{ None }} else {{ Some({s}::decode(b, version)?) }}"),
        Type::Array(inner) => format!(
            "match wire::get_opt_array_len(b, {c}, {n:?})? {{ None => None, Some(n) => {{ let mut v = Vec::with_capacity(n.min(wire::PREALLOC_LIMIT)); for _ in 0..n {{ v.push({}); }} Some(v) }} }}",
            read_value(ctx, f, inner)
        ),
        other => panic!("nullable {other:?}"),
    };
    let ncond = ctx.nullable(f).cond(ctx.valid);
    if ncond == "true" {
        opt
    } else {
        format!(
            "if {ncond} {{ {opt} }} else {{ Some({}) }}",
            read_value(ctx, f, &f.ty)
        )
    }
}

fn doc_for_field(ctx: &Ctx, f: &Field) -> String {
    let mut d = format!(
        "`{}`: {}, versions {}",
        f.name,
        type_name(&f.ty),
        ctx.present(f).describe()
    );
    if ctx.is_option(f) {
        let _ = write!(d, ", nullable in {}", ctx.nullable(f).describe());
    }
    if let Some(t) = f.tag {
        let _ = write!(d, ", tagged (tag {t}) in {}", ctx.tagged(f).describe());
    }
    if let Some(def) = &f.default {
        let _ = write!(d, ", default `{def}`");
    }
    if f.ignorable {
        d.push_str(", ignorable");
    }
    if f.map_key {
        d.push_str(", map key");
    }
    d.push('.');
    d
}

/// Emits one struct with all its impls.
pub(crate) fn emit_struct(out: &mut String, ctx: &Ctx, s: &StructDef, doc: &str) {
    let name = &s.name;
    let fields: Vec<&Field> = s
        .fields
        .iter()
        .filter(|f| !ctx.present(f).is_none())
        .collect();
    let flex = ctx.has_flexible();
    let flex_cond = ctx.flexible.cond(ctx.valid);

    // Definition.
    let _ = writeln!(out, "/// {doc}");
    let _ = writeln!(out, "#[derive(Debug, Clone, PartialEq)]");
    let _ = writeln!(out, "pub struct {name} {{");
    for f in &fields {
        let _ = writeln!(out, "    /// {}", doc_for_field(ctx, f));
        let _ = writeln!(out, "    pub {}: {},", snake(&f.name), rust_ty(ctx, f));
    }
    let _ = writeln!(
        out,
        "    /// Tagged fields not known to this crate, kept for re-encoding."
    );
    let _ = writeln!(out, "    pub unknown_tagged_fields: Vec<RawTaggedField>,");
    let _ = writeln!(out, "}}\n");

    // Default.
    let _ = writeln!(
        out,
        "impl Default for {name} {{\n    fn default() -> Self {{\n        Self {{"
    );
    for f in &fields {
        let _ = writeln!(
            out,
            "            {}: {},",
            snake(&f.name),
            field_default(ctx, f)
        );
    }
    let _ = writeln!(
        out,
        "            unknown_tagged_fields: Vec::new(),\n        }}\n    }}\n}}\n"
    );

    // Encodable.
    let _ = writeln!(out, "impl Encodable for {name} {{");
    let _ = writeln!(out, "    #[allow(unused_variables)]");
    let _ = writeln!(
        out,
        "    fn encode<S: Sink>(&self, s: &mut S, version: i16) -> Result<(), EncodeError> {{"
    );
    if flex {
        let _ = writeln!(out, "        let flexible = {flex_cond};");
    }
    for f in &fields {
        let regular = ctx.regular(f).cond(ctx.valid);
        let present = ctx.present(f).cond(ctx.valid);
        let mut missing = String::new();
        if !f.ignorable && present != "true" {
            missing = format!(
                "if !({present}) && {} {{ return Err(EncodeError::FieldNotInVersion {{ field: {:?}, version }}); }}",
                non_default(ctx, f),
                f.name
            );
        }
        if regular == "true" {
            let _ = writeln!(out, "        {}", write_field(ctx, f));
        } else if regular != "false" {
            let _ = writeln!(out, "        if {regular} {{ {} }}", write_field(ctx, f));
        }
        if !missing.is_empty() {
            let _ = writeln!(out, "        {missing}");
        }
    }
    let mut tagged: Vec<&&Field> = fields.iter().filter(|f| !ctx.tagged(f).is_none()).collect();
    tagged.sort_by_key(|f| f.tag);
    if flex {
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(
            out,
            "            let mut n = self.unknown_tagged_fields.len();"
        );
        for f in &tagged {
            let _ = writeln!(
                out,
                "            if {} && {} {{ n += 1; }}",
                ctx.tagged(f).cond(ctx.valid),
                non_default(ctx, f)
            );
        }
        let _ = writeln!(out, "            wire::put_uvarint(s, n as u32);");
        let _ = writeln!(
            out,
            "            let mut raw = self.unknown_tagged_fields.iter().peekable();"
        );
        for f in &tagged {
            let tag = f.tag.expect("tag");
            let body = write_field(ctx, f);
            let _ = writeln!(
                out,
                "            wire::put_raw_tags_below(s, &mut raw, {tag});"
            );
            let _ = writeln!(
                out,
                "            if {} && {} {{ wire::put_uvarint(s, {tag}); let mut counter = ByteCounter::default(); {{ let s = &mut counter; {body} }} wire::put_uvarint(s, counter.0 as u32); {body} }}",
                ctx.tagged(f).cond(ctx.valid),
                non_default(ctx, f)
            );
        }
        let _ = writeln!(
            out,
            "            wire::put_raw_tags_below(s, &mut raw, u32::MAX);"
        );
        if flex_cond != "true" {
            let _ = writeln!(
                out,
                "        }} else if !self.unknown_tagged_fields.is_empty() {{"
            );
            let _ = writeln!(out, "            return Err(EncodeError::FieldNotInVersion {{ field: \"unknown_tagged_fields\", version }});");
        }
        let _ = writeln!(out, "        }}");
    } else {
        let _ = writeln!(out, "        if !self.unknown_tagged_fields.is_empty() {{");
        let _ = writeln!(out, "            return Err(EncodeError::FieldNotInVersion {{ field: \"unknown_tagged_fields\", version }});");
        let _ = writeln!(out, "        }}");
    }
    let _ = writeln!(out, "        Ok(())\n    }}\n}}\n");

    // Decodable.
    let _ = writeln!(out, "impl Decodable for {name} {{");
    let _ = writeln!(out, "    #[allow(unused_variables, unused_mut)]");
    let _ = writeln!(
        out,
        "    fn decode(b: &mut Bytes, version: i16) -> Result<Self, DecodeError> {{"
    );
    if flex {
        let _ = writeln!(out, "        let flexible = {flex_cond};");
    }
    let _ = writeln!(out, "        let mut this = Self::default();");
    for f in &fields {
        let regular = ctx.regular(f).cond(ctx.valid);
        let assign = format!("this.{} = {};", snake(&f.name), read_field(ctx, f));
        if regular == "true" {
            let _ = writeln!(out, "        {assign}");
        } else if regular != "false" {
            let _ = writeln!(out, "        if {regular} {{ {assign} }}");
        }
    }
    if flex {
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(out, "            for _ in 0..wire::get_tag_count(b)? {{");
        let _ = writeln!(
            out,
            "                let (tag, mut data) = wire::get_tagged(b)?;"
        );
        let _ = writeln!(out, "                match tag {{");
        for f in &tagged {
            let cond = ctx.tagged(f).cond(ctx.valid);
            let guard = if cond == "true" {
                String::new()
            } else {
                format!(" if {cond}")
            };
            let _ = writeln!(
                out,
                "                    {}{guard} => {{ let declared = data.len(); let b = &mut data; this.{} = {}; wire::tagged_done(b, declared, {:?})?; }}",
                f.tag.expect("tag"),
                snake(&f.name),
                read_field(ctx, f),
                f.name
            );
        }
        let _ = writeln!(out, "                    _ => this.unknown_tagged_fields.push(RawTaggedField {{ tag, data }}),");
        let _ = writeln!(out, "                }}\n            }}\n        }}");
    }
    let _ = writeln!(out, "        Ok(this)\n    }}\n}}\n");

    emit_oracle(out, ctx, name, &fields);
}

fn json_value(t: &Type, v: &str) -> String {
    match t {
        Type::Bool
        | Type::Int8
        | Type::Int16
        | Type::Int32
        | Type::Int64
        | Type::Uint16
        | Type::Uint32 => {
            format!("Value::from(*{v})")
        }
        Type::Float64 => format!("oracle::json_f64(*{v})"),
        Type::Uuid | Type::String => format!("Value::String(({v}).to_string())"),
        Type::Bytes => format!("oracle::json_bytes({v})"),
        // Kafka's converters render record sets as an empty string, whatever they hold.
        Type::Records => "Value::String(String::new())".into(),
        Type::Struct(_) => format!("({v}).to_json(version)"),
        Type::Array(inner) => format!(
            "Value::Array(({v}).iter().map(|e| {}).collect())",
            json_value(inner, "e")
        ),
    }
}

fn sample_value(t: &Type) -> String {
    match t {
        Type::Bool => "r.bool()".into(),
        Type::Int8 => "r.i8()".into(),
        Type::Int16 => "r.i16()".into(),
        Type::Int32 => "r.i32()".into(),
        Type::Int64 => "r.i64()".into(),
        Type::Uint16 => "r.u16()".into(),
        Type::Uint32 => "r.u32()".into(),
        Type::Float64 => "r.f64()".into(),
        Type::Uuid => "r.uuid()".into(),
        Type::String => "r.string()".into(),
        Type::Bytes | Type::Records => "r.bytes()".into(),
        Type::Struct(s) => format!("{s}::sample(r, version)"),
        Type::Array(inner) => {
            format!(
                "{{ let n = r.len(); (0..n).map(|_| {}).collect() }}",
                sample_value(inner)
            )
        }
    }
}

fn emit_oracle(out: &mut String, ctx: &Ctx, name: &str, fields: &[&Field]) {
    let _ = writeln!(out, "#[cfg(feature = \"oracle\")]");
    let _ = writeln!(out, "impl OracleExt for {name} {{");
    let _ = writeln!(out, "    #[allow(unused_variables, unused_mut)]");
    let _ = writeln!(out, "    fn to_json(&self, version: i16) -> Value {{");
    let _ = writeln!(out, "        let mut m = serde_json::Map::new();");
    for f in fields {
        let n = snake(&f.name);
        let present = ctx.present(f).cond(ctx.valid);
        let value = if ctx.is_option(f) {
            format!(
                "match &self.{n} {{ Some(v) => {}, None => Value::Null }}",
                json_value(&f.ty, "v")
            )
        } else {
            json_value(&f.ty, &format!("&self.{n}"))
        };
        let insert = format!("m.insert({:?}.into(), {value});", json_name(&f.name));
        // Kafka's converters leave out tagged fields that hold their default.
        let present = if ctx.tagged(f).is_none() {
            present
        } else {
            format!(
                "({}) || (({}) && {})",
                ctx.regular(f).cond(ctx.valid),
                ctx.tagged(f).cond(ctx.valid),
                non_default(ctx, f)
            )
        };
        if present == "true" {
            let _ = writeln!(out, "        {insert}");
        } else {
            let _ = writeln!(out, "        if {present} {{ {insert} }}");
        }
    }
    let _ = writeln!(out, "        Value::Object(m)\n    }}\n");
    let _ = writeln!(out, "    #[allow(unused_variables, unused_mut)]");
    let _ = writeln!(
        out,
        "    fn sample(r: &mut SampleRng, version: i16) -> Self {{"
    );
    let _ = writeln!(out, "        let mut this = Self::default();");
    for f in fields {
        let n = snake(&f.name);
        let present = ctx.present(f).cond(ctx.valid);
        let v = sample_value(&f.ty);
        let assign = if ctx.is_option(f) {
            let ncond = ctx.nullable(f).cond(ctx.valid);
            format!("this.{n} = if ({ncond}) && r.null() {{ None }} else {{ Some({v}) }};")
        } else {
            format!("this.{n} = {v};")
        };
        if present == "true" {
            let _ = writeln!(out, "        {assign}");
        } else {
            let _ = writeln!(out, "        if {present} {{ {assign} }}");
        }
    }
    if ctx.has_flexible() {
        let _ = writeln!(
            out,
            "        if {} {{ this.unknown_tagged_fields = r.unknown_tags(); }}",
            ctx.flexible.cond(ctx.valid)
        );
    }
    let _ = writeln!(out, "        this\n    }}\n}}\n");
}
