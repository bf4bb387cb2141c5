//! Parsing of the Kafka JSON message schemas into a small model.

use serde_json::{Map, Value};

/// A version range from a schema (`"3"`, `"1-4"`, `"2+"`, `"none"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versions {
    None,
    Range(i16, i16),
}

impl Versions {
    pub(crate) fn parse(s: &str) -> Versions {
        let s = s.trim();
        if s == "none" {
            Versions::None
        } else if let Some(lo) = s.strip_suffix('+') {
            Versions::Range(lo.parse().expect("version"), i16::MAX)
        } else if let Some((lo, hi)) = s.split_once('-') {
            Versions::Range(lo.parse().expect("version"), hi.parse().expect("version"))
        } else {
            let v = s.parse().expect("version");
            Versions::Range(v, v)
        }
    }

    pub(crate) fn intersect(self, other: Versions) -> Versions {
        match (self, other) {
            (Versions::Range(a, b), Versions::Range(c, d)) if a.max(c) <= b.min(d) => {
                Versions::Range(a.max(c), b.min(d))
            }
            _ => Versions::None,
        }
    }

    pub(crate) fn is_none(self) -> bool {
        self == Versions::None
    }

    /// A Rust boolean expression over `version` that is true inside `self`, simplified
    /// for versions that can occur (`valid`).
    pub(crate) fn cond(self, valid: Versions) -> String {
        let (Versions::Range(vlo, vhi), Versions::Range(lo, hi)) = (valid, self.intersect(valid))
        else {
            return "false".into();
        };
        match (lo > vlo, hi < vhi) {
            (false, false) => "true".into(),
            (true, false) => format!("version >= {lo}"),
            (false, true) => format!("version <= {hi}"),
            (true, true) if lo == hi => format!("version == {lo}"),
            (true, true) => format!("({lo}..={hi}).contains(&version)"),
        }
    }

    #[allow(dead_code)]
    pub(crate) fn contains(self, v: i16) -> bool {
        matches!(self, Versions::Range(lo, hi) if lo <= v && v <= hi)
    }

    pub(crate) fn describe(self) -> String {
        match self {
            Versions::None => "none".into(),
            Versions::Range(lo, i16::MAX) => format!("{lo}+"),
            Versions::Range(lo, hi) if lo == hi => format!("{lo}"),
            Versions::Range(lo, hi) => format!("{lo}-{hi}"),
        }
    }
}

/// A field's wire type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Type {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    Uint32,
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    Struct(String),
    Array(Box<Type>),
}

impl Type {
    fn parse(s: &str) -> Type {
        if let Some(inner) = s.strip_prefix("[]") {
            return Type::Array(Box::new(Type::parse(inner)));
        }
        match s {
            "bool" => Type::Bool,
            "int8" => Type::Int8,
            "int16" => Type::Int16,
            "int32" => Type::Int32,
            "int64" => Type::Int64,
            "uint16" => Type::Uint16,
            "uint32" => Type::Uint32,
            "float64" => Type::Float64,
            "uuid" => Type::Uuid,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "records" => Type::Records,
            s if s.starts_with(|c: char| c.is_ascii_uppercase()) => Type::Struct(s.to_string()),
            other => panic!("unknown field type {other}"),
        }
    }
}

/// One field of a struct.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) ty: Type,
    pub(crate) versions: Versions,
    pub(crate) nullable: Versions,
    pub(crate) tag: Option<u32>,
    pub(crate) tagged: Versions,
    pub(crate) default: Option<String>,
    pub(crate) ignorable: bool,
    pub(crate) flexible_override: Option<Versions>,
    pub(crate) map_key: bool,
    /// Inline struct fields, when this field defines a struct.
    pub(crate) fields: Option<Vec<Field>>,
}

/// A struct definition: the message itself, an inline struct or a common struct.
#[derive(Debug, Clone)]
pub(crate) struct StructDef {
    pub(crate) name: String,
    pub(crate) fields: Vec<Field>,
}

/// One schema file.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    pub(crate) api_key: Option<i16>,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) valid: Versions,
    pub(crate) flexible: Versions,
    pub(crate) latest_unstable: bool,
    pub(crate) listeners: Vec<String>,
    pub(crate) fields: Vec<Field>,
    pub(crate) common: Vec<StructDef>,
}

/// Removes `//` comments outside string literals.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for n in chars.by_ref() {
                if n == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn parse_field(v: &Value) -> Field {
    let m = v.as_object().expect("field object");
    let tagged = str_of(m, "taggedVersions")
        .map(Versions::parse)
        .unwrap_or(Versions::None);
    let versions = str_of(m, "versions").map(Versions::parse).unwrap_or(tagged);
    let default = m.get("default").map(|d| match d {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Field {
        name: str_of(m, "name").expect("name").to_string(),
        ty: Type::parse(str_of(m, "type").expect("type")),
        versions,
        nullable: str_of(m, "nullableVersions")
            .map(Versions::parse)
            .unwrap_or(Versions::None),
        tag: m.get("tag").and_then(Value::as_u64).map(|t| t as u32),
        tagged,
        default,
        ignorable: m.get("ignorable").and_then(Value::as_bool).unwrap_or(false),
        flexible_override: str_of(m, "flexibleVersions").map(Versions::parse),
        map_key: m.get("mapKey").and_then(Value::as_bool).unwrap_or(false),
        fields: m
            .get("fields")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(parse_field).collect()),
    }
}

pub(crate) fn parse_schema(text: &str) -> Schema {
    let v: Value = serde_json::from_str(&strip_comments(text)).expect("schema JSON");
    let m = v.as_object().expect("schema object");
    let fields = |v: Option<&Value>| -> Vec<Field> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().map(parse_field).collect())
            .unwrap_or_default()
    };
    Schema {
        api_key: m.get("apiKey").and_then(Value::as_i64).map(|k| k as i16),
        kind: str_of(m, "type").expect("type").to_string(),
        name: str_of(m, "name").expect("name").to_string(),
        valid: Versions::parse(str_of(m, "validVersions").expect("validVersions")),
        flexible: Versions::parse(str_of(m, "flexibleVersions").unwrap_or("none")),
        latest_unstable: m
            .get("latestVersionUnstable")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        listeners: m
            .get("listeners")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        fields: fields(m.get("fields")),
        common: m
            .get("commonStructs")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|c| StructDef {
                        name: str_of(c.as_object().expect("struct"), "name")
                            .expect("name")
                            .to_string(),
                        fields: fields(c.get("fields")),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

impl Schema {
    /// Every struct of the file in emission order: the message first, then nested structs
    /// depth-first in order of appearance, then common structs.
    pub(crate) fn structs(&self) -> Vec<StructDef> {
        fn walk(fields: &[Field], out: &mut Vec<StructDef>) {
            for f in fields {
                if let Some(inner) = &f.fields {
                    let name = match &f.ty {
                        Type::Struct(n) => n.clone(),
                        Type::Array(t) => match &**t {
                            Type::Struct(n) => n.clone(),
                            _ => panic!("inline fields on a primitive array {}", f.name),
                        },
                        _ => panic!("inline fields on a primitive {}", f.name),
                    };
                    if !out.iter().any(|s| s.name == name) {
                        out.push(StructDef {
                            name,
                            fields: inner.clone(),
                        });
                    }
                    walk(inner, out);
                }
            }
        }
        let mut out = vec![StructDef {
            name: self.name.clone(),
            fields: self.fields.clone(),
        }];
        walk(&self.fields, &mut out);
        for c in &self.common {
            out.push(c.clone());
            walk(&c.fields, &mut out);
        }
        out
    }
}
