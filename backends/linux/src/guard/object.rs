//! The object store of a git directory the run did not make: what a name there may be, and the
//! check of a loose object brought under its name.
//!
//! git does not compare an object's content with its name when it reads it (`git fsck` does):
//! a loose object replaced by another blob's, one planted ahead under the name a later commit's
//! content will have, a pack with its index, a multi-pack index, a commit graph (which names
//! each commit's tree) or an `alternates` file made the host's later `git checkout`, `git
//! restore` or `git reset --hard` write the workload's content into a tracked file, and `git
//! diff` show nothing of it (found on 5 December, measured with git 2.47). So in such a store a
//! run adds loose objects only, each checked as `git index-pack` would (inflated, hashed, the
//! hash equal to its name), and temporaries (`tmp_*`, which git never reads as objects).

use std::io::{Read, Write};

use super::index::Refusal;

/// Which object store: git's (`<G>/objects`, its object names this many bytes long) or Git
/// LFS's (`<G>/lfs/objects/<aa>/<bb>/<sha256>`, the file's own SHA-256: `git lfs` copies such a
/// file into the work tree at the host's checkout of a pointer without hashing it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Git(usize),
    Lfs,
}

/// What a path in a foreign object store (`<G>/objects/...`, `G` a git directory the run did
/// not make) is to the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorePath {
    /// `<xx>/<rest>`: a loose object's name (lower-case hexadecimal of the repository's hash
    /// length). It comes only by a rename or link the guard checks ([`copy_loose`]).
    Loose,
    /// A name git reads (a pack, its index, reverse index or bitmap, a multi-pack index, a commit
    /// graph, `info/alternates`, a file in a fan-out directory that is no object's name) or a
    /// symlink anywhere: neither made, written, linked nor renamed by the run.
    Refused,
    /// A temporary (`tmp_*` in the store, a fan-out, `pack` or `info` directory), a directory
    /// of the store (`objects/<xx>`, `pack`, `info`), or anything in another directory of the
    /// store (a quarantine git moves objects out of one by one, each through [`StorePath::Loose`]).
    Free,
}

/// Classifies `rel`, the components of a path below a foreign `objects` directory (at least
/// one), in `store`. In Git LFS's store only an object's name counts (nothing else there is
/// read).
pub fn classify(rel: &[&[u8]], store: Store) -> StorePath {
    let hex = |s: &[u8], len: usize| s.len() == len && s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let hash = match store {
        Store::Git(hash) => hash,
        Store::Lfs => {
            return match rel {
                [a, b, name] if hex(a, 2) && hex(b, 2) && hex(name, 64) && name[..2] == **a && name[2..4] == **b => {
                    StorePath::Loose
                }
                _ => StorePath::Free,
            };
        }
    };
    let temp = |s: &[u8]| s.starts_with(b"tmp_");
    match rel {
        [] | [_] => StorePath::Free,
        [dir, name] if hex(dir, 2) => {
            if hex(name, 2 * hash - 2) {
                StorePath::Loose
            } else if temp(name) {
                StorePath::Free
            } else {
                StorePath::Refused
            }
        }
        [dir, name] if (*dir == b"pack" || *dir == b"info") && temp(name) => StorePath::Free,
        [dir, ..] if hex(dir, 2) || *dir == b"pack" || *dir == b"info" => StorePath::Refused,
        _ => StorePath::Free,
    }
}

/// Why a copy failed: the content was refused, or reading or writing failed.
#[derive(Debug)]
pub enum Failure {
    Refused(Refusal),
    Io,
}

/// The inflated stream of a loose object: its header (`<type> <size>\0`), its length and its
/// hash, as they come.
struct Inflated {
    header: Vec<u8>,
    header_done: bool,
    body: u64,
    hash: Hasher,
}

/// git's object hash: SHA-1 for 20-byte names, else SHA-256.
pub enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    /// The hash of a repository whose object names are `len` bytes long.
    pub fn new(len: usize) -> Hasher {
        if len == 20 { Hasher::Sha1(sha1::Sha1::default()) } else { Hasher::Sha256(sha2::Sha256::default()) }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha1(h) => sha1::Digest::update(h, data),
            Hasher::Sha256(h) => sha2::Digest::update(h, data),
        }
    }

    pub fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Sha1(h) => sha1::Digest::finalize(h).to_vec(),
            Hasher::Sha256(h) => sha2::Digest::finalize(h).to_vec(),
        }
    }
}

impl Inflated {
    fn take(&mut self, mut data: &[u8]) -> Result<(), Refusal> {
        self.hash.update(data);
        while !self.header_done && !data.is_empty() {
            let b = data[0];
            data = &data[1..];
            if b == 0 {
                self.header_done = true;
            } else if self.header.len() >= 32 {
                return Err("a loose object's header is too long");
            } else {
                self.header.push(b);
            }
        }
        self.body += data.len() as u64;
        Ok(())
    }

