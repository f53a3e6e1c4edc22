//! Images by magic bytes (not by extension), as Pi's read detects them.

use crate::FileSource;
use base64::Engine as _;
use toolhost_sdk::fs::FsError;
use toolhost_sdk::{Content, ToolOutput};

/// Largest base64 payload sent inline (Pi's 4.5 MiB image limit).
const MAX_INLINE_BASE64: usize = 4_718_592;

/// Bytes Pi's detector looks at.
const SAMPLE: usize = 4100;

/// The MIME type of a supported image, from its first bytes.
pub(crate) fn sniff(head: &[u8]) -> Option<&'static str> {
    let h = &head[..head.len().min(SAMPLE)];
    if h.len() >= 4 && h[..3] == [0xFF, 0xD8, 0xFF] && h[3] != 0xF7 {
        // FF D8 FF F7 is JPEG-LS, which models cannot take.
        return Some("image/jpeg");
    }
    if is_png(h) {
        return Some("image/png");
    }
    if h.starts_with(b"GIF") {
        return Some("image/gif");
    }
    if h.len() >= 12 && &h[..4] == b"RIFF" && &h[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    if is_bmp(h) {
        return Some("image/bmp");
    }
    None
}

/// A PNG with a valid IHDR chunk first; an animated PNG (`acTL` before the
/// first `IDAT`) is not an image here, as in Pi.
fn is_png(h: &[u8]) -> bool {
    const SIG: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    if h.len() < 16 || h[..8] != SIG || &h[12..16] != b"IHDR" {
        return false;
    }
    let mut at = 8usize;
    while at + 8 <= h.len() {
        let len = u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]) as usize;
        match &h[at + 4..at + 8] {
            b"acTL" => return false,
            b"IDAT" => return true,
            _ => {}
        }
        at = match at.checked_add(12 + len) {
            Some(next) => next,
            None => return true,
        };
    }
    true
}

/// `BM` followed by a known DIB header size.
fn is_bmp(h: &[u8]) -> bool {
    if h.len() < 18 || &h[..2] != b"BM" {
        return false;
    }
    let dib = u32::from_le_bytes([h[14], h[15], h[16], h[17]]);
    matches!(dib, 12 | 16 | 40 | 52 | 56 | 64 | 108 | 124)
}

/// The result for an image file: a caption and the image itself.
pub(crate) fn output(file: &FileSource, mime: &'static str) -> Result<ToolOutput, FsError> {
    let caption = format!("Read image file [{mime}]");
    if mime == "image/bmp" {
        // Models take JPEG, PNG, GIF and WebP only; conversion arrives with the
        // image pipeline (resizing), until then the image is not sent.
        return Ok(ToolOutput::text(format!(
            "{caption}\n[Image omitted: could not be converted to a supported inline image format.]"
        )));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(file.all()?);
    if data.len() > MAX_INLINE_BASE64 {
        return Ok(ToolOutput::text(format!(
            "{caption}\n[Image omitted: could not be resized below the inline image size limit.]"
        )));
    }
    Ok(ToolOutput {
        content: vec![
            Content::Text(caption),
            Content::Image {
                data,
                mime_type: mime.to_string(),
            },
        ],
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_magic() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xF7]), None);
        assert_eq!(sniff(b"GIF89a"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"hello"), None);
    }
}
