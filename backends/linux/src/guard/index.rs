//! git's index file, read to check the names of its entries (red team Y, 5 December).
//!
//! git trusts the index it reads: an entry named `/home/user/.bashrc` or `../../x`, written
//! into the index of the host's repository by a workload, was written to that path by the
//! host's later `git restore .` or `git checkout -- .` (4 of 4), with content the workload
//! chose. Names that come from trees are checked by git as it reads them (`git reset --hard`
//! refused them); names read from the index are not. So an index a workload brings into a git
//! directory it did not make ([`check`]) must hold only names git itself would have let into
//! it: relative, without empty, `.` or `..` components, and without a component git refuses
//! (`.git` in any case, with the trailing dots or spaces and the short name Windows ignores,
//! which git refuses on every system by default).
//!
//! The format (git's `Documentation/gitformat-index.txt`): `DIRC`, a version (2, 3 or 4), the
//! number of entries; each entry 40 bytes of stat data, the object name (20 bytes for SHA-1,
//! 32 for SHA-256), 16 bits of flags (12 of them the name's length), 16 more with version 3's
//! extended flag, then the name: NUL-terminated and padded to a multiple of 8 bytes (versions
//! 2 and 3), or as a number of bytes to drop from the previous name and a NUL-terminated
//! suffix (version 4). Extensions follow, then a checksum. An index that links a shared index
//! (the `link` extension of `core.splitIndex`) names entries this reading does not see: refused.

/// Why an index is refused.
pub type Refusal = &'static str;

/// The most entries an index may hold here (git's own limit is the file size).
const MAX_ENTRIES: usize = 50_000_000;

/// One entry of an index as read: where its stat data starts (the object name follows it),
/// its flags, where its extended flags are (version 3 and later), and its name.
struct Entry {
    at: usize,
    flags: u16,
    ext_at: Option<usize>,
    name: Vec<u8>,
}

/// An index's entries as read, and where they end.
struct Parsed {
    entries: Vec<Entry>,
    end: usize,
    /// Where each entry starts, and (version 4) whether its name keeps a part of the previous
    /// one: to hold an offset table (`IEOT`) to this reading.
    starts: Vec<u32>,
    keeps: Vec<bool>,
}

/// Reads the header and entries of the index `data` (object names `hash` bytes long).
fn parse(data: &[u8], hash: usize) -> Result<Parsed, Refusal> {
    let mut r = Reader { data, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err("not an index");
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err("an index version git does not write");
    }
    let count = usize::try_from(r.u32()?).map_err(|_| "too many entries")?;
    if count > MAX_ENTRIES {
        return Err("too many entries");
    }
    let mut previous: Vec<u8> = Vec::new();
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut starts: Vec<u32> = Vec::with_capacity(count.min(1 << 20));
    let mut keeps: Vec<bool> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        starts.push(u32::try_from(start).map_err(|_| "an index too large")?);
        r.take(40 + hash)?;
        let flags = r.u16()?;
        let mut ext_at = None;
        if version >= 3 && flags & EXTENDED != 0 {
            ext_at = Some(r.at);
            r.u16()?;
        } else if flags & EXTENDED != 0 {
            return Err("an extended entry in a version 2 index");
        }
        let name = if version == 4 {
            let drop = r.varint()?;
            let keep = previous.len().checked_sub(drop).ok_or("a name that drops more than there is")?;
            keeps.push(keep != 0);
            let suffix = r.until_nul()?;
            let mut name = previous[..keep].to_vec();
            name.extend_from_slice(suffix);
            name
        } else {
            let name = r.until_nul()?.to_vec();
            // The entry, name and its NUL included, padded with NULs to a multiple of 8.
            let len = r.at - start;
            let padded = len.div_ceil(8) * 8;
            let pad = r.take(padded - len)?;
            if pad.iter().any(|b| *b != 0) {
                return Err("an entry's padding is not NUL");
            }
            name
        };
        let stored = usize::from(flags & 0x0fff);
        if stored != 0x0fff && stored != name.len() {
            return Err("a name's length differs from its flags");
        }
        previous.clone_from(&name);
        entries.push(Entry { at: start, flags, ext_at, name });
    }
    Ok(Parsed { entries, end: r.at, starts, keeps })
}

