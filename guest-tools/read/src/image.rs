//! Images by magic bytes (not by extension), as Pi's read detects them, and
//! their preparation for a model (spec §1.6 step 4): JPEG, PNG, GIF and WebP
//! are sent as they are when they fit; other formats (BMP) are converted to
//! PNG; an image larger than 2000×2000 or 4.5 MiB of base64 is scaled down,
//! encoded as PNG and JPEG, and the smaller is kept, with lower JPEG
//! qualities and then smaller sizes until it fits.

use crate::FileSource;
use base64::Engine as _;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader};
use std::io::Cursor;
use toolhost_sdk::fs::FsError;
use toolhost_sdk::{Content, ToolOutput};

/// Largest base64 payload sent inline (4.5 MiB, below providers' 5 MB limit).
const MAX_INLINE_BASE64: usize = 4 * 1024 * 1024 + 512 * 1024;
const MAX_WIDTH: u32 = 2000;
const MAX_HEIGHT: u32 = 2000;
/// JPEG quality of the first attempt, then the fallbacks.
const FIRST_QUALITY: u8 = 80;
const QUALITY_STEPS: [u8; 4] = [85, 70, 55, 40];
/// Each further attempt shrinks by this factor, down to 100 pixels a side.
const SHRINK: f64 = 0.75;
const MIN_SIDE: u32 = 100;

/// Bytes Pi's detector looks at.
const SAMPLE: usize = 4100;

const NOT_CONVERTIBLE: &str =
    "[Image omitted: could not be converted to a supported inline image format.]";
const TOO_LARGE: &str = "[Image omitted: could not be resized below the inline image size limit.]";

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

/// The result for an image file: a caption (with hints) and the image, or the
/// caption and why the image was left out.
pub(crate) fn output(file: &FileSource, sniffed: &'static str) -> Result<ToolOutput, FsError> {
    let bytes = file.all()?;
    Ok(match prepare(&bytes, sniffed) {
        Ok(prepared) => {
            let mut caption = format!("Read image file [{}]", prepared.mime_type);
            for hint in &prepared.hints {
                caption.push('\n');
                caption.push_str(hint);
            }
            ToolOutput {
                content: vec![
                    Content::Text(caption),
                    Content::Image {
                        data: prepared.data,
                        mime_type: prepared.mime_type.to_string(),
                    },
                ],
                ..Default::default()
            }
        }
        Err(omitted) => ToolOutput::text(format!("Read image file [{sniffed}]\n{omitted}")),
    })
}

