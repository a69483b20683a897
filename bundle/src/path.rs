//! The one lexical path check of the project: what a "clean absolute path" is.

use std::path::Path;

/// Whether `p` is a clean absolute path: it starts with `/` and is either `/` itself or a
/// sequence of `/name` components in which no name is empty, `.` or `..`. So `//a`, `/a//b`,
/// `/a/./b`, `/a/../b` and a trailing `/` (`/a/`) are not clean, nor is a relative or an empty
/// path; a clean path names the same place in every reading (byte comparisons, `Path`
/// components, a string written into a file or a rule), which is why every check of a path
/// the sandbox acts on uses this one.
///
/// The check is lexical, on the path's bytes: it never looks at the filesystem (a clean path
/// may go through a symlink), and it neither requires UTF-8 nor refuses NUL; callers that need
/// either check it as well.
pub fn is_clean_absolute(p: &Path) -> bool {
    let b = p.as_os_str().as_encoded_bytes();
    b == b"/"
        || (b.first() == Some(&b'/') && b[1..].split(|c| *c == b'/').all(|c| !c.is_empty() && c != b"." && c != b".."))
}

#[cfg(test)]
mod tests {
    use super::is_clean_absolute;
    use std::path::Path;

    #[test]
    fn clean_absolute_paths() {
        for clean in ["/", "/a", "/a/b", "/a/b.c", "/a/.b", "/a/b..", "/.../x", "/a b/c"] {
            assert!(is_clean_absolute(Path::new(clean)), "{clean:?} should be clean");
        }
        for unclean in [
            "", ".", "..", "a", "a/b", "./a", "//", "//a", "/a//b", "/a/", "/a/b/", "/.", "/..", "/a/.", "/a/..",
            "/a/./b", "/a/../b", "/./a", "/../a",
        ] {
            assert!(!is_clean_absolute(Path::new(unclean)), "{unclean:?} should not be clean");
        }
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_is_judged_by_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        assert!(is_clean_absolute(Path::new(std::ffi::OsStr::from_bytes(b"/a/\xff"))));
        assert!(!is_clean_absolute(Path::new(std::ffi::OsStr::from_bytes(b"/\xff/"))));
    }
}
