//! One-line YAML scalars as compose reads them: decoding the quoting styles, writing the one form
//! that needs no interpolation, compose's `$$`, and the blanks that indent a line.

/// How many spaces and tabs `text` starts with.
pub(super) fn leading_blanks(text: &str) -> usize {
    text.len() - text.trim_start_matches([' ', '\t']).len()
}

/// A value written as a single-quoted YAML scalar, `$` doubled so compose does not interpolate.
pub(super) fn compose_scalar(value: &str) -> String {
    format!("'{}'", value.replace('$', "$$").replace('\'', "''"))
}

/// Undoes compose's `$$`; `None` when a lone `$` would be interpolated.
pub(super) fn compose_unescape(literal: &str) -> Option<String> {
    let mut out = String::with_capacity(literal.len());
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            if chars.peek() == Some(&'$') {
                chars.next();
            } else {
                return None;
            }
        }
        out.push(c);
    }
    Some(out)
}

/// Decodes a one-line YAML scalar: single-quoted, double-quoted (common escapes) or plain, with
/// an optional trailing comment. `None` for anything else (a block scalar indicator, bad quoting).
pub(super) fn decode_scalar(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let trailing_ok = |rest: &str| {
        let rest = rest.trim_start();
        rest.is_empty() || rest.starts_with('#')
    };
    if let Some(body) = raw.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = body.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if c == '\'' {
                if matches!(chars.peek(), Some((_, '\''))) {
                    chars.next();
                    out.push('\'');
                } else {
                    return trailing_ok(&body[at + 1..]).then_some(out);
                }
            } else {
                out.push(c);
            }
        }
        return None;
    }
    if let Some(body) = raw.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => return trailing_ok(&body[at + 1..]).then_some(out),
                '\\' => {
                    let (_, escaped) = chars.next()?;
                    match escaped {
                        '"' | '\\' | '/' | '\'' => out.push(escaped),
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '$' => out.push('$'),
                        'u' => {
                            let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                            out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                        }
                        _ => return None,
                    }
                }
                _ => out.push(c),
            }
        }
        return None;
    }
    if raw.is_empty() || raw.starts_with(['|', '>', '&', '*', '!', '[', '{', '#']) {
        return None;
    }
    let plain = match raw.find(" #") {
        Some(at) => raw[..at].trim_end(),
        None => raw,
    };
    Some(plain.to_owned())
}
