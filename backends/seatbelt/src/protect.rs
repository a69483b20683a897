//! Protected paths (issue 14) in SBPL: the deny rules that keep the bundle's protected entries
//! ([`Protected`]) read-only wherever the profile lets the workload write, creation, removal and
//! rename included. They are written last in the profile: SBPL lets the last matching rule win,
//! so no allow (workspace, roots, grants, the executor's HOME and TMPDIR, the xcrun cache) can
//! widen them again.
//!
//! - **Names** (`.envrc`, `.claude/commands`, a profile's `extra`): one
//!   `(deny file-write* (regex …))` each, matching any path that has the name's components as
//!   the last components of one of its ancestors-or-self: the entry and everything beneath it,
//!   at every depth. The regex is not anchored at each writable area but at `/`: a deny where
//!   nothing is writable changes nothing, and an area-anchored rule would leave the places the
//!   profile allows writing outside the areas (the executor's HOME and TMPDIR, the xcrun cache)
//!   open to "move the parent there, edit, move it back". `file-write*` covers create, unlink,
//!   rename (both ends), symlink, mode, flags, times and xattrs.
//! - **A name's leading part** (`.claude` of `.claude/commands`): `(deny file-write-create …)`.
//!   A directory renamed to `.claude` (or a symlink named `.claude`) would bring a `commands` the
//!   workload filled elsewhere. Seatbelt checks the new name of a rename, a link, a symlink and a
//!   `mkdir` alike (`file-write-create`) and has no filter that tells them apart, so refusing the
//!   rename refuses `mkdir .claude` too: on macOS a leading part that does not exist cannot be
//!   created inside a writable area (Linux allows the `mkdir`; its guard sees the operation). An
//!   existing `.claude` stays usable, and may be removed or renamed away (what it held is then no
//!   longer where the host looks). `git init` is unaffected: `.git/…` entries are exact paths
//!   found by the scan at spawn, not names.
//! - **Exact paths** (`bound`: existing entries; `guard.paths`: entries that did not exist):
//!   `(deny file-write* (literal P) (subpath P))`, both spellings of `/private` paths. Seatbelt
//!   matches paths, not inodes, so each of their ancestors inside a writable area is pinned
//!   (`file-write-unlink`: not removed or renamed away with the entry inside, to be edited
//!   elsewhere and put back) and refused creation (`file-write-create`: a missing ancestor cannot
//!   be made a symlink or a renamed, pre-filled directory; this refuses its `mkdir` too).
//! - **Hard links**: `(deny file-link)`. The profile never allows `file-link`; the deny makes
//!   sure no protected file gets a second, writable name whether or not macOS counts the link's
//!   new name under `file-write*` (not verified on macOS).
//!
//! `narrowed` entries need nothing here (the report names them). An opted-out profile with
//! nothing found by the scan gets no rules at all.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sandbox_bundle::Error;
use sandbox_bundle::protect::Protected;

use crate::{filter, quote_str, spellings};

/// The longest string literal `sandbox-exec` reads (it rejects the whole profile beyond that).
const SBPL_STRING_MAX: usize = 1024;

/// Escapes `text` so that a regex matches it literally: every character POSIX extended regular
/// expressions (Seatbelt) and the `regex` crate treat as special gets a backslash.
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '.' | '*' | '+' | '?' | '^' | '$' | '{' | '}' | '(' | ')' | '|' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn components(pattern: &str) -> Vec<String> {
    pattern.split('/').filter(|c| !c.is_empty()).map(regex_escape).collect()
}

/// The regex of a name pattern: a path with an ancestor-or-self ending with the pattern's
/// components (`^(/.*)?/<c1>/<c2>(/.*)?$`). `None` for an empty pattern.
pub(crate) fn name_regex(pattern: &str) -> Option<String> {
    let comps = components(pattern);
    if comps.is_empty() {
        return None;
    }
    Some(format!("^(/.*)?/{}(/.*)?$", comps.join("/")))
}

/// The regexes of a pattern's proper leading parts as a path's last components
/// (`.claude/commands` → `^(/.*)?/\.claude$`).
///
/// Except the leading parts in [`CREATABLE_LEADING`], which a workload must be able to make.
pub(crate) fn leading_regexes(pattern: &str) -> Vec<String> {
    let comps = components(pattern);
    (1..comps.len())
        .filter(|k| !CREATABLE_LEADING.contains(&comps[..*k].join("/").as_str()))
        .map(|k| format!("^(/.*)?/{}$", comps[..k].join("/")))
        .collect()
}

