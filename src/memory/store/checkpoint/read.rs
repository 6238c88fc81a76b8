//! Loading the checkpoint into the index at open (the writer's and the whole-store readers'
//! path; read-only commands read it in place through `view`).

use super::{tail_crc, Head, In, BLOCK, CHECKPOINT_NAME, HEADER_BYTES};
use crate::error::Result;
use crate::limits::{
    KEY_MAX_TAGS, STORE_CHECKPOINT_EVERY_BYTES, STORE_MAX_ENTRIES, STORE_MAX_LINKS, STORE_MIN_ENTRIES, TAG_MAX_BYTES,
};
use crate::memory::store::{EntryId, Store};
use std::fs::File;
use std::path::Path;

/// The capacity the checkpoint in `dir` was written at (the one whose tables match its key
/// table's length), read from its header alone; `None` when there is no checkpoint, its
/// header is damaged, or no capacity sizes its key table so. A read-only open sizes its
/// tables by it when it is smaller than the configured capacity
/// ([`Store::open_read_only_with_capacity`]).
pub(in crate::memory::store) fn written_capacity(dir: &Path) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    let file = File::open(dir.join(CHECKPOINT_NAME)).ok()?;
    let mut hdr = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut hdr, 0).ok()?;
    let key_slots = usize::try_from(Head::parse(&hdr).ok()?.layout.key_slots).ok()?;
    // The key table of room r has r + r / 2 + 1 slots; the room of capacity c is
    // c + c / 64 + 16 (`room_for`): both grow with their argument, so each is found near its
    // inverse and checked exactly.
    let room = (key_slots.saturating_sub(1) * 2 / 3).saturating_sub(2)..key_slots.saturating_sub(1) * 2 / 3 + 3;
    let room = room.into_iter().find(|&r| r.max(1) + r / 2 + 1 == key_slots)?;
    let near = room.saturating_sub(16) * 64 / 65;
    (near.saturating_sub(3)..near + 4)
        .find(|&c| super::super::room_for(c) == room)
        .filter(|c| (STORE_MIN_ENTRIES..=STORE_MAX_ENTRIES).contains(c))
}

/// Reads the checkpoint into the (empty) index of `store` if it matches the log; returns the
/// log length it covers. `None` when there is none (with a warning when the log is large
/// enough that one was expected); an error when it cannot be used (the caller warns, resets
/// and replays the whole log).
pub(in crate::memory::store) fn read(store: &mut Store, file_len: u64) -> Result<Option<u64>> {
    let path = store.dir.join(CHECKPOINT_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if file_len >= 2 * STORE_CHECKPOINT_EVERY_BYTES && store.format == crate::memory::log::FORMAT_VERSION {
                err!(Io, "{} is missing; reading the whole store log ({} bytes)", path.display(), file_len)
                    .print_warning();
            }
            return Ok(None);
        }
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    if store.format < crate::memory::log::FORMAT_VERSION {
        bail!(Io, "{} belongs to a version 1 log", path.display());
    }
    let mut buf = core::mem::take(&mut store.rbuf);
    let res = read_into(store, file, &mut buf, file_len).map_err(|e| e.context(format_args!("{}", path.display())));
    store.rbuf = buf;
    res.map(Some)
}

