//! Name conversions from schema names to Rust identifiers.

/// `ThrottleTimeMs` -> `throttle_time_ms`; Rust keywords get a trailing underscore.
pub(crate) fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1);
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    match out.as_str() {
        "type" | "match" | "ref" | "self" | "mod" | "fn" | "use" | "where" | "move" | "loop"
        | "in" | "as" | "box" | "impl" | "trait" | "struct" | "enum" | "const" | "static"
        | "crate" | "super" | "async" | "await" | "dyn" | "yield" | "try" | "gen" | "final"
        | "macro" => out + "_",
        _ => out,
    }
}

/// Kafka's JSON field name: the schema name with its first letter lower-cased.
pub(crate) fn json_name(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_ascii_lowercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

/// `ProduceRequest` -> `Produce`; `RequestHeader` stays.
pub(crate) fn api_name(schema_name: &str) -> &str {
    schema_name
        .strip_suffix("Request")
        .or_else(|| schema_name.strip_suffix("Response"))
        .unwrap_or(schema_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_cases() {
        assert_eq!(snake("ThrottleTimeMs"), "throttle_time_ms");
        assert_eq!(snake("ISRState"), "isr_state");
        assert_eq!(snake("Type"), "type_");
        assert_eq!(snake("ApiVersions"), "api_versions");
        assert_eq!(snake("V3AndBelow"), "v3_and_below");
        assert_eq!(snake("ClientID"), "client_id");
    }
}