    fn finish(self, name: &[u8]) -> Result<(), Refusal> {
        if !self.header_done {
            return Err("a loose object without a header");
        }
        let header = std::str::from_utf8(&self.header).map_err(|_| "a loose object's header is not text")?;
        let (kind, size) = header.split_once(' ').ok_or("a loose object's header has no size")?;
        if !matches!(kind, "blob" | "tree" | "commit" | "tag") {
            return Err("a loose object of no git type");
        }
        if size.is_empty() || !size.bytes().all(|b| b.is_ascii_digit()) || size.parse::<u64>() != Ok(self.body) {
            return Err("a loose object's size is not its length");
        }
        if hex(&self.hash.finish()) == name { Ok(()) } else { Err("a loose object whose content is not its name") }
    }
}

/// `bytes` in lower-case hexadecimal, as git writes object names.
fn hex(bytes: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    bytes.iter().flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]).collect()
}

/// Reads `source` to its end, writing each piece to `dest` and handing it to `each`.
fn copy_through(
    source: &mut impl Read,
    dest: &mut impl Write,
    each: &mut dyn FnMut(&[u8]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut input = vec![0u8; 64 * 1024];
    loop {
        let n = match source.read(&mut input) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Failure::Io),
        };
        dest.write_all(&input[..n]).map_err(|_| Failure::Io)?;
        each(&input[..n])?;
    }
}

/// Copies `source` to `dest` as it reads it (Git LFS's object `name`, SHA-256 in hexadecimal),
/// and checks that what it copied hashes to `name`.
pub fn copy_lfs(source: &mut impl Read, dest: &mut impl Write, name: &[u8]) -> Result<(), Failure> {
    let mut h = sha2::Sha256::default();
    copy_through(source, dest, &mut |piece| {
        sha2::Digest::update(&mut h, piece);
        Ok(())
    })?;
    if hex(&sha2::Digest::finalize(h)) == name {
        Ok(())
    } else {
        Err(Failure::Refused("a Git LFS object whose content is not its name"))
    }
}