/// An entry's mode (in its stat data).
fn mode_of(data: &[u8], e: &Entry) -> u32 {
    u32::from_be_bytes([data[e.at + 24], data[e.at + 25], data[e.at + 26], data[e.at + 27]])
}

/// Checks the index `data` of a repository whose object names are `hash` bytes long (20 or
/// 32): every entry's name is one git would let into an index, and no shared index is linked.
pub fn check(data: &[u8], hash: usize) -> Result<(), Refusal> {
    let parsed = parse(data, hash)?;
    for e in &parsed.entries {
        // A sparse index's directory entry (`sdir`): its name ends with a slash.
        match e.name.strip_suffix(b"/") {
            Some(dir) if mode_of(data, e) == SPARSE_DIRECTORY => verify_path(dir)?,
            _ => verify_path(&e.name)?,
        }
    }
    let end_of_entries = parsed.end;
    let mut r = Reader { data, at: end_of_entries };
    // Extensions: a four-byte signature and a 32-bit size each, until the checksum.
    let mut last = None;
    while data.len().saturating_sub(r.at) > hash {
        let signature = r.take(4)?;
        let size = usize::try_from(r.u32()?).map_err(|_| "an extension too large")?;
        let body = r.take(size)?;
        match signature {
            b"link" => return Err("a split index (its shared index is not read here)"),
            // git reads with threads from the offsets these give (`index.threads`): they must
            // be where this reading found the entries and their end, or git would read other
            // entries than the ones checked here (a red team, 5 December: an offset into an
            // extension git ignores held `../x`).
            b"EOIE" => {
                let offset = body.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                if offset.and_then(|o| usize::try_from(o).ok()) != Some(end_of_entries) {
                    return Err("an end-of-entries offset elsewhere than the entries' end");
                }
            }
            b"IEOT" => check_offset_table(body, &parsed.starts, &parsed.keeps)?,
            _ => {}
        }
        last = Some(signature);
    }
    if data.len() - r.at != hash {
        return Err("no checksum where one belongs");
    }
    // git finds `EOIE` at a fixed place from the end: only where this reading found it there.
    let eoie_at = data.len().checked_sub(hash + 8 + 4 + hash);
    if eoie_at.is_some_and(|at| at >= end_of_entries && &data[at..at + 4] == b"EOIE")
        && last != Some(b"EOIE".as_slice())
    {
        return Err("an end-of-entries record inside another extension");
    }
    Ok(())
}

/// An entry's flag: version 3's extended flags follow.
const EXTENDED: u16 = 0x4000;
/// An entry's flag: "assume unchanged" (`git update-index --assume-unchanged`).
const ASSUME_VALID: u16 = 0x8000;
/// An entry's flag bits: its merge stage.
const STAGE: u16 = 0x3000;
/// An extended flag: "skip worktree" (sparse checkout, `git update-index --skip-worktree`).
const SKIP_WORKTREE: u16 = 0x4000;
/// The file type bits of an entry's mode, and a submodule's (a gitlink).
const TYPE_BITS: u32 = 0o170_000;
const GITLINK: u32 = 0o160_000;

/// The extensions [`sanitize`] leaves out: what git takes instead of looking at the work
/// tree or the entries (the cache tree, the untracked cache, fsmonitor's record) and the
/// offsets of threaded reading, which point into what is rewritten. git makes each again.
const DROPPED: [&[u8; 4]; 5] = [b"TREE", b"UNTR", b"FSMN", b"EOIE", b"IEOT"];

/// What to do with an entry the run changed, given its name, mode, stat data and object name.
pub type Honest<'a> = dyn FnMut(&[u8], u32, &[u8], &[u8]) -> Verdict + 'a;

/// What [`sanitize`] does with an entry the run changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The file has the entry's stat data and content: kept.
    Keep,
    /// Anything else: its times and size are zeroed.
    Smudge,
}

