//! Emits `messages/mod.rs`: module list, `ApiKey`, `Message`/`Request` impls and dispatch.

use std::fmt::Write;

use crate::names::snake;
use crate::schema::{Schema, Versions};
use crate::{Module, HEADER};

fn range(v: Versions) -> String {
    match v {
        Versions::Range(lo, hi) => format!("VersionRange::new({lo}, {hi})"),
        Versions::None => unreachable!("modules have valid versions"),
    }
}

fn flexible_min(s: &Schema) -> String {
    match s.flexible.intersect(s.valid) {
        Versions::Range(_, _) => match s.flexible {
            Versions::Range(lo, _) => format!("Some({lo})"),
            Versions::None => "None".into(),
        },
        Versions::None => "None".into(),
    }
}

fn message_impl(out: &mut String, module: &str, s: &Schema) {
    // Accessors for the top-level throttle time and error code, where the schema has them.
    let top = |name: &str, ty: crate::schema::Type| {
        s.fields
            .iter()
            .find(|f| f.name == name && f.ty == ty && f.tag.is_none())
            .map(|f| {
                let field = snake(&f.name);
                match f.versions.intersect(s.valid).cond(s.valid).as_str() {
                    "true" => format!("Some(self.{field})"),
                    cond => format!("if {cond} {{ Some(self.{field}) }} else {{ None }}"),
                }
            })
    };
    let mut extra = String::new();
    if let Some(body) = top("ThrottleTimeMs", crate::schema::Type::Int32) {
        let _ = write!(extra, "\n    fn throttle_time_ms(&self, version: i16) -> Option<i32> {{\n        let _ = version;\n        {body}\n    }}\n");
    }
    if let Some(body) = top("ErrorCode", crate::schema::Type::Int16) {
        let _ = write!(extra, "\n    fn top_level_error_code(&self, version: i16) -> Option<i16> {{\n        let _ = version;\n        {body}\n    }}\n");
    }
    let _ = writeln!(
        out,
        "impl Message for {module}::{name} {{\n    const NAME: &'static str = {name:?};\n    const VERSIONS: VersionRange = {};\n    const FLEXIBLE_MIN: Option<i16> = {};\n\n    fn unknown_tagged_fields(&self) -> &[RawTaggedField] {{\n        &self.unknown_tagged_fields\n    }}\n{extra}}}\n",
        range(s.valid),
        flexible_min(s),
        name = s.name,
    );
}

