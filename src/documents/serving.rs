//! How a file's bytes are answered: `Content-Type` inline only for types a browser draws safely
//! (png, jpeg, gif, webp, pdf); everything else (svg and html included) as an attachment of
//! `application/octet-stream`. Always `nosniff` and `Content-Security-Policy: sandbox`, and the
//! file name encoded per RFC 5987.

use actix_web::http::header;
use actix_web::HttpResponse;

use super::thumbnails::extension;

/// The type to send inline, for the few that are safe to draw.
pub fn inline_type(path: &str) -> Option<&'static str> {
    match extension(path).as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        "pdf" => Some("application/pdf"),
        _ => None,
    }
}

/// `filename*=UTF-8''…` (RFC 5987) and a plain ASCII fallback.
pub fn disposition(kind: &str, name: &str) -> String {
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
    let mut encoded = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// The answer carrying a file's bytes; `download` makes even a safe type an attachment.
pub fn respond(path: &str, bytes: Vec<u8>, download: bool) -> HttpResponse {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (content_type, kind) = match inline_type(path) {
        Some(t) if !download => (t, "inline"),
        Some(t) => (t, "attachment"),
        None => ("application/octet-stream", "attachment"),
    };
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CONTENT_DISPOSITION, disposition(kind, name)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"))
        // Our own pages may frame a PDF; nobody else may.
        .insert_header((header::X_FRAME_OPTIONS, "SAMEORIGIN"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_types_are_inline() {
        assert_eq!(inline_type("a.PNG"), Some("image/png"));
        assert_eq!(inline_type("doc.pdf"), Some("application/pdf"));
        for p in ["x.svg", "x.html", "x.htm", "x.js", "x", "x.txt"] {
            assert_eq!(inline_type(p), None, "{p}");
        }
    }

    #[test]
    fn file_names_are_encoded_per_rfc_5987() {
        let d = disposition("attachment", "résumé \"final\".svg");
        assert_eq!(
            d,
            "attachment; filename=\"r_sum_ _final_.svg\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.svg"
        );
    }
}
