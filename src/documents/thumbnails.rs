//! Thumbnails and text previews for tiles. An image is a candidate only by its listed extension and
//! size; its header's dimensions are checked before decoding, the decoder runs under a memory cap
//! in a blocking task (never on the async workers), a photo is turned the way its EXIF says, and
//! a failure keeps the glyph.

use std::io::Cursor;

use base64::Engine as _;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits};

use super::model::FileKind;

/// Largest file read for a thumbnail.
pub const MAX_IMAGE_BYTES: u64 = 4 * 1024 * 1024;
/// Most pixels decoded (16 Mi).
pub const MAX_PIXELS: u64 = 16 * 1024 * 1024;
/// Images read from a host (or thumbnails drawn) per page request.
pub const MAX_THUMBNAILS: usize = 24;
/// Text files read for a preview per page request.
pub const MAX_TEXT_PREVIEWS: usize = 24;
/// A thumbnail's box.
pub const WIDTH: u32 = 160;
pub const HEIGHT: u32 = 128;
/// A text tile: its first lines, at most this many characters.
pub const PREVIEW_LINES: u64 = 8;
pub const PREVIEW_CHARS: usize = 200;
/// Largest text file previewed.
pub const MAX_TEXT_BYTES: u64 = 1024 * 1024;

const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];
const TEXT_EXTENSIONS: [&str; 24] = [
    "txt", "md", "markdown", "csv", "tsv", "json", "yaml", "yml", "toml", "py", "rs", "js", "ts", "html", "css", "xml",
    "sh", "log", "ini", "cfg", "sql", "go", "java", "c",
];

/// The lower-cased extension of a path's last part.
pub fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// What kind a file is, by its extension in any case (called for every listed file: nothing
/// allocated).
pub fn kind_of(path: &str) -> FileKind {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext,
        _ => return FileKind::Other,
    };
    let listed = |list: &[&str]| list.iter().any(|e| e.eq_ignore_ascii_case(ext));
    if listed(&IMAGE_EXTENSIONS) {
        FileKind::Image
    } else if ext.eq_ignore_ascii_case("pdf") {
        FileKind::Pdf
    } else if listed(&TEXT_EXTENSIONS) {
        FileKind::Text
    } else {
        FileKind::Other
    }
}

/// Whether a listed file may be read for a thumbnail.
pub fn is_thumbnail_candidate(path: &str, size: Option<u64>) -> bool {
    kind_of(path) == FileKind::Image && size.is_some_and(|s| s <= MAX_IMAGE_BYTES)
}

/// Whether a listed file may be read for a text preview.
pub fn is_preview_candidate(path: &str, size: Option<u64>) -> bool {
    kind_of(path) == FileKind::Text && size.is_some_and(|s| s <= MAX_TEXT_BYTES)
}

/// A thumbnail of `bytes` as a `data:` URL, decoded on a blocking thread; none when it is not an
/// image we decode, too many pixels, or broken.
pub async fn thumbnail(bytes: Vec<u8>) -> Option<String> {
    tokio::task::spawn_blocking(move || scale(&bytes)).await.ok().flatten()
}

fn scale(bytes: &[u8]) -> Option<String> {
    let (w, h) = ImageReader::new(Cursor::new(bytes)).with_guessed_format().ok()?.into_dimensions().ok()?;
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return None;
    }
    let mut reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format().ok()?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    // RGBA at the most pixels allowed, and some room for the decoder's own buffers.
    limits.max_alloc = Some(MAX_PIXELS * 4 + 16 * 1024 * 1024);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().ok()?;
    // A camera's photo says in its EXIF which way is up; a thumbnail stands that way.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    image.apply_orientation(orientation);
    let small = image.thumbnail(WIDTH, HEIGHT).to_rgba8();
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(small.as_raw(), small.width(), small.height(), image::ExtendedColorType::Rgba8)
        .ok()?;
    Some(format!("data:image/webp;base64,{}", base64::engine::general_purpose::STANDARD.encode(out)))
}

/// The first [`PREVIEW_LINES`] lines of a text, at most [`PREVIEW_CHARS`] characters.
pub fn text_preview(text: &str) -> String {
    let lines: Vec<&str> = text.lines().take(PREVIEW_LINES as usize).collect();
    let joined = lines.join("\n");
    if joined.chars().count() > PREVIEW_CHARS {
        let cut: String = joined.chars().take(PREVIEW_CHARS).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbaImage::from_pixel(w, h, image::Rgba([200, 10, 10, 255]));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).expect("png");
        out.into_inner()
    }

    #[test]
    fn an_image_is_scaled_into_the_box() {
        let url = scale(&png(640, 320)).expect("thumbnail");
        let b64 = url.strip_prefix("data:image/webp;base64,").expect("webp");
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).expect("b64");
        let img = image::load_from_memory(&bytes).expect("decodes");
        assert_eq!((img.width(), img.height()), (160, 80));
    }

    #[test]
    fn broken_bytes_keep_the_glyph() {
        assert!(scale(b"\x89PNG\r\n\x1a\nnot really").is_none());
        assert!(scale(b"plain text").is_none());
    }

    #[test]
    fn candidates_by_extension_and_size() {
        assert!(is_thumbnail_candidate("a/B.JPG", Some(10)));
        assert!(!is_thumbnail_candidate("a/b.svg", Some(10)));
        assert!(!is_thumbnail_candidate("a/b.png", Some(MAX_IMAGE_BYTES + 1)));
        assert!(is_preview_candidate("notes.md", Some(3)));
        assert_eq!(kind_of("x.pdf"), FileKind::Pdf);
        assert_eq!(kind_of("dir.v2/REPORT.PDF"), FileKind::Pdf);
        assert_eq!(kind_of("a/Notes.Md"), FileKind::Text);
        assert_eq!(kind_of(".png"), FileKind::Other);
        assert_eq!(kind_of("dir.png/readme"), FileKind::Other);
        assert_eq!(extension(".bashrc"), "");
    }

    #[test]
    fn a_preview_is_eight_lines_and_200_characters_at_most() {
        let text = (1..=20).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        assert_eq!(text_preview(&text).lines().count(), 8);
        let long = "x".repeat(500);
        assert_eq!(text_preview(&long).chars().count(), 201);
    }
}