pub(crate) fn index_source(modules: &[Module]) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//! Every message of the Kafka protocol, one module per API key (request and response\n",
    );
    out.push_str("//! side by side), plus the request/response headers and the data schemas.\n\n");
    out.push_str("#![allow(clippy::all)]\n\n");
    out.push_str("use super::{Message, RawTaggedField, Request, VersionRange};\n\n");
    for m in modules {
        let _ = writeln!(out, "pub mod {};", m.file.trim_end_matches(".rs"));
    }
    out.push('\n');

    let mut apis: Vec<&Module> = modules
        .iter()
        .filter(|m| m.request.is_some() && m.response.is_some())
        .collect();
    apis.sort_by_key(|m| m.api_key);

    // ApiKey.
    out.push_str("/// A Kafka API key with valid versions in the 4.3.1 schemas.\n");
    out.push_str("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[repr(i16)]\n#[non_exhaustive]\npub enum ApiKey {\n");
    for m in &apis {
        let _ = writeln!(out, "    /// `{}`, key {}.", m.api, m.api_key.expect("key"));
        let _ = writeln!(out, "    {} = {},", m.api, m.api_key.expect("key"));
    }
    out.push_str("}\n\n");
    out.push_str("impl ApiKey {\n");
    out.push_str(
        "    /// Every API key, in key order.\n    pub const ALL: &'static [ApiKey] = &[\n",
    );
    for m in &apis {
        let _ = writeln!(out, "        ApiKey::{},", m.api);
    }
    out.push_str("    ];\n\n");
    let arms = |f: &dyn Fn(&Module) -> String| -> String {
        apis.iter()
            .map(|m| format!("            ApiKey::{} => {},\n", m.api, f(m)))
            .collect()
    };
    out.push_str("    /// The key for a wire value, if this crate knows it.\n    pub fn from_i16(key: i16) -> Option<ApiKey> {\n        match key {\n");
    for m in &apis {
        let _ = writeln!(
            out,
            "            {} => Some(ApiKey::{}),",
            m.api_key.expect("key"),
            m.api
        );
    }
    out.push_str("            _ => None,\n        }\n    }\n\n");
    let _ = write!(
        out,
        "    /// The API's name, as Kafka spells it.\n    pub fn name(self) -> &'static str {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|m| format!("{:?}", m.api))
    );
    let _ = write!(
        out,
        "    /// Every version the schemas define (and this crate encodes and decodes).\n    pub fn versions(self) -> VersionRange {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|m| range(m.request.as_ref().expect("req").valid))
    );
    let _ = write!(
        out,
        "    /// Whether the top version is unstable: brokers don't advertise it by default.\n    pub fn latest_version_unstable(self) -> bool {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|m| m.request.as_ref().expect("req").latest_unstable.to_string())
    );
    let _ = write!(
        out,
        "    /// The listener kinds exposing this API (`broker`, `controller`).\n    pub fn listeners(self) -> &'static [&'static str] {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|m| format!("&{:?}", m.request.as_ref().expect("req").listeners))
    );
    let _ = write!(
        out,
        "    /// First flexible request version, if any.\n    pub fn request_flexible_min(self) -> Option<i16> {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|m| flexible_min(m.request.as_ref().expect("req")))
    );
    let _ = write!(
        out,
        "    /// First flexible response version, if any.\n    pub fn response_flexible_min(self) -> Option<i16> {{\n        match self {{\n{}        }}\n    }}\n}}\n\n",
        arms(&|m| flexible_min(m.response.as_ref().expect("resp")))
    );

    // Message and Request impls.
    for m in modules {
        let module = m.file.trim_end_matches(".rs");
        for s in [&m.request, &m.response, &m.other].into_iter().flatten() {
            message_impl(&mut out, module, s);
        }
        if let (Some(req), Some(resp)) = (&m.request, &m.response) {
            let _ = writeln!(
                out,
                "impl Request for {module}::{} {{\n    const API_KEY: ApiKey = ApiKey::{};\n    type Response = {module}::{};\n}}\n",
                req.name, m.api, resp.name
            );
        }
    }

    // Dispatch.
    out.push_str("/// Which side of an API a message is.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub enum Direction {\n    /// Client to broker.\n    Request,\n    /// Broker to client.\n    Response,\n}\n\n");
    out.push_str("/// A generic operation run on the message type chosen at run time by [`visit_message`].\npub trait MessageVisitor {\n    /// What the visit returns.\n    type Output;\n    /// Runs the operation for message type `M`.\n    fn visit<M: Message>(self) -> Self::Output;\n}\n\n");
    out.push_str("/// Calls `visitor` with the message type of `key` and `direction`.\npub fn visit_message<V: MessageVisitor>(key: ApiKey, direction: Direction, visitor: V) -> V::Output {\n    match (key, direction) {\n");
    for m in &apis {
        let module = m.file.trim_end_matches(".rs");
        let _ = writeln!(
            out,
            "        (ApiKey::{}, Direction::Request) => visitor.visit::<{module}::{}>(),",
            m.api,
            m.request.as_ref().expect("req").name
        );
        let _ = writeln!(
            out,
            "        (ApiKey::{}, Direction::Response) => visitor.visit::<{module}::{}>(),",
            m.api,
            m.response.as_ref().expect("resp").name
        );
    }
    out.push_str("    }\n}\n");
    out
}
