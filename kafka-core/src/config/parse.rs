//! Value parsers shared by every config section, and the key-name suggester.
//!
//! Each parser takes the raw string value of one key and returns the typed value or a
//! short reason; the caller wraps the reason into [`ConfigError::InvalidValue`] with the
//! key and the (possibly redacted) value.
//!
//! [`ConfigError::InvalidValue`]: super::ConfigError::InvalidValue

use std::path::PathBuf;
use std::time::Duration;

/// A non-negative integer within `min..=max` (Java `int`/`long` keys).
pub(crate) fn int(value: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| format!("expected an integer in {min}..={max}"))?;
    if n < min || n > max {
        return Err(format!("out of range (expected {min}..={max})"));
    }
    Ok(n)
}

/// A `u32` within `min..=max`.
pub(crate) fn uint(value: &str, min: u32, max: u32) -> Result<u32, String> {
    let n = int(value, i64::from(min), i64::from(max))?;
    u32::try_from(n).map_err(|_| format!("out of range (expected {min}..={max})"))
}

/// A `*.ms` value whose Java type is `int`: 0..=i32::MAX milliseconds.
pub(crate) fn millis_int(value: &str) -> Result<Duration, String> {
    Ok(Duration::from_millis(
        int(value, 0, i64::from(i32::MAX))?.unsigned_abs(),
    ))
}

/// A `*.ms` value whose Java type is `long`: 0..=i64::MAX milliseconds.
pub(crate) fn millis_long(value: &str) -> Result<Duration, String> {
    Ok(Duration::from_millis(
        int(value, 0, i64::MAX)?.unsigned_abs(),
    ))
}

/// `true` or `false` (Java's boolean keys, case-insensitive).
pub(crate) fn boolean(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// Free text (ids, names): control characters are refused, since the text ends up in
/// request headers and logs.
pub(crate) fn text(value: &str) -> Result<String, String> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!("control character {c:?} not allowed")),
        None => Ok(value.to_owned()),
    }
}

/// Optional free text: the empty string means unset (Java's default for such keys).
pub(crate) fn opt_text(value: &str) -> Result<Option<String>, String> {
    let v = text(value)?;
    Ok((!v.is_empty()).then_some(v))
}

/// A file path, kept as a path: the core never opens it, the adapter does.
pub(crate) fn path(value: &str) -> Result<PathBuf, String> {
    if value.trim().is_empty() {
        return Err("empty path".into());
    }
    if value.contains('\0') {
        return Err("NUL character in path".into());
    }
    Ok(PathBuf::from(value))
}

/// Inline PEM text: must contain at least one `-----BEGIN <label>-----` block whose
/// label contains `want` (e.g. `CERTIFICATE`, `PRIVATE KEY`). Not decoded here.
pub(crate) fn pem(value: &str, want: &str) -> Result<String, String> {
    let found = value.split("-----BEGIN ").skip(1).any(|rest| {
        rest.split_once("-----")
            .is_some_and(|(label, _)| label.contains(want))
    });
    if found {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "expected PEM text with a `-----BEGIN ...{want}-----` block"
        ))
    }
}

/// The labels of the `-----BEGIN <label>-----` blocks in `value`, in order. A label
/// that is not the short upper-case text PEM labels are (say, base64 joined onto the
/// BEGIN line) shows as `?`, so the result never carries key material.
pub(crate) fn pem_labels(value: &str) -> Vec<&str> {
    value
        .split("-----BEGIN ")
        .skip(1)
        .map(|rest| match rest.split_once("-----") {
            Some((label, _))
                if label.len() <= 40
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ') =>
            {
                label
            }
            _ => "?",
        })
        .collect()
}

/// Whether `value` holds a private key block (`PRIVATE KEY`, `RSA PRIVATE KEY`,
/// `ENCRYPTED PRIVATE KEY`, ...), judged by its BEGIN lines.
pub(crate) fn has_private_key(value: &str) -> bool {
    value.split("-----BEGIN ").skip(1).any(|rest| {
        rest.split("-----")
            .next()
            .is_some_and(|l| l.contains("PRIVATE KEY"))
    })
}

/// How PEM text is shown in `Debug` and errors: its size and block labels, never its
/// contents (a private key pasted into a certificate setting must not be echoed).
pub(crate) fn pem_summary(value: &str) -> String {
    let labels = pem_labels(value);
    if labels.is_empty() {
        format!("<{} bytes, no PEM block>", value.len())
    } else {
        format!("<{} bytes of PEM: {}>", value.len(), labels.join(", "))
    }
}

/// Whether a value looks like PEM text (then errors show [`pem_summary`] instead).
pub(crate) fn looks_like_pem(value: &str) -> bool {
    value.contains("-----BEGIN")
}

/// A password: anything but NUL (SASL/PLAIN uses NUL as its field separator).
pub(crate) fn password(value: &str) -> Result<String, String> {
    if value.contains('\0') {
        Err("NUL character not allowed".into())
    } else {
        Ok(value.to_owned())
    }
}

/// Levenshtein distance over bytes (key names are ASCII).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within edit distance 2, if any (ties: the first one).
pub(crate) fn suggest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(key, c), c))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text() {
        assert_eq!(millis_int("0").unwrap(), Duration::ZERO);
        assert!(millis_int("-1").is_err());
        assert!(millis_int("2147483648").is_err());
        assert!(millis_long("1.5").is_err());
        assert_eq!(uint(" 7 ", 1, 9).unwrap(), 7);
        assert!(text("a\nb").is_err());
        assert_eq!(opt_text("").unwrap(), None);
        assert!(pem(
            "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
            "CERTIFICATE"
        )
        .is_ok());
        assert!(pem("-----BEGIN CERTIFICATE-----", "PRIVATE KEY").is_err());
    }

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let keys = ["bootstrap.servers", "client.id"];
        assert_eq!(
            suggest("bootstrap.server", keys.into_iter()),
            Some("bootstrap.servers")
        );
        assert_eq!(suggest("linger.ms", keys.into_iter()), None);
    }
}