/// The index a workload brings into a git directory it did not make, as it is put in place:
/// [`check`]ed, and with nothing in it that tells the host's git not to look at a file. git
/// trusts an entry whose stat data (times, inode, size) match the file without reading the
/// file, an entry marked "assume unchanged" or "skip worktree" without looking at it at all, a
/// cache tree for the trees of its next commit, an untracked cache for the files it does not
/// track, and fsmonitor's record for what changed: a workload that changed a tracked file and
/// wrote an index saying otherwise hid the change from the user's `git status` and `git diff`
/// (found on 5 December), and a cache tree let a commit carry what no diff showed. So:
/// - an entry (at stage 0, a file or symlink) whose stat data or object name differ from those
///   of the same name in `old` (the index it replaces; all of them where there is none) is kept
///   as `honest` says ([`Verdict`]: given its name, mode, stat data and object name, whether the
///   file in the work tree has those stat data now and that content), else it loses its times
///   and size, which makes git compare the file's content with the object (git's own "racily
///   clean" smudge, times too); one the host wrote, and one git smudged itself (a size of 0),
///   is kept as it is, unless it was racily clean in `old`: `old` comes with its file's mtime
///   (seconds, as git keeps them), and an entry whose mtime or ctime is not older than that
///   is one git would have read the file of before taking it for unchanged, which the new
///   index, newer, no longer makes it do; such an entry is kept only as `honest` says, as git's
///   own index writing smudges it where the file changed (red team AR, 5 December: a file the
///   host's `git clone` wrote rewritten in place in the same second, its mtime set back, and
///   the index written again a second later, was shown to no `git status`);
/// - "assume unchanged" and "skip worktree" stay only where `old` had them on that name, and a
///   sparse index's directory entry only where `old` had it as it is (else refused);
/// - the [`DROPPED`] extensions are left out, every other is kept;
/// - the checksum is computed again (all zero where it was: `index.skipHash`).
///
/// (`out` starts as `new`'s entries and is rewritten in place: no entry moves.)
pub fn sanitize(
    new: &[u8],
    old: Option<(&[u8], u32)>,
    hash: usize,
    honest: &mut Honest<'_>,
) -> Result<Vec<u8>, Refusal> {
    check(new, hash)?;
    let parsed = parse(new, hash)?;
    let old_mtime = old.map(|(_, m)| m);
    let old_parsed = old.and_then(|(o, _)| check(o, hash).ok().and(parse(o, hash).ok()).map(|p| (o, p)));
    let mut before: std::collections::HashMap<&[u8], (&[u8], u16, u16)> = std::collections::HashMap::new();
    if let Some((o, p)) = &old_parsed {
        for e in &p.entries {
            let ext = e.ext_at.map_or(0, |x| u16::from_be_bytes([o[x], o[x + 1]]));
            before.insert(&e.name, (&o[e.at..e.at + 40 + hash], e.flags, ext));
        }
    }
    let mut out = new[..parsed.end].to_vec();
    for e in &parsed.entries {
        let mode = mode_of(new, e);
        let prev = before.get(e.name.as_slice());
        if mode == SPARSE_DIRECTORY {
            // It stands for every file beneath it, each marked "skip worktree" when git
            // expands it (red team AE, 5 December: `src/` hid a change to `src/app.py` from
            // every `git status` and `git diff`): only one the index before had, as it was.
            let ext = e.ext_at.map_or(0, |x| u16::from_be_bytes([new[x], new[x + 1]]));
            if prev.is_none_or(|p| *p != (&new[e.at..e.at + 40 + hash], e.flags, ext)) {
                return Err("a sparse directory entry the index before did not have");
            }
            continue;
        }
        // The marks, on every entry (a submodule's too: git skips looking into it).
        let flag_at = e.at + 40 + hash;
        if e.flags & ASSUME_VALID != 0 && prev.is_none_or(|p| p.1 & ASSUME_VALID == 0) {
            let cleared = (e.flags & !ASSUME_VALID).to_be_bytes();
            out[flag_at..flag_at + 2].copy_from_slice(&cleared);
        }
        if let Some(x) = e.ext_at {
            let ext = u16::from_be_bytes([new[x], new[x + 1]]);
            if ext & SKIP_WORKTREE != 0 && prev.is_none_or(|p| p.2 & SKIP_WORKTREE == 0) {
                out[x..x + 2].copy_from_slice(&(ext & !SKIP_WORKTREE).to_be_bytes());
            }
        }
        // Stat data: a file's or a symlink's at stage 0 (a conflict's stages are always shown; a
        // submodule's entry is compared with its checkout's HEAD, not by stat data).
        if e.flags & STAGE != 0 || mode & TYPE_BITS == GITLINK {
            continue;
        }
        let record = &new[e.at..e.at + 40 + hash];
        // A size of 0 is git's own smudge of a racily clean entry: git reads the file before it
        // takes such an entry for unchanged (or finds it changed), whatever the times say.
        let smudged = record[36..40] == [0; 4];
        let second = |at: usize| u32::from_be_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]]);
        let racily_clean = old_mtime.is_some_and(|m| second(0) >= m || second(8) >= m);
        if !smudged && (racily_clean || prev.is_none_or(|p| p.0 != record)) {
            match honest(&e.name, mode, &record[..40], &record[40..]) {
                Verdict::Keep => {}
                Verdict::Smudge => smudge_entry(&mut out, e.at),
            }
        }
    }
    seal(new, parsed.end, out, hash)
}