/// Leading parts of default names that stay creatable on macOS: `.github` (of `.github/hooks`),
/// where a repository's workflows and templates live, which agents make in new repositories;
/// `.config` (of `.config/mise`) and `mise` (of `mise/config.toml`), ordinary directory names.
/// The price: a directory of such a name may be renamed into place already holding the rest of
/// the name (the exact names are still refused everywhere else). Linux's guard sees that
/// rename; Seatbelt cannot tell it from the `mkdir`. (`.cargo`, `.hg`, `.jj`, `.sl` and
/// `.clinerules` cannot be made on macOS: project config, and repositories of those tools, are
/// not made inside a run there.)
const CREATABLE_LEADING: [&str; 3] = ["\\.github", "\\.config", "mise"];

/// `(regex "…")`, the regex quoted as an SBPL string.
fn regex_filter(regex: &str) -> Result<String, Error> {
    let q = quote_str("protected-path regex", regex)?;
    if q.len() > SBPL_STRING_MAX {
        return Err(Error::InvalidArgument {
            detail: format!(
                "protected-path regex {regex:?} is longer than the {SBPL_STRING_MAX} bytes a seatbelt string can hold"
            ),
        });
    }
    Ok(format!("(regex {q})"))
}

/// The ancestors of `paths` at or below a writable area (`writable`), without `paths` themselves.
fn pinned_ancestors(paths: &[PathBuf], writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        let mut a = p.clone();
        while a.pop() && a != Path::new("/") {
            if writable.iter().any(|w| a.starts_with(w)) && !paths.contains(&a) && !out.contains(&a) {
                out.push(a.clone());
            }
        }
    }
    out.sort();
    out
}

/// Appends the protect rules of `protection` to `out` (nothing when nothing is protected).
/// `writable` are the trees the profile allows writing (`/` when host entries are writable).
pub(crate) fn rules(out: &mut String, protection: &Protected, writable: &[PathBuf]) -> Result<(), Error> {
    let names = &protection.guard.names;
    let mut exact: Vec<PathBuf> = protection.bound.iter().chain(&protection.guard.paths).cloned().collect();
    exact.sort();
    exact.dedup();
    let repositories = &protection.guard.no_new_repositories;
    let no_new_entries = &protection.guard.no_new_entries;
    let hidden_in = &protection.guard.hidden_in;
    if names.is_empty()
        && exact.is_empty()
        && repositories.is_empty()
        && no_new_entries.is_empty()
        && hidden_in.is_empty()
    {
        return Ok(());
    }
    let _ = writeln!(
        out,
        ";; protected paths ({}): read-only wherever writing is allowed above, creation, removal and\n\
         ;; rename included; last, so that no allow widens them again",
        protection.version
    );
    let name_filters =
        names.iter().filter_map(|n| name_regex(n)).map(|r| regex_filter(&r)).collect::<Result<Vec<_>, _>>()?;
    if !name_filters.is_empty() {
        out.push_str(";; names, at every depth: the entry and everything beneath it\n(deny file-write*");
        for f in &name_filters {
            let _ = write!(out, "\n  {f}");
        }
        out.push_str(")\n");
    }
    let mut leading: Vec<String> = names.iter().flat_map(|n| leading_regexes(n)).collect();
    leading.sort();
    leading.dedup();
    if !leading.is_empty() {
        out.push_str(
            ";; a name's leading part cannot come into being: renamed or linked there, a directory would\n\
             ;; bring the rest of the name along, and seatbelt checks mkdir the same way (file-write-create)\n\
             (deny file-write-create",
        );
        for r in &leading {
            let _ = write!(out, "\n  {}", regex_filter(r)?);
        }
        out.push_str(")\n");
    }
    if !exact.is_empty() {
        out.push_str(";; entries found at spawn, existing or not: the entry and everything beneath it\n");
        for p in &exact {
            let mut filters = Vec::new();
            for s in spellings(p) {
                filters.push(filter(&s, true)?);
                filters.push(filter(&s, false)?);
            }
            let _ = writeln!(out, "(deny file-write* {})", filters.join(" "));
        }
        let ancestors = pinned_ancestors(&exact, writable);
        if !ancestors.is_empty() {
            out.push_str(";; their ancestors in a writable area: neither removed, renamed nor created\n");
            for a in &ancestors {
                let filters = spellings(a).iter().map(|s| filter(s, true)).collect::<Result<Vec<_>, _>>()?;
                let _ = writeln!(out, "(deny file-write-unlink file-write-create {})", filters.join(" "));
            }
        }
    }
    if !repositories.is_empty() {
        out.push_str(
            ";; beneath a repository's work tree no new .git (a nested repository staged as a submodule\n\
             ;; is entered by the host's git status at the work tree's root), nor a HEAD outside a .git\n\
             ;; (a bare layout is the repository of the host's git run in its directory)\n(deny file-write-create",
        );
        for w in repositories {
            for s in spellings(w) {
                let _ = write!(out, "\n  {}", regex_filter(&new_git_regex(&s))?);
                let _ = write!(out, "\n  {}", regex_filter(&new_head_regex(&s))?);
            }
        }
        out.push_str(")\n");
    }
    if !no_new_entries.is_empty() {
        out.push_str(
            ";; no new entry in a git directory's modules (a planted module's git directory)\n(deny file-write-create",
        );
        for d in no_new_entries {
            for s in spellings(d) {
                let dir = regex_escape(&s.to_string_lossy());
                let _ = write!(out, "\n  {}", regex_filter(&format!("^{}/[^/]+$", dir.trim_end_matches('/')))?);
            }
        }
        out.push_str(")\n");
    }
    if !hidden_in.is_empty() {
        out.push_str(
            ";; every hidden entry of the real HOME, existing or not, and everything beneath it\n(deny file-write*",
        );
        for d in hidden_in {
            for s in spellings(d) {
                let dir = regex_escape(&s.to_string_lossy());
                let _ =
                    write!(out, "\n  {}", regex_filter(&format!("^{}/\\.[^/]*(/.*)?$", dir.trim_end_matches('/')))?);
            }
        }
        out.push_str(")\n");
    }
    out.push_str(";; hard links: no protected file gets a second, writable name\n(deny file-link)\n");
    Ok(())
}

