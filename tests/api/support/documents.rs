//! What a person sees on Documents.

use reqwest::Method;

use crate::helpers::Client;

/// The workspace ids of the groups `c` sees on Documents (`GET /api/v1/documents`), in order.
pub(crate) async fn workspaces_seen_by(c: &Client) -> Vec<String> {
    let r = c.api(Method::GET, "/api/v1/documents", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["workspace"]["id"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A JPEG of `w`×`h` whose EXIF says "turn 90° clockwise to show" (orientation 6).
pub(crate) fn jpeg_turned(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([10, 120, 200]));
    let mut jpeg = std::io::Cursor::new(Vec::new());
    img.write_to(&mut jpeg, image::ImageFormat::Jpeg).expect("jpeg");
    let jpeg = jpeg.into_inner();
    // APP1: "Exif\0\0", a big-endian TIFF header, one IFD entry (0x0112 SHORT 1 = 6), no next IFD.
    let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x06\0\0\0\0\0\0".to_vec();
    let len = u16::try_from(exif.len() + 2).expect("short");
    let mut out = vec![0xFF, 0xD8, 0xFF, 0xE1];
    out.extend_from_slice(&len.to_be_bytes());
    out.append(&mut exif);
    out.extend_from_slice(&jpeg[2..]);
    out
}
