//! The `multipart/form-data` body of `POST /files/bulk-upload`: for each file, the text field
//! `files[i].path` sent before the file field `files[i].file` (what the SDK sends, docs/daytona.md
//! §1.4; the documents name no fields).

use super::error::DaytonaError;

/// `(boundary, body)` uploading `bytes` to `path`.
pub(super) fn bulk_upload(path: &str, bytes: &[u8]) -> Result<(String, Vec<u8>), DaytonaError> {
    bulk_upload_many(&[(path, bytes)])
}

/// `(boundary, body)` uploading each `(path, bytes)`, `files[0]` first.
pub(super) fn bulk_upload_many(files: &[(&str, &[u8])]) -> Result<(String, Vec<u8>), DaytonaError> {
    if files.iter().any(|(path, _)| path.chars().any(char::is_control)) {
        return Err(DaytonaError::Refused("A path with a control character cannot be uploaded.".into()));
    }
    let boundary = format!("agenticos-{}", uuid::Uuid::new_v4().simple());
    let total: usize = files.iter().map(|(p, b)| p.len() + b.len() + 400).sum();
    let mut body = Vec::with_capacity(total);
    for (i, (path, bytes)) in files.iter().enumerate() {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"files[{i}].path\"\r\n\r\n{path}\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files[{i}].file\"; filename=\"file\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok((boundary, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_field_comes_before_the_file_and_the_body_is_closed() {
        let (b, body) = bulk_upload("notes/a.md", b"hi\r\n--x").unwrap();
        let text = String::from_utf8(body).unwrap();
        let path_at = text.find("name=\"files[0].path\"").unwrap();
        let file_at = text.find("name=\"files[0].file\"").unwrap();
        assert!(path_at < file_at);
        assert!(text.contains("\r\n\r\nnotes/a.md\r\n"));
        assert!(text.contains("\r\n\r\nhi\r\n--x\r\n"));
        assert!(text.ends_with(&format!("\r\n--{b}--\r\n")));
        assert!(bulk_upload("a\nb", b"").is_err());
    }

    #[test]
    fn many_files_are_numbered_in_order() {
        let (b, body) = bulk_upload_many(&[("a", b"1"), ("d/b", b"22")]).unwrap();
        let text = String::from_utf8(body).unwrap();
        let at = |s: &str| text.find(s).unwrap();
        assert!(at("files[0].path") < at("files[0].file") && at("files[0].file") < at("files[1].path"));
        assert!(text.contains("\r\n\r\nd/b\r\n") && text.contains("\r\n\r\n22\r\n--"));
        assert!(text.ends_with(&format!("\r\n--{b}--\r\n")));
    }
}