/// An image ready to send: base64 data, its type, and notes for the model.
pub(crate) struct Prepared {
    pub data: String,
    pub mime_type: &'static str,
    pub hints: Vec<String>,
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Convert and resize as Pi does; `Err` is the omission notice.
pub(crate) fn prepare(bytes: &[u8], sniffed: &'static str) -> Result<Prepared, &'static str> {
    let mut hints = Vec::new();
    let (png_copy, mime): (Option<Vec<u8>>, &'static str) = match sniffed {
        "image/jpeg" | "image/png" | "image/gif" | "image/webp" => (None, sniffed),
        other => {
            let image = image::load_from_memory(bytes).map_err(|_| NOT_CONVERTIBLE)?;
            let png = encode_png(&image).ok_or(NOT_CONVERTIBLE)?;
            hints.push(format!("[Image converted from {other} to image/png.]"));
            (Some(png), "image/png")
        }
    };
    let bytes = png_copy.as_deref().unwrap_or(bytes);
    let format = match mime {
        "image/jpeg" => ImageFormat::Jpeg,
        "image/gif" => ImageFormat::Gif,
        "image/webp" => ImageFormat::WebP,
        _ => ImageFormat::Png,
    };
    // The header alone tells whether the image fits as it is.
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|_| NOT_CONVERTIBLE)?;
    if width <= MAX_WIDTH && height <= MAX_HEIGHT && base64_len(bytes.len()) <= MAX_INLINE_BASE64 {
        return Ok(Prepared {
            data: encode(bytes),
            mime_type: mime,
            hints,
        });
    }
    let image = image::load_from_memory_with_format(bytes, format).map_err(|_| NOT_CONVERTIBLE)?;
    let (w, h) = fit(width, height);
    let (encoded, out_mime, (dw, dh)) = shrink_until_it_fits(&image, w, h).ok_or(TOO_LARGE)?;
    hints.push(format!(
        "[Image: original {width}x{height}, displayed at {dw}x{dh}. Multiply coordinates by {} to map to original image.]",
        to_fixed_2(f64::from(width) / f64::from(dw))
    ));
    Ok(Prepared {
        data: encode(&encoded),
        mime_type: out_mime,
        hints,
    })
}

/// Dimensions within 2000×2000 keeping the aspect ratio (`Math.round` as Pi).
fn fit(width: u32, height: u32) -> (u32, u32) {
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    if w > f64::from(MAX_WIDTH) {
        h = js_round(h * f64::from(MAX_WIDTH) / w);
        w = f64::from(MAX_WIDTH);
    }
    if h > f64::from(MAX_HEIGHT) {
        w = js_round(w * f64::from(MAX_HEIGHT) / h);
        h = f64::from(MAX_HEIGHT);
    }
    (w.max(1.0) as u32, h.max(1.0) as u32)
}

/// JavaScript's `Math.round` (halves round up).
fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// JavaScript's `toFixed(2)` for the positive ratios used here.
fn to_fixed_2(x: f64) -> String {
    format!("{:.2}", js_round(x * 100.0) / 100.0)
}

/// Encode at the target size, then lower JPEG qualities, then smaller sizes,
/// until the base64 payload fits; the smaller of PNG and JPEG wins each try.
fn shrink_until_it_fits(
    image: &DynamicImage,
    width: u32,
    height: u32,
) -> Option<(Vec<u8>, &'static str, (u32, u32))> {
    let fits = |bytes: &Vec<u8>| base64_len(bytes.len()) <= MAX_INLINE_BASE64;
    let resized = image.resize_exact(width, height, FilterType::Lanczos3);
    for quality in std::iter::once(FIRST_QUALITY).chain(QUALITY_STEPS) {
        let (bytes, mime) = smaller_encoding(&resized, quality)?;
        if fits(&bytes) {
            return Some((bytes, mime, (width, height)));
        }
    }
    let mut scale = SHRINK;
    loop {
        let (w, h) = (
            js_round(f64::from(width) * scale) as u32,
            js_round(f64::from(height) * scale) as u32,
        );
        if w < MIN_SIDE || h < MIN_SIDE {
            return None;
        }
        let resized = image.resize_exact(w, h, FilterType::Lanczos3);
        for quality in QUALITY_STEPS {
            let (bytes, mime) = smaller_encoding(&resized, quality)?;
            if fits(&bytes) {
                return Some((bytes, mime, (w, h)));
            }
        }
        scale *= SHRINK;
    }
}

fn encode_png(image: &DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    image.write_with_encoder(PngEncoder::new(&mut out)).ok()?;
    Some(out)
}

/// PNG or JPEG at `quality`, whichever is smaller (PNG on a tie).
fn smaller_encoding(image: &DynamicImage, quality: u8) -> Option<(Vec<u8>, &'static str)> {
    let png = encode_png(image)?;
    let mut jpeg = Vec::new();
    // JPEG has no alpha channel.
    DynamicImage::ImageRgb8(image.to_rgb8())
        .write_with_encoder(JpegEncoder::new_with_quality(&mut jpeg, quality))
        .ok()?;
    Some(if png.len() <= jpeg.len() {
        (png, "image/png")
    } else {
        (jpeg, "image/jpeg")
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

    #[test]
    fn fits_like_pi() {
        assert_eq!(fit(3000, 2000), (2000, 1333));
        assert_eq!(fit(1640, 2360), (1390, 2000));
        assert_eq!(fit(4000, 4000), (2000, 2000));
        assert_eq!(to_fixed_2(3000.0 / 2000.0), "1.50");
        assert_eq!(to_fixed_2(1640.0 / 1390.0), "1.18");
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        });
        encode_png(&DynamicImage::ImageRgb8(img)).unwrap()
    }

    #[test]
    fn small_images_pass_through_unchanged() {
        let bytes = png(10, 10);
        let p = prepare(&bytes, "image/png").ok().unwrap();
        assert_eq!(p.data, encode(&bytes));
        assert!(p.hints.is_empty());
    }

    #[test]
    fn large_images_are_scaled_with_a_coordinate_hint() {
        let p = prepare(&png(3000, 2000), "image/png").ok().unwrap();
        assert_eq!(
            p.hints,
            [
                "[Image: original 3000x2000, displayed at 2000x1333. Multiply coordinates by 1.50 to map to original image.]"
            ]
        );
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&p.data)
            .unwrap();
        let img = image::load_from_memory(&decoded).unwrap();
        assert_eq!((img.width(), img.height()), (2000, 1333));
    }

    #[test]
    fn bmp_is_converted_to_png() {
        let mut bmp = Vec::new();
        DynamicImage::ImageRgb8(image::RgbImage::new(4, 3))
            .write_to(&mut Cursor::new(&mut bmp), ImageFormat::Bmp)
            .unwrap();
        assert_eq!(sniff(&bmp), Some("image/bmp"));
        let p = prepare(&bmp, "image/bmp").ok().unwrap();
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(p.hints, ["[Image converted from image/bmp to image/png.]"]);
    }

    #[test]
    fn undecodable_images_are_omitted() {
        let mut junk = b"BM".to_vec();
        junk.extend_from_slice(&[0; 12]);
        junk.extend_from_slice(&40u32.to_le_bytes());
        junk.extend_from_slice(&[0xFF; 20]);
        assert_eq!(prepare(&junk, "image/bmp").err(), Some(NOT_CONVERTIBLE));
    }
}
