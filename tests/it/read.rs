//! The `read` built-in beyond the shared cases: images (§1.6 step 4) and the
//! binary and directory texts of §7.23.

use crate::support::*;
use base64::Engine as _;
use serde_json::json;
use toolhost::ContentBlock;

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x + y) % 239) as u8])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn image_block(r: &toolhost::ToolResultMessage) -> (Vec<u8>, String) {
    match &r.content[1] {
        ContentBlock::Image { data, mime_type } => (
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap(),
            mime_type.clone(),
        ),
        other => panic!("expected an image, got {other:?}"),
    }
}

#[test]
fn a_small_image_is_sent_as_it_is_found_by_its_magic_bytes() {
    let ws = Workspace::new();
    let bytes = png(40, 30);
    ws.write("picture.dat", &bytes);
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "picture.dat"}));
    assert!(!r.is_error);
    assert_eq!(r.content.len(), 2);
    assert_eq!(
        r.content[0],
        ContentBlock::text("Read image file [image/png]")
    );
    assert_eq!(image_block(&r), (bytes, "image/png".to_string()));
    assert_eq!(r.details, None);
}

#[test]
fn a_large_image_is_scaled_down_with_pis_coordinate_hint() {
    let ws = Workspace::new();
    ws.write("big.png", png(3000, 2000));
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "big.png"}));
    assert!(!r.is_error, "{}", r.text());
    let (bytes, mime) = image_block(&r);
    assert_eq!(
        r.text(),
        format!(
            "Read image file [{mime}]\n[Image: original 3000x2000, displayed at 2000x1333. Multiply coordinates by 1.50 to map to original image.]"
        )
    );
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 1333));
    assert!(
        base64::engine::general_purpose::STANDARD
            .encode(&bytes)
            .len()
            <= 4_718_592
    );
}

#[test]
fn a_bmp_is_converted_to_png() {
    let ws = Workspace::new();
    let mut bmp = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::new(8, 8))
        .write_to(&mut std::io::Cursor::new(&mut bmp), image::ImageFormat::Bmp)
        .unwrap();
    ws.write("icon.bmp", &bmp);
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "icon.bmp"}));
    assert_eq!(
        r.text(),
        "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    );
    let (bytes, mime) = image_block(&r);
    assert_eq!(mime, "image/png");
    assert_eq!(image::load_from_memory(&bytes).unwrap().width(), 8);
}

#[test]
fn an_undecodable_image_is_reported_without_the_image() {
    let ws = Workspace::new();
    let mut junk = b"BM".to_vec();
    junk.extend_from_slice(&[0; 12]);
    junk.extend_from_slice(&40u32.to_le_bytes());
    junk.extend_from_slice(&[0xFF; 64]);
    ws.write("broken.bmp", &junk);
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "broken.bmp"}));
    assert!(!r.is_error);
    assert_eq!(
        r.text(),
        "Read image file [image/bmp]\n[Image omitted: could not be converted to a supported inline image format.]"
    );
    assert_eq!(r.content.len(), 1);
}

#[test]
fn binary_files_and_directories_say_what_they_are() {
    let ws = Workspace::new();
    let mut blob = vec![0u8; 3000];
    blob[10] = b'x';
    ws.write("data.bin", &blob);
    std::fs::create_dir(ws.path.join("src")).unwrap();
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "data.bin"}));
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "Binary file: data.bin (2.9KB). Use bash (e.g. xxd, file) to inspect it."
    );
    let r = call(&host, "read", json!({"path": "src"}));
    assert!(r.is_error);
    assert_eq!(r.text(), "Path is a directory: src. Use ls to list it.");
}

#[test]
fn a_file_larger_than_one_chunk_is_counted_exactly() {
    // 5 MiB of lines: more than one 4 MiB host read, so both passes stream.
    let ws = Workspace::new();
    let line = "x".repeat(99);
    let content: String = (0..52_429).map(|_| format!("{line}\n")).collect();
    ws.write("big.log", &content);
    let host = host(&ws);
    let r = call(&host, "read", json!({"path": "big.log", "offset": 52_000}));
    assert!(!r.is_error);
    let text = r.text();
    assert!(
        text.ends_with("\n"),
        "the last selected line is the empty piece after the final newline"
    );
    assert_eq!(text.lines().count(), 430);
    let r = call(&host, "read", json!({"path": "big.log", "offset": 52_431}));
    assert_eq!(
        r.text(),
        "Offset 52431 is beyond end of file (52430 lines total)"
    );
}
