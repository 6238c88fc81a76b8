//! `store.cold` written back in format 1, as an older program left it, for the tests that
//! read, append to and compact such a file.
//!
//! Include with `#[path = "support/cold_format.rs"] mod cold_format;`.

use lkjagent::fixed::FixedBuf;
use lkjagent::memory::log;
use std::path::Path;

/// Writes `store.cold` in `dir` back in format 1, the same lines (each entry the log's `put`
/// record); its index files are left as they are (of another file now: not used). Nothing
/// when there is no `store.cold`.
pub fn to_format_1(dir: &Path) {
    let path = dir.join("store.cold");
    let Ok(bytes) = std::fs::read(&path) else { return };
    let mut out = Vec::new();
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let mut buf = FixedBuf::with_capacity("test", 1 << 20);
        match log::decode_cold(line.strip_suffix(b"\n").unwrap()).unwrap() {
            log::Record::ColdHeader { .. } => log::encode_cold_header_of(&mut buf, 1).unwrap(),
            log::Record::Put { head, tags, value_escaped } => {
                let mut value = String::new();
                log::decode_str(value_escaped, &mut value).unwrap();
                log::encode_cold_put(&mut buf, 1, &head, tags.iter().map(|t| t.as_str()), &value).unwrap();
            }
            _ => buf.extend_from_slice(line).unwrap(),
        }
        out.extend_from_slice(buf.as_slice());
    }
    std::fs::write(&path, out).unwrap();
}