/// Zeroes an entry's times and size (git's own smudge of a racily clean entry).
fn smudge_entry(out: &mut [u8], at: usize) {
    // ctime and mtime (seconds and nanoseconds), and the size.
    out[at..at + 16].fill(0);
    out[at + 36..at + 40].fill(0);
}

/// `out` (the entries of `new`, rewritten; they end at `end` in both) with `new`'s extensions
/// but the [`DROPPED`] ones, and the checksum computed again (all zero where it was:
/// `index.skipHash`).
fn seal(new: &[u8], end: usize, mut out: Vec<u8>, hash: usize) -> Result<Vec<u8>, Refusal> {
    let mut r = Reader { data: new, at: end };
    while new.len().saturating_sub(r.at) > hash {
        let at = r.at;
        let signature = r.take(4)?;
        let size = usize::try_from(r.u32()?).map_err(|_| "an extension too large")?;
        r.take(size)?;
        if !DROPPED.iter().any(|d| d.as_slice() == signature) {
            out.extend_from_slice(&new[at..r.at]);
        }
    }
    let trailer = &new[new.len() - hash..];
    if trailer.iter().all(|b| *b == 0) {
        out.extend_from_slice(trailer);
    } else if hash == 20 {
        let digest = <sha1::Sha1 as sha1::Digest>::digest(&out);
        out.extend_from_slice(&digest);
    } else {
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&out);
        out.extend_from_slice(&digest);
    }
    Ok(out)
}

/// Whether an entry changed, given its name, mode and record (stat data and object name).
pub type Changed<'a> = dyn FnMut(&[u8], u32, &[u8]) -> bool + 'a;