/// Copies the loose object `source` (zlib-compressed) to `dest` as it reads it, and checks what
/// it copied: one zlib stream and nothing after it, inflating to a header `<type> <size>\0` of
/// a git type and `size` bytes, whose hash (SHA-1 for 20-byte names, else SHA-256) written in
/// hexadecimal is `name` (the fan-out directory's two characters and the file's name).
pub fn copy_loose(source: &mut impl Read, dest: &mut impl Write, name: &[u8], hash: usize) -> Result<(), Failure> {
    let mut inflate = flate2::Decompress::new(true);
    let mut seen = Inflated { header: Vec::new(), header_done: false, body: 0, hash: Hasher::new(hash) };
    let mut output = vec![0u8; 64 * 1024];
    let mut ended = false;
    copy_through(source, dest, &mut |mut chunk| {
        while !chunk.is_empty() {
            if ended {
                return Err(Failure::Refused("data after a loose object's stream"));
            }
            let (before_in, before_out) = (inflate.total_in(), inflate.total_out());
            let status = inflate
                .decompress(chunk, &mut output, flate2::FlushDecompress::None)
                .map_err(|_| Failure::Refused("a loose object that does not inflate"))?;
            let used = usize::try_from(inflate.total_in() - before_in).map_err(|_| Failure::Io)?;
            let made = usize::try_from(inflate.total_out() - before_out).map_err(|_| Failure::Io)?;
            seen.take(&output[..made]).map_err(Failure::Refused)?;
            chunk = &chunk[used..];
            if status == flate2::Status::StreamEnd {
                ended = true;
            } else if used == 0 && made == 0 {
                return Err(Failure::Refused("a loose object that does not inflate"));
            }
        }
        Ok(())
    })?;
    // Input ended: what is still buffered inside the inflater comes out now.
    while !ended {
        let before_out = inflate.total_out();
        let status = inflate
            .decompress(&[], &mut output, flate2::FlushDecompress::Finish)
            .map_err(|_| Failure::Refused("a loose object that does not inflate"))?;
        let made = usize::try_from(inflate.total_out() - before_out).map_err(|_| Failure::Io)?;
        seen.take(&output[..made]).map_err(Failure::Refused)?;
        match status {
            flate2::Status::StreamEnd => ended = true,
            _ if made == 0 => return Err(Failure::Refused("a loose object cut short")),
            _ => {}
        }
    }
    seen.finish(name).map_err(Failure::Refused)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn name_of(data: &[u8], hash: usize) -> Vec<u8> {
        let digest: Vec<u8> = if hash == 20 {
            <sha1::Sha1 as sha1::Digest>::digest(data).to_vec()
        } else {
            <sha2::Sha256 as sha2::Digest>::digest(data).to_vec()
        };
        hex(&digest)
    }

    fn check(file: &[u8], name: &[u8], hash: usize) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::new();
        copy_loose(&mut &file[..], &mut out, name, hash).map(|()| out)
    }

    #[test]
    fn an_object_named_by_its_content_is_copied_whole() {
        for hash in [20, 32] {
            let object = b"blob 6\0hello\n";
            let file = deflate(object);
            assert_eq!(check(&file, &name_of(object, hash), hash).unwrap(), file);
            // git's empty tree, and an object larger than one read.
            let big: Vec<u8> = [b"blob 300000\0".as_slice(), &vec![b'x'; 300_000]].concat();
            assert!(check(&deflate(&big), &name_of(&big, hash), hash).is_ok());
        }
        assert!(check(&deflate(b"tree 0\0"), b"4b825dc642cb6eb9a060e54bf8d69288fbee4904", 20).is_ok());
    }

    #[test]
    fn an_object_that_is_not_its_name_is_refused() {
        let object = b"blob 6\0hello\n";
        let other = b"blob 5\0evil\n";
        let refused = |file: &[u8], name: &[u8], hash| matches!(check(file, name, hash), Err(Failure::Refused(_)));
        assert!(refused(&deflate(other), &name_of(object, 20), 20), "another content");
        assert!(refused(&deflate(object), &name_of(object, 32), 20), "a SHA-256 name in a SHA-1 store");
        assert!(refused(&[deflate(object), b"x".to_vec()].concat(), &name_of(object, 20), 20), "data after");
        let cut = deflate(object);
        assert!(refused(&cut[..cut.len() - 3], &name_of(object, 20), 20), "cut short");
        assert!(refused(object, &name_of(object, 20), 20), "not compressed");
        for bad in [&b"blob 7\0hello\n"[..], b"blob\0hello\n", b"evil 6\0hello\n", b"blob 6", b"blob +6\0hello\n"] {
            assert!(refused(&deflate(bad), &name_of(bad, 20), 20), "{}", String::from_utf8_lossy(bad));
        }
        assert!(refused(&[], &name_of(b"", 20), 20), "empty");
    }

    #[test]
    fn names_in_a_store() {
        let c = |p: &str| classify(&p.split('/').map(str::as_bytes).collect::<Vec<_>>(), Store::Git(20));
        let loose = "ab/0123456789abcdef0123456789abcdef012345";
        assert_eq!(c(loose), StorePath::Loose);
        for free in ["ab", "pack", "info", "ab/tmp_obj_x1", "pack/tmp_pack_x", "info/tmp_x", "incoming-1/ab/x", "x"] {
            assert_eq!(c(free), StorePath::Free, "{free}");
        }
        for refused in [
            "ab/0123456789ABCDEF0123456789abcdef012345",
            "ab/0123456789abcdef0123456789abcdef01234",
            "ab/x",
            "ab/sub/tmp_x",
            "pack/pack-1.pack",
            "pack/pack-1.idx",
            "pack/multi-pack-index",
            "info/alternates",
            "info/commit-graph",
            "info/commit-graphs/tmp_x",
        ] {
            assert_eq!(c(refused), StorePath::Refused, "{refused}");
        }
        let sha256 = format!("ab/{}", "0".repeat(62));
        assert_eq!(
            classify(&sha256.split('/').map(str::as_bytes).collect::<Vec<_>>(), Store::Git(32)),
            StorePath::Loose
        );
        assert_eq!(c(&sha256), StorePath::Refused);
        let lfs = |p: &str| classify(&p.split('/').map(str::as_bytes).collect::<Vec<_>>(), Store::Lfs);
        let oid = format!("ab12{}", "0".repeat(60));
        assert_eq!(lfs(&format!("ab/12/{oid}")), StorePath::Loose);
        for free in [format!("ab/13/{oid}"), "ab/12".to_owned(), format!("ab/12/{oid}.tmp"), "x".to_owned()] {
            assert_eq!(lfs(&free), StorePath::Free, "{free}");
        }
        let mut out = Vec::new();
        let data = b"large file\n";
        let name = name_of(data, 32);
        assert!(copy_lfs(&mut &data[..], &mut out, &name).is_ok() && out == data);
        assert!(matches!(copy_lfs(&mut &b"other"[..], &mut Vec::new(), &name), Err(Failure::Refused(_))));
    }
}