/// One path component other than `.git` (POSIX regular expressions have no lookahead).
const NOT_DOT_GIT: &str = r"([^/.][^/]*|\.([^/g][^/]*)?|\.g([^/i][^/]*)?|\.gi([^/t][^/]*)?|\.git[^/]+)";

/// The regex of a `HEAD` at any depth beneath the directory `dir` in no `.git` directory.
pub(crate) fn new_head_regex(dir: &Path) -> String {
    let dir = regex_escape(&dir.to_string_lossy());
    format!("^{}/({NOT_DOT_GIT}/)*HEAD$", dir.trim_end_matches('/'))
}

/// The regex of a `.git` at any depth beneath the directory `dir` (`^/ws/(.*/)?\.git$`).
pub(crate) fn new_git_regex(dir: &Path) -> String {
    let dir = regex_escape(&dir.to_string_lossy());
    format!("^{}/(.*/)?\\.git$", dir.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(re: &str, path: &str) -> bool {
        regex::Regex::new(re).is_ok_and(|r| r.is_match(path))
    }

    #[test]
    fn escaping_makes_every_metacharacter_literal() {
        assert_eq!(regex_escape(".mcp.json"), "\\.mcp\\.json");
        assert_eq!(regex_escape("a+b(c)[d]{e}|f^g$h*i?j\\k"), "a\\+b\\(c\\)\\[d\\]\\{e\\}\\|f\\^g\\$h\\*i\\?j\\\\k");
        assert_eq!(regex_escape("plain-name_1 #\"/"), "plain-name_1 #\"/");
        // Each escaped text matches itself and only itself.
        for text in [".mcp.json", "a+b", "x(y)", "[z]", "{1,2}", "a|b", "^$", "a*", "q?", "back\\slash", "\"q\""] {
            let re = format!("^{}$", regex_escape(text));
            assert!(matches(&re, text), "{text:?}");
            assert!(!matches(&re, &format!("{text}x")), "{text:?}");
        }
        assert!(!matches(&format!("^{}$", regex_escape(".mcp.json")), "xmcpxjson"));
    }

    #[test]
    fn a_name_matches_the_entry_at_every_depth_and_beneath_it_only() {
        let re = name_regex(".mcp.json").unwrap_or_default();
        assert_eq!(re, "^(/.*)?/\\.mcp\\.json(/.*)?$");
        for p in
            ["/.mcp.json", "/ws/.mcp.json", "/private/var/ws/a/b/.mcp.json", "/ws/.mcp.json/x", "/ws/.mcp.json/x/y"]
        {
            assert!(matches(&re, p), "{p}");
        }
        for p in ["/ws/xmcp.json", "/ws/.mcp.jsonx", "/ws/x.mcp.json", "/ws/.mcp.json.bak", "/ws/.mcp_json", "/ws"] {
            assert!(!matches(&re, p), "{p}");
        }
        let re = name_regex(".claude/commands").unwrap_or_default();
        assert_eq!(re, "^(/.*)?/\\.claude/commands(/.*)?$");
        for p in ["/ws/.claude/commands", "/ws/pkg/.claude/commands/x.md", "/.claude/commands"] {
            assert!(matches(&re, p), "{p}");
        }
        for p in ["/ws/.claude", "/ws/.claude/other", "/ws/commands", "/ws/x.claude/commands", "/ws/.claude/commandsx"]
        {
            assert!(!matches(&re, p), "{p}");
        }
        assert_eq!(name_regex(""), None);
        assert_eq!(name_regex("/"), None);
    }

    #[test]
    fn leading_parts_match_the_new_name_only() {
        assert!(leading_regexes(".envrc").is_empty());
        for creatable in [".github/hooks", ".config/mise", "mise/config.toml"] {
            assert!(leading_regexes(creatable).is_empty(), "{creatable}");
        }
        let res = leading_regexes("a.b/c/d");
        assert_eq!(res, vec!["^(/.*)?/a\\.b$".to_owned(), "^(/.*)?/a\\.b/c$".to_owned()]);
        assert!(matches(&res[0], "/ws/a.b") && matches(&res[0], "/ws/x/a.b"));
        assert!(!matches(&res[0], "/ws/a.b/c") && !matches(&res[0], "/ws/axb") && !matches(&res[0], "/ws/xa.b"));
        assert!(matches(&res[1], "/ws/a.b/c") && !matches(&res[1], "/ws/a.b/c/d"));
    }

    #[test]
    fn regexes_agree_with_the_creation_guard() {
        use sandbox_bundle::{CreateOp, CreationGuard};
        let names = [".envrc", ".claude/commands", "a.b/c+d"];
        let guard = CreationGuard {
            version: "protect-v1".into(),
            names: names.map(String::from).into(),
            paths: vec![],
            exempt: vec![],
            no_new_repositories: vec![PathBuf::from("/ws/repo")],
            no_new_entries: vec![],
            hidden_in: vec![],
            denied: Vec::new(),
            reopened: Vec::new(),
            not_exempt: vec![],
        };
        let git = new_git_regex(Path::new("/ws/repo"));
        let head = new_head_regex(Path::new("/ws/repo"));
        for p in [
            "/ws/repo/.git",
            "/ws/repo/a/b/.git",
            "/ws/repo/.git/config",
            "/ws/repo/.gitx",
            "/ws/other/.git",
            "/ws/repox/.git",
            "/ws/repo/HEAD",
            "/ws/repo/src/HEAD",
            "/ws/repo/./../HEAD",
            "/ws/repo/.g/.gi/.gitx/.github/..git/HEAD",
            "/ws/repo/.git/HEAD",
            "/ws/repo/sub/.git/worktrees/w/HEAD",
            "/ws/repo/HEADS",
            "/ws/other/HEAD",
        ] {
            let sbpl = matches(&git, p) || matches(&head, p);
            assert_eq!(sbpl, guard.refuses(Path::new(p), CreateOp::Create), "{p}");
        }
        let write: Vec<String> = names.iter().filter_map(|n| name_regex(n)).collect();
        let create: Vec<String> = names.iter().flat_map(|n| leading_regexes(n)).collect();
        for p in [
            "/ws/.envrc",
            "/ws/a/.envrc/b",
            "/ws/.envrcx",
            "/ws/.claude",
            "/ws/.claude/commands",
            "/ws/.claude/commands/x",
            "/ws/.claude/agents",
            "/ws/a.b",
            "/ws/axb",
            "/ws/a.b/c+d",
            "/ws/a.b/cd",
            "/ws/a.b/c+d/e",
        ] {
            let by_write = write.iter().any(|r| matches(r, p));
            let by_create = create.iter().any(|r| matches(r, p));
            assert_eq!(by_write, guard.refuses(Path::new(p), CreateOp::Create), "{p}: create");
            assert_eq!(by_write || by_create, guard.refuses(Path::new(p), CreateOp::Place), "{p}: place");
        }
    }

    #[test]
    fn long_regexes_and_control_characters_are_refused() {
        let long = "x".repeat(SBPL_STRING_MAX);
        assert!(regex_filter(&name_regex(&long).unwrap_or_default()).is_err());
        assert!(regex_filter("^a\nb$").is_err());
        assert_eq!(regex_filter("^a\"b\\.c$").ok().as_deref(), Some("(regex \"^a\\\"b\\\\.c$\")"));
    }

    #[test]
    fn ancestors_are_pinned_inside_writable_areas_only() {
        let paths = [PathBuf::from("/ws/.git/hooks"), PathBuf::from("/ws/.git/config"), PathBuf::from("/ro/x/y")];
        let got = pinned_ancestors(&paths, &[PathBuf::from("/ws")]);
        assert_eq!(got, vec![PathBuf::from("/ws"), PathBuf::from("/ws/.git")]);
        let nested = [PathBuf::from("/ws/a"), PathBuf::from("/ws/a/b")];
        assert_eq!(pinned_ancestors(&nested, &[PathBuf::from("/ws")]), vec![PathBuf::from("/ws")]);
        assert_eq!(
            pinned_ancestors(&paths[..1], &[PathBuf::from("/")]),
            vec![PathBuf::from("/ws"), PathBuf::from("/ws/.git")]
        );
    }
}