fn read_into(store: &mut Store, file: File, buf: &mut Vec<u8>, file_len: u64) -> Result<u64> {
    buf.clear();
    let ckpt_len = file.metadata().map_err(|e| err!(Io, "reading failed: {}", e))?.len();
    let mut r = In::new(file, ckpt_len, buf);
    let mut hdr = [0u8; HEADER_BYTES];
    hdr.copy_from_slice(r.take(HEADER_BYTES)?);
    let h = Head::parse(&hdr)?;
    let tags = h.layout.tags;
    let id = h.store;
    let covered = h.covered;
    let header_bytes = h.header_bytes;
    let next_id = h.layout.next_id as usize;
    let links = h.layout.links as usize;
    let key_slots = h.layout.key_slots as usize;
    let tag_text = h.layout.tag_text as usize;
    if ckpt_len != h.layout.file_len() {
        bail!(Io, "the checkpoint has {} bytes; its header describes {}", ckpt_len, h.layout.file_len());
    }
    if id != store.store_id {
        bail!(Io, "the checkpoint is of another log (store {:016x}, the log is {:016x})", id, store.store_id);
    }
    if covered > file_len || covered < header_bytes || header_bytes != store.header_bytes {
        bail!(Io, "the checkpoint covers {} bytes of log; the log has {}", covered, file_len);
    }
    if next_id > store.slots.room() {
        bail!(Io, "the checkpoint names {} ids, more than this capacity has room for", next_id);
    }
    if tags == 0 || tags > store.tags.max() + 1 || tag_text > tags * TAG_MAX_BYTES || links > STORE_MAX_LINKS {
        bail!(Io, "the checkpoint's tag or link counts are out of range");
    }
    // The body's CRC is counted from here on.
    r.crc = 0;
    load_tags(store, &mut r, tags, tag_text)?;
    // The entry table, column by column, straight into place.
    let Some(cols) = store.slots.columns_mut(next_id) else { bail!(Io, "entry table out of range") };
    fill(&mut r, cols.loc, 8, |b| b.try_into().map_or(0, u64::from_le_bytes))?;
    for col in [cols.created, cols.accessed, cols.hits, cols.ver] {
        fill(&mut r, col, 4, |b| b.try_into().map_or(0, u32::from_le_bytes))?;
    }
    fill(&mut r, cols.tags, 16, |b| {
        let mut set = [0u16; KEY_MAX_TAGS];
        for (t, pair) in set.iter_mut().zip(b.chunks_exact(2)) {
            *t = pair.try_into().map_or(0, u16::from_le_bytes);
        }
        set
    })?;
    store.slots.finish_bulk(next_id);
    if store.slots.live() > store.cap {
        bail!(Io, "the checkpoint holds {} entries, more than memory.store_capacity", store.slots.live());
    }
    // Every live entry: within the covered log, tags that exist, in order and padded with zeros;
    // each tag counted.
    for i in 0..next_id as EntryId {
        let Some(slot) = store.slots.get(i) else { continue };
        if slot.offset < header_bytes || slot.len == 0 || slot.offset + u64::from(slot.len) > covered {
            bail!(Io, "entry {} points outside the covered log", i);
        }
        let set = store.slots.tagset(i);
        let n = set.iter().position(|&t| t == 0).unwrap_or(KEY_MAX_TAGS);
        if n == 0
            || set.get(n..).is_some_and(|rest| rest.iter().any(|&t| t != 0))
            || set.iter().take(n).any(|&t| usize::from(t) >= tags || !store.tags.is_interned(t))
        {
            bail!(Io, "entry {} names a tag that is not there", i);
        }
        for &t in crate::bytes::take(&set, n) {
            store.tags.add(t, i, slot.archived)?;
        }
    }
    for _ in 0..links {
        let (a, b) = (r.u32()?, r.u32()?);
        if !store.contains(a) || !store.contains(b) || a == b || store.links.contains(a, b) {
            bail!(Io, "a link between {} and {} that cannot be", a, b);
        }
        store.links.add(a, b)?;
    }
    // The key table: used as it is when this capacity sizes it the same (every slot names a
    // live entry, the count matches), else rebuilt.
    let same = key_slots == store.keys.raw().len();
    let mut filled = 0usize;
    let mut at = 0usize;
    while at < key_slots {
        let k = (key_slots - at).min(BLOCK / 4);
        let b = r.take(4 * k)?;
        if same {
            let dst = store.keys.raw_mut().get_mut(at..at + k).unwrap_or(&mut []);
            for (d, src) in dst.iter_mut().zip(b.chunks_exact(4)) {
                let v = src.try_into().map_or(0, u32::from_le_bytes);
                if v != 0 {
                    if !store.slots.is_live(v - 1) {
                        bail!(Io, "the key table names entry {}, which is not there", v - 1);
                    }
                    filled += 1;
                }
                *d = v;
            }
        }
        at += k;
    }
    // The sections read in place follow: the writer's open uses none of them, but reads them
    // through the body's CRC, so that damage anywhere in the file is found here too.
    let mut left = h.layout.file_len().saturating_sub(h.layout.directory_at());
    while left > 0 {
        let k = left.min(BLOCK as u64) as usize;
        r.take(k)?;
        left -= k as u64;
    }
    if r.crc != h.body_crc {
        bail!(Io, "checksum mismatch");
    }
    if !r.at_end()? {
        bail!(Io, "unexpected bytes after the checkpoint's end");
    }
    if !same {
        store.rebuild_keys()?;
    } else if filled != store.slots.live() {
        bail!(Io, "the key table holds {} entries, the checkpoint {}", filled, store.slots.live());
    }
    // Last: the log must still hold what the checkpoint was taken of.
    if tail_crc(store, covered)? != h.tail {
        bail!(Io, "the log changed before byte {} since the checkpoint was taken (stale)", covered);
    }
    if store.slots.live() != h.live as usize || store.slots.archived_count() != h.archived as usize {
        bail!(
            Io,
            "the checkpoint's header counts {} entries ({} archived); its table {}",
            h.live,
            h.archived,
            store.slots.live()
        );
    }
    store.header_bytes = header_bytes;
    store.live_bytes = h.live_bytes;
    store.corrupt = h.corrupt;
    store.log.len = covered;
    Ok(covered)
}

/// Reads the tag names (all lengths, then all text) and interns each under its id. The
/// lengths are copied out first (at most 64 KiB, once per open).
fn load_tags(store: &mut Store, r: &mut In<'_>, tags: usize, tag_text: usize) -> Result<()> {
    let mut all_lens: Vec<u8> = Vec::with_capacity(tags);
    all_lens.extend_from_slice(r.take(tags - 1)?);
    if all_lens.iter().map(|&l| usize::from(l)).sum::<usize>() != tag_text {
        bail!(Io, "the tag lengths do not add up to the tag text");
    }
    for (i, &n) in all_lens.iter().enumerate() {
        let n = usize::from(n);
        if n > TAG_MAX_BYTES {
            bail!(Io, "a tag of {} bytes", n);
        }
        let text = r.take(n)?;
        if n > 0 {
            let s = core::str::from_utf8(text).map_err(|_| err!(Io, "tag id {} is not UTF-8", i + 1))?;
            store.tags.restore((i + 1) as u16, s)?;
        }
    }
    store.tags.finish_restore();
    Ok(())
}

/// Fills `dst` from the next `dst.len() * width` bytes, converting each `width`-byte group.
fn fill<T>(r: &mut In<'_>, dst: &mut [T], width: usize, convert: impl Fn(&[u8]) -> T) -> Result<()> {
    let per_block = (BLOCK / width).max(1);
    for chunk in dst.chunks_mut(per_block) {
        let b = r.take(chunk.len() * width)?;
        for (d, src) in chunk.iter_mut().zip(b.chunks_exact(width)) {
            *d = convert(src);
        }
    }
    Ok(())
}