/// The index `data` with every entry `changed` names smudged (at stage 0, a file or symlink not
/// smudged already; `changed` is given its name, mode and record: stat data and object name),
/// the [`DROPPED`] extensions left out and the checksum computed again; `None` when no entry
/// was smudged (nothing to write). For the entries [`sanitize`] kept although their files had
/// changed within the second it read them, checked again once that second is over.
pub fn smudge(data: &[u8], hash: usize, changed: &mut Changed<'_>) -> Result<Option<Vec<u8>>, Refusal> {
    check(data, hash)?;
    let parsed = parse(data, hash)?;
    let mut out = data[..parsed.end].to_vec();
    let mut any = false;
    for e in &parsed.entries {
        let mode = mode_of(data, e);
        if e.flags & STAGE != 0 || mode & TYPE_BITS == GITLINK || mode == SPARSE_DIRECTORY {
            continue;
        }
        let record = &data[e.at..e.at + 40 + hash];
        if record[36..40] != [0; 4] && changed(&e.name, mode, record) {
            smudge_entry(&mut out, e.at);
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    seal(data, parsed.end, out, hash).map(Some)
}

/// The mode of a sparse index's directory entry.
const SPARSE_DIRECTORY: u32 = 0o040_000;

/// An offset table (`IEOT`: a version, then an offset and a count per block of entries): every
/// block starts at an entry this reading found, in order, and the blocks cover every entry
/// once. In a version 4 index git starts each block without a previous name (and writes the
/// block's first name whole, dropping all of the previous one): a first entry that keeps a part
/// of the previous name would be read as another name by git's threads, and is refused.
fn check_offset_table(body: &[u8], starts: &[u32], keeps: &[bool]) -> Result<(), Refusal> {
    let bad = "an offset table that does not match the entries";
    let (version, blocks) = body.split_at_checked(4).ok_or(bad)?;
    if version != 1u32.to_be_bytes() || blocks.len() % 8 != 0 {
        return Err(bad);
    }
    let mut next = 0usize;
    for block in blocks.chunks_exact(8) {
        let offset = u32::from_be_bytes([block[0], block[1], block[2], block[3]]);
        let count = usize::try_from(u32::from_be_bytes([block[4], block[5], block[6], block[7]])).map_err(|_| bad)?;
        if starts.get(next) != Some(&offset) || keeps.get(next).copied().unwrap_or(false) {
            return Err(bad);
        }
        next = next.checked_add(count).ok_or(bad)?;
    }
    if next != starts.len() {
        return Err(bad);
    }
    Ok(())
}

/// git's `verify_path` as it holds on every system by default (`core.protectNTFS` is on
/// everywhere since git 2.24): a relative name of non-empty components, none of them `.`,
/// `..`, or `.git` in any case, with any trailing dots or spaces, or `git~1`.
pub fn verify_path(name: &[u8]) -> Result<(), Refusal> {
    if name.is_empty() || name[0] == b'/' || name.last() == Some(&b'/') {
        return Err("an entry named by an absolute or empty path");
    }
    for part in name.split(|b| *b == b'/') {
        if part.is_empty() || part == b"." || part == b".." {
            return Err("an entry named with an empty, . or .. component");
        }
        // What comes before a `:` (an NTFS stream: `.git::$INDEX_ALLOCATION`) names the same.
        let base = part.split(|b| *b == b':').next().unwrap_or(part);
        let trimmed = trim_dots_and_spaces(base);
        if trimmed.eq_ignore_ascii_case(b".git") || trim_dots_and_spaces(base).eq_ignore_ascii_case(b"git~1") {
            return Err("an entry named .git");
        }
        // A backslash separates components for git's NTFS check too.
        for sub in part.split(|b| *b == b'\\') {
            if sub == b".." || trim_dots_and_spaces(sub).eq_ignore_ascii_case(b".git") {
                return Err("an entry named with .. or .git between backslashes");
            }
        }
    }
    Ok(())
}

fn trim_dots_and_spaces(part: &[u8]) -> &[u8] {
    let end = part.iter().rposition(|b| *b != b'.' && *b != b' ').map_or(0, |i| i + 1);
    // `.git` itself keeps its leading dot.
    if end == 0 { part } else { &part[..end] }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refusal> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.data.len()).ok_or("the index ends too soon")?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, Refusal> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, Refusal> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// git's offset varint (`decode_varint`): seven bits a byte, high bit set for more, each
    /// continuation adding one.
    fn varint(&mut self) -> Result<usize, Refusal> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .and_then(|v| v.checked_add(usize::from(byte & 0x7f)))
                .ok_or("a number too large")?;
        }
        Ok(value)
    }

    fn until_nul(&mut self) -> Result<&'a [u8], Refusal> {
        let rest = &self.data[self.at..];
        let len = rest.iter().position(|b| *b == 0).ok_or("a name without its NUL")?;
        let name = &rest[..len];
        self.at += len + 1;
        Ok(name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A version 2 or 3 index of `names` with SHA-1 object names, as git writes it.
    fn index(version: u32, names: &[&str]) -> Vec<u8> {
        let mut out = b"DIRC".to_vec();
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&u32::try_from(names.len()).unwrap().to_be_bytes());
        for name in names {
            let start = out.len();
            out.extend_from_slice(&[0u8; 40]);
            out.extend_from_slice(&[0xab; 20]);
            out.extend_from_slice(&u16::try_from(name.len().min(0xfff)).unwrap().to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            while !(out.len() - start).is_multiple_of(8) {
                out.push(0);
            }
        }
        out.extend_from_slice(&[0u8; 20]);
        out
    }

    /// `index(2, names)` with each entry's stat data filled with `stat[i]` and its flags or'ed
    /// with `flags[i]`, and the extensions given, checksummed.
    fn index_with(names: &[&str], stat: &[u8], flags: &[u16], extensions: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
        let mut out = index(2, names);
        out.truncate(out.len() - 20);
        let mut at = 12;
        for (i, name) in names.iter().enumerate() {
            out[at..at + 40].fill(stat[i]);
            out[at + 24..at + 28].copy_from_slice(&0o100_644u32.to_be_bytes());
            let f = u16::from_be_bytes([out[at + 60], out[at + 61]]) | flags[i];
            out[at + 60..at + 62].copy_from_slice(&f.to_be_bytes());
            at += (62 + name.len() + 1).div_ceil(8) * 8;
        }
        for (sig, body) in extensions {
            out.extend_from_slice(*sig);
            out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
            out.extend_from_slice(body);
        }
        let digest = <sha1::Sha1 as sha1::Digest>::digest(&out);
        out.extend_from_slice(&digest);
        out
    }

    /// `index`, a SHA-1 index whose second entry's name is one byte long, with that entry's
    /// times and size zeroed and the checksum computed again.
    fn second_smudged(index: &[u8]) -> Vec<u8> {
        let mut want = index[..index.len() - 20].to_vec();
        want[76..92].fill(0);
        want[112..116].fill(0);
        let digest = <sha1::Sha1 as sha1::Digest>::digest(&want);
        want.extend_from_slice(&digest);
        want
    }

    #[test]
    fn a_second_look_smudges_only_the_entries_it_names() {
        let stage = 0x1000;
        let data = index_with(&["a", "b", "c", "d"], &[0x11, 0x22, 0x33, 0x44], &[0, 0, stage, 0], &[(b"TREE", b"x")]);
        // Nothing named: nothing to write.
        assert_eq!(smudge(&data, 20, &mut |_, _, _| false), Ok(None));
        let mut asked = Vec::new();
        let out = smudge(&data, 20, &mut |name, mode, record| {
            asked.push(name.to_vec());
            assert_eq!(mode, 0o100_644);
            assert_eq!(record.len(), 60);
            name == b"b" || name == b"c"
        })
        .unwrap()
        .unwrap();
        // A conflict's stage is not asked about (git always shows it).
        assert_eq!(asked, [b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
        assert_eq!(check(&out, 20), Ok(()));
        // b's times and size zeroed, its dev, ino, mode, uid and gid kept; the cache tree gone.
        let want = index_with(&["a", "b", "c", "d"], &[0x11, 0x22, 0x33, 0x44], &[0, 0, stage, 0], &[]);
        assert_eq!(out, second_smudged(&want));
        // Smudged already (a size of 0): not asked again.
        let mut again = Vec::new();
        let _ = smudge(&out, 20, &mut |name, _, _| {
            again.push(name.to_vec());
            false
        });
        assert_eq!(again, [b"a".to_vec(), b"d".to_vec()]);
        // A broken index: refused, nothing written.
        assert!(smudge(&data[..data.len() - 1], 20, &mut |_, _, _| true).is_err());
    }

    #[test]
    fn an_index_keeps_what_the_host_wrote_and_loses_what_would_hide_a_change() {
        let old = index_with(&["a", "b"], &[0x11, 0x22], &[0, ASSUME_VALID], &[]);
        // Unchanged: the same bytes.
        assert_eq!(sanitize(&old, Some((&old, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Smudge).unwrap(), old);
        // b's stat data changed, a marked "assume unchanged": b loses its times and size, a
        // its mark; b keeps the mark the host had set; the cache tree goes, `REUC` stays.
        let new =
            index_with(&["a", "b"], &[0x11, 0x33], &[ASSUME_VALID, ASSUME_VALID], &[(b"TREE", b"x"), (b"REUC", b"y")]);
        let out = sanitize(&new, Some((&old, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Smudge).unwrap();
        assert_eq!(check(&out, 20), Ok(()));
        let want = index_with(&["a", "b"], &[0x11, 0x33], &[0, ASSUME_VALID], &[(b"REUC", b"y")]);
        assert_eq!(out, second_smudged(&want));
        // Without an index before: every entry loses its times and size.
        let out = sanitize(&old, None, 20, &mut |_, _, _, _| Verdict::Smudge).unwrap();
        for at in [12, 76] {
            assert!(out[at..at + 16].iter().chain(&out[at + 36..at + 40]).all(|b| *b == 0));
            assert_eq!(out[at + 16..at + 36], old[at + 16..at + 36], "dev, ino, mode, uid, gid kept");
        }
        // Kept where the file is as the entry says.
        let kept = sanitize(&new, Some((&old, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Keep).unwrap();
        assert_eq!(kept[76..116], new[76..116]);
        // A sparse directory entry: only one the index before had, as it was.
        let mut sparse = index_with(&["a", "src/"], &[0x11, 0], &[0, 0], &[]);
        sparse[76 + 24..76 + 28].copy_from_slice(&SPARSE_DIRECTORY.to_be_bytes());
        let body = sparse.len() - 20;
        let digest = <sha1::Sha1 as sha1::Digest>::digest(&sparse[..body]);
        sparse[body..].copy_from_slice(&digest);
        assert!(sanitize(&sparse, Some((&old, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Keep).is_err());
        assert_eq!(
            sanitize(&sparse, Some((&sparse, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Smudge).unwrap(),
            sparse
        );
        // A name it refuses, refused.
        assert!(sanitize(&index(2, &["../x"]), Some((&old, u32::MAX)), 20, &mut |_, _, _, _| Verdict::Keep).is_err());
    }

    #[test]
    fn an_entry_racily_clean_before_is_kept_only_as_the_file_says() {
        // Entries whose times are the fill bytes: a's 0x11111111, b's 0x22222222.
        let old = index_with(&["a", "b"], &[0x11, 0x22], &[0, 0], &[]);
        // The index before was written in b's second: b was racily clean (git read its file
        // before trusting it), a was not. The same entries written again: b is asked about.
        let mut asked = Vec::new();
        let out = sanitize(&old, Some((&old, 0x2222_2222)), 20, &mut |name, _, _, _| {
            asked.push(name.to_vec());
            Verdict::Smudge
        })
        .unwrap();
        assert_eq!(asked, [b"b".to_vec()]);
        assert_eq!(out, second_smudged(&old));
        // Its file as the entry says: kept as it was.
        assert_eq!(sanitize(&old, Some((&old, 0x2222_2222)), 20, &mut |_, _, _, _| Verdict::Keep).unwrap(), old);
        // Written in a later second than both: neither is asked about.
        let mut asked = Vec::new();
        let out = sanitize(&old, Some((&old, 0x2222_2223)), 20, &mut |name, _, _, _| {
            asked.push(name.to_vec());
            Verdict::Smudge
        })
        .unwrap();
        assert!(asked.is_empty());
        assert_eq!(out, old);
        // git's own smudge (a size of 0) is never asked about.
        let smudged = second_smudged(&old);
        let mut asked = Vec::new();
        let _ = sanitize(&smudged, Some((&smudged, 0)), 20, &mut |name, _, _, _| {
            asked.push(name.to_vec());
            Verdict::Smudge
        });
        assert_eq!(asked, [b"a".to_vec()]);
    }

    #[test]
    fn names_git_writes_pass() {
        for names in [vec![], vec!["f"], vec!["a/b/c.txt", "dir/.gitignore", ".github/x", "git~2", "..x/y", "a..b"]] {
            assert_eq!(check(&index(2, &names), 20), Ok(()), "{names:?}");
            assert_eq!(check(&index(3, &names), 20), Ok(()), "{names:?}");
        }
    }

    #[test]
    fn names_git_would_not_write_are_refused() {
        for bad in [
            "/tmp/x",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/",
            ".git/hooks/pre-commit",
            "sub/.GIT/config",
            ".git./config",
            ".git  /config",
            "GIT~1/config",
            "a\\..\\b",
            "x\\.git\\config",
            ".git::$INDEX_ALLOCATION/config",
        ] {
            assert!(check(&index(2, &["ok", bad]), 20).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_version_4_index_is_read_with_its_prefixes() {
        // "dir/a", then "dir/b" (drop 1, add "b"), then "../x" written as drop 5 + "../x".
        let mut out = b"DIRC".to_vec();
        out.extend_from_slice(&4u32.to_be_bytes());
        out.extend_from_slice(&3u32.to_be_bytes());
        for (drop, suffix) in [(0u8, "dir/a"), (1, "b"), (5, "../x")] {
            out.extend_from_slice(&[0u8; 60]);
            let full = match suffix {
                "dir/a" => 5,
                "b" => 5,
                _ => 4,
            };
            out.extend_from_slice(&u16::try_from(full).unwrap().to_be_bytes());
            out.push(drop);
            out.extend_from_slice(suffix.as_bytes());
            out.push(0);
        }
        out.extend_from_slice(&[0u8; 20]);
        assert_eq!(check(&out, 20), Err("an entry named with an empty, . or .. component"));
        // Without the last entry it passes.
        let mut good = b"DIRC".to_vec();
        good.extend_from_slice(&4u32.to_be_bytes());
        good.extend_from_slice(&2u32.to_be_bytes());
        for (drop, suffix) in [(0u8, "dir/a"), (1, "b")] {
            good.extend_from_slice(&[0u8; 60]);
            good.extend_from_slice(&5u16.to_be_bytes());
            good.push(drop);
            good.extend_from_slice(suffix.as_bytes());
            good.push(0);
        }
        good.extend_from_slice(&[0u8; 20]);
        assert_eq!(check(&good, 20), Ok(()));
    }

    /// `good` with `extensions` (signature, body) added before its checksum.
    fn with_extensions(good: &[u8], extensions: &[(&[u8; 4], Vec<u8>)]) -> Vec<u8> {
        let mut out = good[..good.len() - 20].to_vec();
        for (signature, body) in extensions {
            out.extend_from_slice(*signature);
            out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
            out.extend_from_slice(body);
        }
        out.extend_from_slice(&[0u8; 20]);
        out
    }

    fn be(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn offset_tables_must_match_the_entries() {
        let good = index(2, &["a", "b", "c"]);
        // Entries of 64 bytes each from offset 12; their end at 204.
        let eoie = |at: u32| [be(&[at]), vec![0u8; 20]].concat();
        let ok = with_extensions(&good, &[(b"IEOT", be(&[1, 12, 2, 140, 1])), (b"EOIE", eoie(204))]);
        assert_eq!(check(&ok, 20), Ok(()));
        for bad in [
            with_extensions(&good, &[(b"IEOT", be(&[1, 12, 2, 141, 1])), (b"EOIE", eoie(204))]),
            with_extensions(&good, &[(b"IEOT", be(&[1, 12, 2])), (b"EOIE", eoie(204))]),
            with_extensions(&good, &[(b"IEOT", be(&[1, 12, 3, 140, 1]))]),
            with_extensions(&good, &[(b"EOIE", eoie(200))]),
            // An end-of-entries record hidden at the end of another extension's body.
            with_extensions(&good, &[(b"ZZZZ", [b"EOIE".to_vec(), be(&[24]), eoie(12)].concat())]),
        ] {
            assert!(check(&bad, 20).is_err());
        }
    }

    #[test]
    fn a_sparse_directory_entry_keeps_its_slash() {
        let sparse = |name: &[u8]| {
            let mut out = b"DIRC".to_vec();
            out.extend_from_slice(&be(&[2, 1]));
            let start = out.len();
            out.extend_from_slice(&[0u8; 24]);
            out.extend_from_slice(&be(&[0o040_000]));
            out.extend_from_slice(&[0u8; 12]);
            out.extend_from_slice(&[0xab; 20]);
            out.extend_from_slice(&u16::try_from(name.len()).unwrap().to_be_bytes());
            out.extend_from_slice(name);
            out.push(0);
            while !(out.len() - start).is_multiple_of(8) {
                out.push(0);
            }
            out.extend_from_slice(&[0u8; 20]);
            out
        };
        assert_eq!(check(&sparse(b"dir/"), 20), Ok(()));
        assert_eq!(check(&sparse(b"a/b/"), 20), Ok(()));
        for bad in [b"../".as_slice(), b"/", b".git/", b"a//"] {
            assert!(check(&sparse(bad), 20).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn broken_and_split_indexes_are_refused() {
        let good = index(2, &["f"]);
        assert!(check(&good[..good.len() - 1], 20).is_err());
        assert!(check(&good, 32).is_err());
        assert!(check(b"DIRX", 20).is_err());
        let mut split = good[..good.len() - 20].to_vec();
        split.extend_from_slice(b"link");
        split.extend_from_slice(&20u32.to_be_bytes());
        split.extend_from_slice(&[0u8; 20]);
        split.extend_from_slice(&[0u8; 20]);
        assert!(check(&split, 20).is_err());
        let mut tree = good[..good.len() - 20].to_vec();
        tree.extend_from_slice(b"TREE");
        tree.extend_from_slice(&3u32.to_be_bytes());
        tree.extend_from_slice(b"abc");
        tree.extend_from_slice(&[0u8; 20]);
        assert_eq!(check(&tree, 20), Ok(()));
    }
}
