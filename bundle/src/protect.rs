//! Protected paths (issue 14): what the host runs later without asking, kept read-only inside
//! every writable area whether it exists or not.
//!
//! A versioned default list ([`PROTECT_V1`]) of three kinds of entries:
//!
//! - **names** (`.envrc`, `.vscode`, `.claude/commands`, …): relative patterns protected at
//!   every depth. A path is protected when one of its ancestors-or-self ends with the pattern's
//!   components (`/ws/pkg/.claude/commands/x.md` is, through `.claude/commands`).
//! - **git** (`.git/hooks`, `.git/config`): the hooks and config of every git directory found
//!   at spawn inside a writable area: repositories at any depth, their submodules
//!   (`.git/modules/**`), the common directory of a linked worktree (followed through
//!   `gitdir:` and `commondir`), and the hooks directory the repository's config designates
//!   (`core.hooksPath`). A repository created during a run is the workload's own and is
//!   protected from the next spawn on (git must be able to write a new repository's config).
//! - **home** (`~/.bashrc`, `~/.gitconfig`, …): exact files in the real HOME, when the profile
//!   gives the real HOME.
//!
//! How they are enforced: existing entries are bound read-only onto themselves with their
//! ancestors pinned (they cannot be written, removed, renamed or replaced, nor moved away
//! with an ancestor); an entry that does not exist is refused creation by the
//! [`CreationGuard`] (the Linux init's supervisor, or Seatbelt's deny rules).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;

mod scan;
pub use scan::{RootKind, ScanMemo, is_git_directory, read_small, scan, scan_with};
pub(crate) use scan::{Stamp, any_stamp, lookup_trail};

/// The name of the default list; it appears in reports and exported bundles.
pub const PROTECT_V1: &str = "protect-v1";

/// What kind of entry a default-list entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A relative pattern protected at every depth of every writable area.
    Name,
    /// The hooks or config of the git directories found at spawn.
    Git,
    /// A path relative to the real HOME (spelled `~/…`), protected when the HOME is real.
    Home,
}

/// The default list `protect-v1`, with why each entry is there (README "Protected paths").
pub const V1: &[(&str, EntryKind, &str)] = &[
    (".git/hooks", EntryKind::Git, "git runs them at commit, checkout, merge, push"),
    (
        ".git/config",
        EntryKind::Git,
        "core.fsmonitor, core.hooksPath, core.sshCommand, aliases, filters, credential helpers",
    ),
    (".envrc", EntryKind::Name, "direnv runs it on cd"),
    (".vscode", EntryKind::Name, "tasks, launch configurations and settings that start tools"),
    (".idea", EntryKind::Name, "run configurations and tool settings of JetBrains IDEs"),
    (".mcp.json", EntryKind::Name, "MCP servers an agent starts"),
    (".codex", EntryKind::Name, "Codex configuration"),
    (".agents", EntryKind::Name, "agent configuration"),
    (".cursor", EntryKind::Name, "Cursor rules and MCP configuration"),
    (".claude/commands", EntryKind::Name, "Claude Code commands"),
    (".claude/agents", EntryKind::Name, "Claude Code agents"),
    (".claude/settings.json", EntryKind::Name, "Claude Code settings carry hooks"),
    (".claude/settings.local.json", EntryKind::Name, "Claude Code settings carry hooks"),
    (".bashrc", EntryKind::Name, "shell start-up, wherever a shell or a tool sources it from"),
    (".bash_profile", EntryKind::Name, "shell start-up"),
    (".bash_login", EntryKind::Name, "shell start-up"),
    (".profile", EntryKind::Name, "shell start-up"),
    (".zshrc", EntryKind::Name, "shell start-up"),
    (".zprofile", EntryKind::Name, "shell start-up"),
    (".zshenv", EntryKind::Name, "shell start-up"),
    (".zlogin", EntryKind::Name, "shell start-up"),
    (".gitconfig", EntryKind::Name, "git configuration when included or used as a HOME"),
    (".gitmodules", EntryKind::Name, "submodule URLs and paths git acts on"),
    (".ripgreprc", EntryKind::Name, "ripgrep options (a preprocessor command)"),
    (".pre-commit-config.yaml", EntryKind::Name, "the commands pre-commit's hook runs at the host's commit"),
    ("lefthook.yml", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook.yaml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook.yml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook.yaml", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook-local.yml", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook-local.yaml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook-local.yml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook-local.yaml", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook.json", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook.jsonc", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook.toml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook.json", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook.jsonc", EntryKind::Name, "the commands lefthook's hooks run"),
    (".lefthook.toml", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook-local.json", EntryKind::Name, "the commands lefthook's hooks run"),
    ("lefthook-local.toml", EntryKind::Name, "the commands lefthook's hooks run"),
    (".devcontainer", EntryKind::Name, "a dev container's initializeCommand runs on the host"),
    (".devcontainer.json", EntryKind::Name, "a dev container's initializeCommand runs on the host"),
    (".gemini", EntryKind::Name, "Gemini CLI's project settings (MCP servers, hooks), commands and extensions"),
    (".zed", EntryKind::Name, "Zed's project settings (language servers, context servers) and tasks"),
    ("opencode.json", EntryKind::Name, "opencode's project configuration (MCP servers)"),
    ("opencode.jsonc", EntryKind::Name, "opencode's project configuration (MCP servers)"),
    (".opencode", EntryKind::Name, "opencode's plugins (run at its start), agents and commands"),
    (".continue", EntryKind::Name, "Continue's project configuration and MCP servers"),
    (".kiro", EntryKind::Name, "Kiro's hooks and MCP servers"),
    (".roo", EntryKind::Name, "Roo Code's MCP servers and rules"),
    (".amazonq", EntryKind::Name, "Amazon Q's MCP servers and rules"),
    (".aider.conf.yml", EntryKind::Name, "aider's lint and test commands, run after its edits"),
    (".qwen", EntryKind::Name, "Qwen Code's project settings (MCP servers) and commands"),
    (".kilocode", EntryKind::Name, "Kilo Code's MCP servers and rules"),
    (".junie", EntryKind::Name, "Junie's MCP servers and guidelines"),
    ("crush.json", EntryKind::Name, "Crush's project configuration (MCP and language servers)"),
    (".crush.json", EntryKind::Name, "Crush's project configuration (MCP and language servers)"),
    ("mise.toml", EntryKind::Name, "mise's hooks, tasks and sourced environment scripts"),
    (".mise.toml", EntryKind::Name, "mise's hooks, tasks and sourced environment scripts"),
    ("mise.local.toml", EntryKind::Name, "mise's hooks, tasks and sourced environment scripts"),
    (".mise.local.toml", EntryKind::Name, "mise's hooks, tasks and sourced environment scripts"),
    (".mise", EntryKind::Name, "mise's configuration directory"),
    (".helix", EntryKind::Name, "Helix's project language servers and formatters (commands it runs)"),
    (".nvim.lua", EntryKind::Name, "neovim's project start-up ('exrc', behind its trust prompt)"),
    (".nvimrc", EntryKind::Name, "neovim's project start-up ('exrc', behind its trust prompt)"),
    (".exrc", EntryKind::Name, "vim's and neovim's project start-up ('exrc')"),
    (".vimrc", EntryKind::Name, "vim's project start-up ('exrc' sources it from the directory)"),
    (".gvimrc", EntryKind::Name, "gvim's project start-up ('exrc')"),
    (".pdbrc", EntryKind::Name, "Python's debugger runs it from the directory it starts in"),
    (".dir-locals.el", EntryKind::Name, "Emacs directory variables (eval forms, behind its prompt)"),
    (".dir-locals-2.el", EntryKind::Name, "Emacs directory variables (eval forms, behind its prompt)"),
    (".hg/hgrc", EntryKind::Name, "Mercurial's repository config: hooks and extensions at every hg command"),
    (".hg/hgrc-not-shared", EntryKind::Name, "Mercurial's repository config of a share, read as its hgrc"),
    (".hg/sharedpath", EntryKind::Name, "where Mercurial takes a share's store and config from"),
    (".hg/requires", EntryKind::Name, "whether Mercurial follows sharedpath (share-safe)"),
    (".sl/config", EntryKind::Name, "Sapling's repository config: hooks and extensions"),
    (".sl/sharedpath", EntryKind::Name, "where Sapling takes a share's store and config from"),
    (".sl/requires", EntryKind::Name, "whether Sapling follows sharedpath"),
    (".cargo/config.toml", EntryKind::Name, "cargo's project config: build.rustc-wrapper runs at cargo metadata"),
    (".cargo/config", EntryKind::Name, "cargo's project config, older name"),
    (".jj/repo/config.toml", EntryKind::Name, "Jujutsu's repository config: aliases and tools it runs"),
    ("rust-toolchain.toml", EntryKind::Name, "rustup's toolchain: its 'path' runs any cargo and rustc"),
    ("rust-toolchain", EntryKind::Name, "rustup's toolchain (the older name)"),
    (".claude/skills", EntryKind::Name, "Claude Code skills: hooks, allowed tools and commands"),
    (".github/hooks", EntryKind::Name, "GitHub Copilot's hooks (commands it runs)"),
    (".windsurf", EntryKind::Name, "Windsurf's hooks, rules and workflows"),
    (".clinerules/hooks", EntryKind::Name, "Cline's hooks (programs it runs)"),
    (".cline", EntryKind::Name, "Cline's project configuration and hooks"),
    (".factory", EntryKind::Name, "Factory's settings, hooks and MCP servers"),
    (".augment", EntryKind::Name, "Augment's settings and hooks"),
    ("~/.bashrc", EntryKind::Home, "shell start-up"),
    ("~/.bash_profile", EntryKind::Home, "shell start-up"),
    ("~/.bash_login", EntryKind::Home, "shell start-up"),
    ("~/.profile", EntryKind::Home, "shell start-up"),
    ("~/.zshrc", EntryKind::Home, "shell start-up"),
    ("~/.zprofile", EntryKind::Home, "shell start-up"),
    ("~/.zshenv", EntryKind::Home, "shell start-up"),
    ("~/.zlogin", EntryKind::Home, "shell start-up"),
    ("~/.gitconfig", EntryKind::Home, "global git configuration (hooksPath, aliases, credential helpers)"),
    ("~/.config/git", EntryKind::Home, "global git configuration"),
    ("~/.bash_aliases", EntryKind::Home, "sourced by Debian's and Ubuntu's default .bashrc"),
    ("~/.bash_logout", EntryKind::Home, "run when a login shell exits"),
    ("~/.local/bin", EntryKind::Home, "on PATH: a program there shadows the host's (git, ls)"),
    ("~/bin", EntryKind::Home, "on PATH where the default .profile finds it"),
    ("~/.cargo/bin", EntryKind::Home, "on PATH where rustup installed"),
    ("~/.cargo/env", EntryKind::Home, "sourced by the shell start-up rustup wrote"),
    ("~/.config/fish", EntryKind::Home, "fish start-up"),
    ("~/.config/autostart", EntryKind::Home, "programs the desktop session starts"),
    ("~/.config/systemd/user", EntryKind::Home, "services the user's systemd starts"),
    ("~/.config/environment.d", EntryKind::Home, "the environment of the user's services"),
    ("~/.xprofile", EntryKind::Home, "X session start-up"),
    ("~/.xsessionrc", EntryKind::Home, "X session start-up"),
    ("~/.xinitrc", EntryKind::Home, "X session start-up"),
    ("~/.tmux.conf", EntryKind::Home, "run-shell at tmux start"),
    ("~/.vimrc", EntryKind::Home, "commands at vim start"),
    ("~/.vim", EntryKind::Home, "plugins vim loads"),
    ("~/.config/nvim", EntryKind::Home, "neovim start-up and plugins"),
    ("~/.config/helix", EntryKind::Home, "Helix's configuration and language servers"),
    ("~/.emacs", EntryKind::Home, "Emacs start-up"),
    ("~/.emacs.d", EntryKind::Home, "Emacs start-up and packages"),
    ("~/.bashrc.d", EntryKind::Home, "sourced by Fedora's default .bashrc"),
    ("~/.oh-my-zsh", EntryKind::Home, "sourced by an oh-my-zsh .zshrc"),
    ("~/.config/starship.toml", EntryKind::Home, "custom prompt commands"),
    (
        "~/.local/lib",
        EntryKind::Home,
        "the user's Python site-packages: usercustomize.py and .pth files run at every python start",
    ),
    ("~/.cargo/config.toml", EntryKind::Home, "cargo's user config (build.rustc-wrapper runs at every build)"),
    ("~/.cargo/config", EntryKind::Home, "cargo's user config, older name"),
    ("~/.npmrc", EntryKind::Home, "npm's user config (script-shell, node-options)"),
    ("~/.gdbinit", EntryKind::Home, "commands at gdb start"),
    ("~/.ipython", EntryKind::Home, "IPython start-up scripts"),
    ("~/.hgrc", EntryKind::Home, "Mercurial hooks"),
    ("~/.bash_completion", EntryKind::Home, "sourced by bash-completion at every interactive bash"),
    ("~/.kube/config", EntryKind::Home, "kubectl's credential plugins ('exec' runs a command)"),
    ("~/.aws/config", EntryKind::Home, "the AWS CLI's and SDKs' credential_process (runs a command)"),
    ("~/.docker/config.json", EntryKind::Home, "docker's credential helpers (programs it runs)"),
    ("~/.psqlrc", EntryKind::Home, "psql's start-up (\\! runs shell commands)"),
    ("~/.lessfilter", EntryKind::Home, "run by lesspipe for every file less opens"),
    ("~/.mailcap", EntryKind::Home, "viewers run for files by type"),
    ("~/.claude", EntryKind::Home, "Claude Code's user settings carry hooks"),
    ("~/.claude.json", EntryKind::Home, "Claude Code's user MCP servers"),
    ("~/.codex", EntryKind::Home, "Codex's user configuration and MCP servers"),
    ("~/.cursor", EntryKind::Home, "Cursor's user configuration and MCP servers"),
    ("~/.gemini", EntryKind::Home, "Gemini CLI's user settings and MCP servers"),
    ("~/.config/opencode", EntryKind::Home, "opencode's user configuration, MCP servers and plugins"),
    ("~/.continue", EntryKind::Home, "Continue's user configuration and MCP servers"),
    ("~/.kiro", EntryKind::Home, "Kiro's user settings and MCP servers"),
    ("~/.aws/amazonq", EntryKind::Home, "Amazon Q's user MCP servers"),
    ("~/.aider.conf.yml", EntryKind::Home, "aider's user configuration (lint and test commands)"),
    ("~/.config/zed", EntryKind::Home, "Zed's user settings (language and context servers) and tasks"),
    ("~/.config/mise", EntryKind::Home, "mise's global configuration (hooks, tasks, environment scripts)"),
    ("~/.vscode", EntryKind::Home, "VS Code's extensions"),
    ("~/.config/Code/User", EntryKind::Home, "VS Code's user settings and tasks"),
    ("~/.config/direnv", EntryKind::Home, "direnv's own start-up (direnvrc)"),
    ("~/.gnupg/gpg-agent.conf", EntryKind::Home, "gpg-agent's programs (pinentry)"),
    ("~/.ssh/config", EntryKind::Home, "ProxyCommand and LocalCommand run commands"),
    ("~/.ssh/rc", EntryKind::Home, "run by sshd at login"),
    ("~/.ssh/authorized_keys", EntryKind::Home, "who may log in"),
    ("~/.ssh/environment", EntryKind::Home, "the environment sshd sets at login, where permitted"),
    (
        HIDDEN_IN_HOME,
        EntryKind::Home,
        "every hidden entry of the real HOME where a writable area covers it: tools' configuration, \
         trust stores and PATH directories, more than any list names (~/.config/tmux, ~/.direnvrc, \
         ~/.local/share/direnv/allow, ~/.pyenv/shims, ~/.ssh/authorized_keys2)",
    ),
    ("~/go/bin", EntryKind::Home, "on PATH where Go installs programs"),
    ("~/go/pkg", EntryKind::Home, "Go's module cache: toolchains and modules run by the host's next go command"),
    ("~/node_modules", EntryKind::Home, "Node's last place to look for a package, from every project beneath the HOME"),
    ("~/Library", EntryKind::Home, "macOS: launch agents, applications' settings (VS Code's, Claude's MCP servers)"),
    (".perldb", EntryKind::Name, "perl -d runs it from the directory it starts in"),
    (".Renviron", EntryKind::Name, "R reads it from the directory it starts in (R_PROFILE_USER names a script)"),
    (".lldbinit", EntryKind::Name, "lldb's start-up in the directory it starts in"),
    (".gdbinit", EntryKind::Name, "gdb's start-up in the directory it starts in"),
    (".lazy.lua", EntryKind::Name, "lazy.nvim's project plugin spec"),
    (".lefthook", EntryKind::Name, "lefthook's scripts (run by its hooks)"),
    (".npmrc", EntryKind::Name, "npm's project config: script-shell and node-options run at every npm script and npx"),
    (".yarnrc", EntryKind::Name, "yarn 1's project config"),
    (".yarnrc.yml", EntryKind::Name, "yarn's project config: yarnPath runs at every yarn command"),
    (".pnpmfile.cjs", EntryKind::Name, "pnpm's hooks, run at every install"),
    ("bunfig.toml", EntryKind::Name, "bun's config: preload scripts run at every bun run"),
    ("mise/config.local.toml", EntryKind::Name, "mise's local project configuration"),
    (".env", EntryKind::Name, "the environment direnv's dotenv, pipenv, aider, compose and editors load"),
    (".tool-versions", EntryKind::Name, "asdf's and mise's versions ('path:' runs programs from any directory)"),
    (".config/mise", EntryKind::Name, "mise's project configuration (hooks run on cd, tasks)"),
    ("mise/config.toml", EntryKind::Name, "mise's project configuration in its other place"),
    (".Rprofile", EntryKind::Name, "R runs it from the directory it starts in"),
    (".irbrc", EntryKind::Name, "irb runs it from the directory it starts in"),
    (".pryrc", EntryKind::Name, "pry runs it from the directory it starts in"),
];

/// The `~/` entry that stands for every hidden entry of the real HOME (see
/// [`CreationGuard::hidden_in`]).
pub const HIDDEN_IN_HOME: &str = "~/.*";

/// The protected-paths part of a profile: the default list (or none), entries added and
/// default entries dropped. `Default` is `protect-v1` with nothing added or dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protection {
    /// Whether the default list `protect-v1` applies.
    pub defaults: bool,
    /// Relative patterns added to the list (protected at every depth, like the default names).
    pub extra: Vec<String>,
    /// Default entries dropped, spelled as in [`V1`].
    pub except: Vec<String>,
}

impl Default for Protection {
    fn default() -> Self {
        Protection { defaults: true, extra: Vec::new(), except: Vec::new() }
    }
}

impl Protection {
    /// Checks and canonicalises (sorted, deduplicated); errors name the field.
    pub(crate) fn canonical(&self) -> Result<Protection, Error> {
        let mut extra = BTreeSet::new();
        for (i, e) in self.extra.iter().enumerate() {
            check_pattern(&format!("protected_paths.extra[{i}]"), e)?;
            extra.insert(e.trim_end_matches('/').to_owned());
        }
        let mut except = BTreeSet::new();
        for (i, e) in self.except.iter().enumerate() {
            if !V1.iter().any(|(name, _, _)| name == e) {
                return Err(Error::profile(format!(
                    "protected_paths.except[{i}]: {e:?} is not an entry of {PROTECT_V1} (entries: {})",
                    V1.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
                )));
            }
            if !self.defaults {
                return Err(Error::profile(format!(
                    "protected_paths.except[{i}]: the default list is off, so there is nothing to drop"
                )));
            }
            except.insert(e.clone());
        }
        Ok(Protection {
            defaults: self.defaults,
            extra: extra.into_iter().collect(),
            except: except.into_iter().collect(),
        })
    }

    /// The effective entries (default entries kept, then the added ones), sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut out: BTreeSet<String> = BTreeSet::new();
        if self.defaults {
            out.extend(
                V1.iter().filter(|(n, _, _)| !self.except.iter().any(|e| e == n)).map(|(n, _, _)| n.to_string()),
            );
        }
        out.extend(self.extra.iter().cloned());
        out.into_iter().collect()
    }

    /// Whether the default entry `name` is in force.
    pub fn keeps(&self, name: &str) -> bool {
        self.defaults && !self.except.iter().any(|e| e == name)
    }

    /// The relative patterns protected at every depth (default names kept, plus `extra`).
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = V1
            .iter()
            .filter(|(n, k, _)| *k == EntryKind::Name && self.keeps(n))
            .map(|(n, _, _)| n.to_string())
            .collect();
        out.extend(self.extra.iter().cloned());
        out.sort();
        out.dedup();
        out
    }

    /// The `~/…` entries in force, relative to the HOME.
    pub fn home_entries(&self) -> Vec<&'static str> {
        V1.iter()
            .filter(|(n, k, _)| *k == EntryKind::Home && self.keeps(n))
            .filter_map(|(n, _, _)| n.strip_prefix("~/"))
            .collect()
    }

    /// The git entries in force: `hooks` and/or `config`.
    pub fn git_entries(&self) -> Vec<&'static str> {
        V1.iter()
            .filter(|(n, k, _)| *k == EntryKind::Git && self.keeps(n))
            .filter_map(|(n, _, _)| n.strip_prefix(".git/"))
            .collect()
    }

    /// The version label: `protect-v1`, or `none` when the default list is off.
    pub fn version(&self) -> &'static str {
        if self.defaults { PROTECT_V1 } else { "none" }
    }

    /// The union of two protections (what `restrict` keeps: never less than either).
    pub(crate) fn union(a: &Protection, b: &Protection) -> Protection {
        let defaults = a.defaults || b.defaults;
        let kept = |p: &Protection, n: &str| p.keeps(n);
        let except = if defaults {
            V1.iter().map(|(n, _, _)| n.to_string()).filter(|n| !kept(a, n) && !kept(b, n)).collect()
        } else {
            Vec::new()
        };
        let mut extra: Vec<String> = a.extra.iter().chain(&b.extra).cloned().collect();
        extra.sort();
        extra.dedup();
        Protection { defaults, extra, except }
    }

    /// Stable bytes for the profile fingerprint.
    pub(crate) fn fingerprint_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(u8::from(self.defaults));
        for list in [&self.extra, &self.except] {
            out.extend((list.len() as u64).to_be_bytes());
            for e in list {
                out.extend((e.len() as u64).to_be_bytes());
                out.extend(e.as_bytes());
            }
        }
        out
    }
}

/// Checks one relative pattern: clean components, no `.`/`..`, no NUL, not absolute.
fn check_pattern(field: &str, text: &str) -> Result<(), Error> {
    let t = text.trim_end_matches('/');
    if t.is_empty() {
        return Err(Error::profile(format!("{field}: empty")));
    }
    if t.contains('\0') {
        return Err(Error::profile(format!("{field}: contains NUL")));
    }
    if t.starts_with('/') || t.starts_with('~') {
        return Err(Error::profile(format!(
            "{field}: {text:?} must be relative (it is protected at every depth); list an absolute path as an \
             additional root instead"
        )));
    }
    if t.split('/').any(|c| c.is_empty() || c == "." || c == ".." || c.contains('*')) {
        return Err(Error::profile(format!("{field}: {text:?} must be plain names joined by '/'")));
    }
    Ok(())
}

/// How a path is about to come into being.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOp {
    /// A new name made empty: `open(O_CREAT)`, `mkdir`, `mknod`.
    Create,
    /// A name bound to something that may already have content or point elsewhere: the new
    /// name of `rename`, `link` or `symlink`.
    Place,
}

/// Whether a symlink at `link` with the text `target` is git's test of symlink support,
/// directly in a `.git` (see [`is_git_symlink_test`]).
fn is_symlink_test(link: &Path, target: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let in_dot_git = link.parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(".git"));
    in_dot_git && is_git_symlink_test(link.file_name().map(std::ffi::OsStr::as_bytes).unwrap_or_default(), target)
}

/// Whether a symlink named `name` with the text `target` is git's test of symlink support, as
/// `init` and `clone` make it in a git directory and remove it at once: `t` and six letters or
/// digits (git's `mkstemp`), to `testing`.
pub fn is_git_symlink_test(name: &[u8], target: &[u8]) -> bool {
    name.len() == 7 && name[0] == b't' && name[1..].iter().all(u8::is_ascii_alphanumeric) && target == b"testing"
}

/// The files of a git directory git takes commands or locations from (besides `hooks/`).
pub const GIT_FILES: [&str; 6] =
    ["config", "config.lock", "config.worktree", "config.worktree.lock", "commondir", "gitdir"];

/// What of a git directory a path is (see [`CreationGuard::git_sensitive`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GitPart {
    /// The `.git` itself (a directory, or a gitfile naming one).
    Itself,
    /// A file git takes commands or locations from (`config`, `hooks/…`, `commondir`, …).
    File,
    /// A linked worktree's directory (`worktrees/<name>`), or `worktrees` itself: new ones may
    /// be made (`git worktree add`); one the run did not make is neither replaced, moved nor
    /// removed.
    Entry,
}

/// What the Linux init's supervisor refuses to create (the `sandbox.protect` annotation), and
/// what Seatbelt's deny rules cover.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CreationGuard {
    /// The list's version (`protect-v1`, or `none`).
    pub version: String,
    /// Relative patterns refused at every depth.
    pub names: Vec<String>,
    /// Absolute paths refused, with everything beneath them: protected entries that did not
    /// exist at spawn (a missing hooks directory of an existing repository, a missing `~/.bashrc`,
    /// a deny or read-only root that does not exist), and the ones bound read-only.
    pub paths: Vec<PathBuf>,
    /// Directories private to the sandbox where the names are not refused: the private `/tmp`
    /// and `/dev/shm`, the executor's isolated HOME and its TMPDIR. Nothing the host runs later
    /// lives there (exact `paths` are refused everywhere).
    #[serde(default)]
    pub exempt: Vec<PathBuf>,
    /// Areas and grant targets that lie inside an exempt directory (a workspace under `/tmp`):
    /// the host's directories bound there, where the names are refused as everywhere else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_exempt: Vec<PathBuf>,
    /// Directories beneath which no `.git` may come into being, at any depth (exempt nowhere):
    /// the work trees of the repositories found at spawn inside a writable area, and the
    /// writable areas that lie inside a repository. The host's git, run in such a work tree,
    /// enters a nested repository that the index names as a submodule (a gitlink, which the
    /// workload can stage: the index is writable) and runs what that repository's config says
    /// (`core.fsmonitor` at the next `git status`, an attack on the first version). A `.git`
    /// that exists is unaffected: its contents are written as before. Nor may a `HEAD` come
    /// into being there outside a `.git` directory: git takes a directory with `HEAD`,
    /// `objects/` and `refs/` for a bare repository before it looks further up, so one made in
    /// `src/` ran its `core.fsmonitor` at the host's `git status` in `src/`, and one made beside
    /// a nested repository's broken `.git` ran it there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_new_repositories: Vec<PathBuf>,
    /// Directories in which no new entry may be made (what they hold is written as before):
    /// the `modules` directories of the git directories found, and the directories between
    /// them and a module's git directory. A module's git directory planted there (`.git/modules/
    /// <name>` for a submodule `.gitmodules` lists but nobody initialised yet) is taken as it is
    /// by the host's `git submodule update --init`, which then runs its hooks and config.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_new_entries: Vec<PathBuf>,
    /// Directories whose hidden entries (a first component beneath them starting with `.`)
    /// are protected as a whole, existing or not: the caller's real HOME where a writable area
    /// covers it ([`HIDDEN_IN_HOME`]). Its hidden files and directories are the host's
    /// configuration, more than any list names: red teams planted `~/.config/tmux/tmux.conf`,
    /// `~/.direnvrc`, an approval in `~/.local/share/direnv/allow` and a `git` in
    /// `~/.pyenv/shims`, each run by the host later (6 December).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden_in: Vec<PathBuf>,
    /// Denied roots inside a bound area (a directory masked, a file covered), with their
    /// aliases: nothing at or beneath them is opened, truncated, linked, renamed or made by the
    /// guard, and no directory holding one is renamed. The mask of the spawn covers only what
    /// was there at spawn: a root the host replaces during the run (an editor's save of a
    /// denied `.env`, a denied directory removed and made again) is no mount point in the run's
    /// view, and the workload read the new secret (a red team, 5 December). Also the
    /// `rr-cache` of each git directory the scan found ([`ProtectScan::unreadable`]), which no
    /// mount covers. With any, every open goes to the guard, reads too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<PathBuf>,
    /// Areas and grant targets bound inside a denied root: beneath them the root's denial
    /// ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reopened: Vec<PathBuf>,
}

impl CreationGuard {
    /// Nothing is refused.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.paths.is_empty()
            && self.no_new_repositories.is_empty()
            && self.no_new_entries.is_empty()
            && self.hidden_in.is_empty()
            && self.denied.is_empty()
    }

    /// Whether `path` lies in a directory private to the sandbox ([`CreationGuard::exempt`])
    /// and not in an area or grant target bound there ([`CreationGuard::not_exempt`]).
    pub fn is_exempt(&self, path: &Path) -> bool {
        self.exempt.iter().any(|e| path.starts_with(e)) && !self.not_exempt.iter().any(|a| path.starts_with(a))
    }

    /// Where `path` (absolute, resolved as the kernel would) is a file git takes commands or
    /// locations from (`config`, `config.worktree`, their locks, `commondir`, `gitdir`, anything
    /// beneath `hooks`) in a git directory, or is a `.git` itself (a gitfile is a location): the
    /// path of that `.git`, and whether `path` is it. Outside the exempt directories; `refs`,
    /// `logs` and `objects` hold none. The Linux guard refuses writing or making such a file
    /// unless this run made that `.git` itself: the scan at spawn protects the git directories
    /// that exist then, and one the host makes during the run (a clone or `git init` into the
    /// workspace, a worktree, a submodule's gitfile) was written by a waiting workload, and
    /// the host's next `git status` ran its `core.fsmonitor` (a red team, 5 December).
    pub fn git_sensitive(&self, path: &Path) -> Option<(PathBuf, GitPart)> {
        if self.is_exempt(path) {
            return None;
        }
        let comps: Vec<&std::ffi::OsStr> = path.iter().collect();
        let at = comps.iter().rposition(|c| *c == ".git")?;
        let git: PathBuf = comps[..=at].iter().collect();
        let rest = &comps[at + 1..];
        let (Some(first), Some(last)) = (rest.first(), rest.last()) else { return Some((git, GitPart::Itself)) };
        // What lies in `refs`, `logs` and `objects` of the directory itself (a worktree or a
        // module named `logs` is not exempt: a red team, 5 December).
        if *first == "refs" || *first == "logs" || *first == "objects" {
            return None;
        }
        // `worktrees` itself too: a host's worktree directory inside it would move with it, and
        // the name be free for one the run made (a red team, 5 December).
        if *first == "worktrees" && rest.len() <= 2 {
            return Some((git, GitPart::Entry));
        }
        // Legacy remotes (`remotes/<name>`, `branches/<name>`) name where a push goes; a
        // `modules` directory made in a `.git` of the host's would hold a module's config.
        let legacy = *first == "remotes" || *first == "branches" || (*first == "modules" && rest.len() == 1);
        let sensitive = legacy || rest.iter().any(|c| *c == "hooks") || GIT_FILES.iter().any(|f| *last == *f);
        sensitive.then_some((git, GitPart::File))
    }

    /// The directories that `path` (absolute, resolved as the kernel would; outside any `.git`
    /// and the exempt directories) would be a file git takes commands or locations from in, were
    /// they git directories: the parent of a `config`, `commondir`, … ([`GIT_FILES`]), and the
    /// directory holding a `hooks` on the way. The Linux guard refuses writing such a file in a
    /// bare repository or separate git directory the run did not make
    /// ([`crate::protect::is_git_directory`]): the host's `git clone --bare` or `git init
    /// --separate-git-dir` during a run, whose hooks run at the host's next push to it.
    pub fn bare_candidates(&self, path: &Path) -> Vec<PathBuf> {
        if self.is_exempt(path) || path.iter().any(|c| c == ".git") {
            return Vec::new();
        }
        let mut out: Vec<PathBuf> = path
            .ancestors()
            .filter(|a| a.file_name() == Some(std::ffi::OsStr::new("hooks")))
            .filter_map(|a| a.parent().map(Path::to_path_buf))
            .collect();
        if path.file_name().is_some_and(|n| GIT_FILES.iter().any(|f| n == *f)) {
            out.extend(path.parent().map(Path::to_path_buf));
        }
        out
    }

    /// Whether a symlink at `link` (absolute, resolved as the kernel would) with the text
    /// `target` is refused: beneath a repository's work tree ([`CreationGuard::no_new_repositories`])
    /// a link may not lead into a `.git` directory by naming one. A directory there holding
    /// `HEAD`, `objects/` and `refs/` (which a workload may make inside `.git/`, where git
    /// itself makes them) is a bare repository to git; a link `src -> .git/x` made it the
    /// repository of the user's next `git status` in `src`, which ran its `core.fsmonitor`
    /// (a red team, 5 December). A directory cannot be moved out of `.git` (a mount point), so
    /// a way into it from outside names it.
    ///
    /// git's own test of symlink support is let through: at `init` and `clone` it makes
    /// `$GIT_DIR/tXXXXXX -> testing` and removes it; refused, every repository made inside got
    /// `core.symlinks = false` and had its symlinks checked out as small files (a functional
    /// check, 5 December). Such a link names a file in the same `.git` that git never writes.
    pub fn refuses_link(&self, link: &Path, target: &[u8]) -> bool {
        let names_git = target.split(|&b| b == b'/').any(|c| c == b".git");
        (names_git && self.no_new_repositories.iter().any(|w| link.starts_with(w)))
            || (self.in_git_dir(link) && !is_symlink_test(link, target))
    }

    /// Whether `path` lies inside a `.git` directory (outside the exempt directories). No
    /// symlink may come to lie there: the host's git writes through one in place (a reflog,
    /// `COMMIT_EDITMSG`), onto any file the user may write, and a `worktrees` link out of
    /// `.git` took the host's next `git worktree add` elsewhere (a red team, 5 December).
    pub fn in_git_dir(&self, path: &Path) -> bool {
        !self.is_exempt(path) && path.parent().is_some_and(|p| p.iter().any(|c| c == ".git"))
    }

    /// Whether `path` (absolute, resolved as the kernel would) is, or lies beneath, a denied
    /// root ([`CreationGuard::denied`]) and not beneath an area bound inside it
    /// ([`CreationGuard::reopened`]).
    pub fn denies(&self, path: &Path) -> bool {
        let deepest =
            |list: &[PathBuf]| list.iter().filter(|d| path.starts_with(d)).map(|d| d.components().count()).max();
        deepest(&self.denied).is_some_and(|d| deepest(&self.reopened).is_none_or(|r| r <= d))
    }

    /// Whether `path` is, lies beneath, or holds a denied root: moving it would move a denied
    /// root away from its name.
    pub fn holds_denied(&self, path: &Path) -> bool {
        self.denies(path) || self.denied.iter().any(|d| d.starts_with(path))
    }

    /// Whether `path` is a `.git` beneath one of `no_new_repositories`, or a `HEAD` there that
    /// lies in no `.git` directory.
    fn makes_a_repository(&self, path: &Path) -> bool {
        let name = path.file_name();
        if name != Some(std::ffi::OsStr::new(".git")) && name != Some(std::ffi::OsStr::new("HEAD")) {
            return false;
        }
        self.no_new_repositories.iter().any(|w| match path.strip_prefix(w) {
            Ok(rest) => name == Some(std::ffi::OsStr::new(".git")) || !rest.iter().any(|c| c == ".git"),
            Err(_) => false,
        })
    }

    /// Whether bringing `path` into being by `op` is refused. `path` is absolute and resolved
    /// as the kernel would: the real path of the parent directory joined with the new name.
    ///
    /// Refused: a path that is, or lies beneath, a protected entry (a name pattern at any
    /// depth, or an exact path), and a `.git` beneath one of `no_new_repositories`. For
    /// [`CreateOp::Place`] also a path that would complete a pattern's leading components (a
    /// directory renamed to `.claude` brings its `commands` with it) or that is a proper
    /// ancestor of an exact path.
    pub fn refuses(&self, path: &Path, op: CreateOp) -> bool {
        if self.makes_a_repository(path) || path.parent().is_some_and(|p| self.no_new_entries.iter().any(|d| d == p)) {
            return true;
        }
        self.listed(path, op)
    }

    /// Whether the content of `path` (absolute, resolved as the kernel would) is protected: it
    /// is, or lies beneath, a protected entry (a name pattern at any depth, or an exact path).
    /// The Linux guard refuses opening such a file for writing, truncating it, and linking or
    /// renaming it elsewhere, whatever made it appear: a file the host replaces or creates
    /// while a run goes on is no mount point in the run's view (the kernel detaches a mount
    /// whose file another mount namespace renames over or removes), so the read-only bind of
    /// the spawn no longer covers it (a red team, 5 December).
    pub fn protects(&self, path: &Path) -> bool {
        self.listed(path, CreateOp::Create)
    }

    /// Whether `path` matches a name pattern (outside the exempt directories) or an exact path;
    /// for [`CreateOp::Place`] also completes a pattern's leading components or is a proper
    /// ancestor of an exact path.
    fn listed(&self, path: &Path, op: CreateOp) -> bool {
        // git writes a file through `<name>.lock`, created, written, then renamed over it: a
        // descriptor the workload opened on the lock file wrote the new `.git/config` once the
        // host's `git config` renamed it into place (a red team, 5 December). The lock file of
        // a protected entry is protected with it.
        if let Some(name) = path.file_name() {
            use std::os::unix::ffi::OsStrExt as _;
            if let Some(stem) = name.as_bytes().strip_suffix(b".lock").filter(|s| !s.is_empty()) {
                if self.listed(&path.with_file_name(std::ffi::OsStr::from_bytes(stem)), CreateOp::Create) {
                    return true;
                }
            }
        }
        let comps: Vec<&std::ffi::OsStr> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let exempt = self.is_exempt(path);
        for pattern in self.names.iter().filter(|_| !exempt) {
            let pat: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
            if pat.is_empty() {
                continue;
            }
            // Some ancestor-or-self ends with the whole pattern.
            for end in pat.len()..=comps.len() {
                if comps[end - pat.len()..end].iter().zip(&pat).all(|(c, p)| *c == std::ffi::OsStr::new(p)) {
                    return true;
                }
            }
            // The path itself ends with a proper leading part of the pattern.
            if op == CreateOp::Place {
                for k in 1..pat.len() {
                    if comps.len() >= k
                        && comps[comps.len() - k..].iter().zip(&pat[..k]).all(|(c, p)| *c == std::ffi::OsStr::new(p))
                    {
                        return true;
                    }
                }
            }
        }
        for exact in &self.paths {
            if path.starts_with(exact) || (op == CreateOp::Place && exact.starts_with(path)) {
                return true;
            }
        }
        !self.is_exempt(path)
            && self.hidden_in.iter().any(|home| {
                path.strip_prefix(home).ok().and_then(|rest| rest.components().next()).is_some_and(|first| {
                    use std::os::unix::ffi::OsStrExt as _;
                    first.as_os_str().as_bytes().starts_with(b".")
                })
            })
    }
}

/// What the scan at spawn found inside the writable areas (host facts, like
/// [`crate::HostView`]; made by [`scan`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectScan {
    /// Existing protected entries: `(path, is_file)`, canonical, inside a writable area.
    pub existing: Vec<(PathBuf, bool)>,
    /// Protected entries that do not exist (exact paths, refused creation).
    pub missing: Vec<PathBuf>,
    /// Entries that could not be protected, and why.
    pub narrowed: Vec<String>,
    /// What each additional root is at this spawn (a directory, a file, or missing).
    pub roots: Vec<(PathBuf, RootKind)>,
    /// The existing directories between each entry (bound or missing) and its writable area,
    /// pinned so that no entry moves away with an ancestor.
    pub pins: Vec<PathBuf>,
    /// An empty file no one may read (mode 000), bound read-only over a file root whose read
    /// is denied; without one such a file is bound from `/dev/null` (reads see nothing,
    /// narrowed).
    pub placeholder: Option<PathBuf>,
    /// Why the spawn must not run at all (the scan could not finish): compiling fails with
    /// `InvalidProfile` and this text.
    pub refused: Option<String>,
    /// The work trees of the repositories found (directories holding `.git`) and the writable
    /// areas inside a repository: no new `.git` may come into being beneath them (see
    /// [`CreationGuard::no_new_repositories`]). Sorted, none beneath another.
    pub repositories: Vec<PathBuf>,
    /// Directories in which no new entry may be made (see [`CreationGuard::no_new_entries`]).
    pub no_new_entries: Vec<PathBuf>,
    /// Directories whose hidden entries are protected whole (see [`CreationGuard::hidden_in`]).
    pub hidden_in: Vec<PathBuf>,
    /// `(path, st_dev, st_ino)` of every existing entry, pin and existing additional root, and
    /// of every pinned ancestor of the profile's roots that exists, read at the end of the scan
    /// without following a symlink in any component ([`object_identity`]). The container init
    /// checks that each self-bind of these paths is a mount of that object (the runtime
    /// resolves bind sources on the host by path, following symlinks: a concurrent swap of an
    /// entry or pin with a symlink between scan and mount bound the symlink's target, a host
    /// directory outside every area, read-write). The Linux backend adds its placeholder.
    pub identities: Vec<(PathBuf, u64, u64)>,
    /// The `rr-cache` directories of the git directories found (canonical): denied to the run,
    /// reads too, through [`CreationGuard::denied`]. git's rerere copies a conflicted file into
    /// it at the user's `git commit`, with `fopen`, which follows a symlink the workload put in
    /// the work tree: a later run read a host file that way (a red team, 5 December).
    pub unreadable: Vec<PathBuf>,
}

/// `(st_dev, st_ino)` of what `path` names, looked up without following a symlink in any
/// component (Linux: `openat2(RESOLVE_NO_SYMLINKS)`): an error (`ELOOP`) when a component is
/// one, so that what is recorded is reachable by that name through directories only.
pub fn object_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let fd = openat2(nix::libc::AT_FDCWD, path, how).map_err(std::io::Error::from)?;
        let st = nix::sys::stat::fstat(fd);
        let _ = nix::unistd::close(fd);
        let st = st.map_err(std::io::Error::from)?;
        #[allow(clippy::useless_conversion)]
        Ok((u64::from(st.st_dev), u64::from(st.st_ino)))
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path)?;
        Ok((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::symlink_metadata(path).map(|_| (0, 0))
    }
}

/// The protections of one compiled spawn (`Bundle::protection`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Protected {
    /// `protect-v1`, or `none`.
    pub version: String,
    /// The entries in force, as the profile lists them.
    pub entries: Vec<String>,
    /// Existing entries bound read-only onto themselves.
    pub bound: Vec<PathBuf>,
    /// What creation is refused (the `sandbox.protect` annotation).
    pub guard: CreationGuard,
    /// Entries that could not be protected, and why.
    pub narrowed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> CreationGuard {
        CreationGuard {
            version: PROTECT_V1.into(),
            names: vec![".envrc".into(), ".claude/commands".into()],
            paths: vec![PathBuf::from("/ws/.git/hooks"), PathBuf::from("/ws/secret/key")],
            exempt: vec![PathBuf::from("/tmp"), PathBuf::from("/ws/secret")],
            not_exempt: vec![PathBuf::from("/tmp/ws")],
            no_new_repositories: vec![PathBuf::from("/ws/repo")],
            no_new_entries: vec![PathBuf::from("/ws/repo/.git/modules")],
            hidden_in: vec![PathBuf::from("/home/u")],
            denied: Vec::new(),
            reopened: Vec::new(),
        }
    }

    #[test]
    fn every_hidden_entry_of_a_home_is_refused_and_nothing_else_of_it() {
        let g = guard();
        for p in ["/home/u/.direnvrc", "/home/u/.config/tmux/tmux.conf", "/home/u/.x.lock"] {
            assert!(g.refuses(Path::new(p), CreateOp::Create), "{p}");
            assert!(g.protects(Path::new(p)), "{p}");
        }
        for p in ["/home/u/notes", "/home/u/proj/.x", "/home/v/.x", "/home/u"] {
            assert!(!g.refuses(Path::new(p), CreateOp::Create), "{p}");
        }
    }

    /// An entry's content is protected (the guard refuses writing it whatever made it appear),
    /// with git's lock file beside it (`<entry>.lock`, renamed over the entry by the host's git);
    /// a denied root holds what lies beneath it except beneath an area reopened inside it.
    #[test]
    fn contents_of_entries_their_lock_files_and_denied_roots() {
        let mut g = guard();
        for p in ["/ws/.envrc", "/ws/a/.envrc", "/ws/.envrc.lock", "/ws/.git/hooks/pre-commit", "/ws/.git/hooks.lock"] {
            assert!(g.protects(Path::new(p)), "{p}");
            assert!(g.refuses(Path::new(p), CreateOp::Create), "{p}");
        }
        for p in ["/ws/.envrc.locked", "/ws/.lock", "/ws/x.lock", "/ws/.git/config.lock", "/tmp/.envrc.lock"] {
            assert!(!g.protects(Path::new(p)), "{p}");
        }
        g.denied = vec![PathBuf::from("/ws/dd"), PathBuf::from("/ws/dd/w/.env")];
        g.reopened = vec![PathBuf::from("/ws/dd/w")];
        for p in ["/ws/dd", "/ws/dd/x", "/ws/dd/w/.env", "/ws/dd/w/.env/x"] {
            assert!(g.denies(Path::new(p)), "{p}");
        }
        for p in ["/ws/dd/w", "/ws/dd/w/file", "/ws/d", "/ws/ddx", "/ws"] {
            assert!(!g.denies(Path::new(p)), "{p}");
        }
        // Moving a directory that holds a denied root moves the root.
        assert!(g.holds_denied(Path::new("/ws")) && g.holds_denied(Path::new("/ws/dd/x")));
        assert!(!g.holds_denied(Path::new("/ws/dd/w/file")) && !g.holds_denied(Path::new("/ws/other")));
    }

    /// The files git takes commands or locations from, in any git directory.
    #[test]
    fn git_sensitive_files_name_their_git_directory() {
        let g = guard();
        let some = |p: &str, git: &str, part: GitPart| {
            assert_eq!(g.git_sensitive(Path::new(p)), Some((PathBuf::from(git), part)), "{p}");
        };
        some("/ws/p/.git/config", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/config.lock", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/hooks/pre-commit", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/worktrees/wt/commondir", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/worktrees/wt", "/ws/p/.git", GitPart::Entry);
        some("/ws/p/.git/worktrees", "/ws/p/.git", GitPart::Entry);
        some("/ws/p/.git/modules", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/remotes/origin", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/worktrees/logs/commondir", "/ws/p/.git", GitPart::File);
        some("/ws/p/.git/modules/a/b/config", "/ws/p/.git", GitPart::File);
        some("/ws/p/sub/.git", "/ws/p/sub/.git", GitPart::Itself);
        for p in [
            "/ws/p/.git/refs/heads/config",
            "/ws/p/.git/logs/hooks",
            "/ws/p/.git/index",
            "/ws/p/.git/HEAD",
            "/tmp/r/.git/config",
            "/ws/p/config",
        ] {
            assert_eq!(g.git_sensitive(Path::new(p)), None, "{p}");
        }
        // A workspace inside an exempt directory is not exempt.
        some("/tmp/ws/.git/config", "/tmp/ws/.git", GitPart::File);
        // Outside a `.git`: the directories that would hold them, were they git directories.
        let dirs = |p: &str| g.bare_candidates(Path::new(p));
        assert_eq!(dirs("/ws/r.git/config"), [PathBuf::from("/ws/r.git")]);
        assert_eq!(dirs("/ws/r.git/hooks/pre-receive"), [PathBuf::from("/ws/r.git")]);
        assert_eq!(dirs("/ws/hooks/hooks/x"), [PathBuf::from("/ws/hooks"), PathBuf::from("/ws")]);
        for p in ["/ws/r.git/HEAD", "/ws/p/.git/refs/config", "/tmp/r.git/config", "/ws/src/main.rs"] {
            assert!(dirs(p).is_empty(), "{p}");
        }
    }

    /// Beneath a work tree, a symlink may not name a `.git` directory in its target.
    #[test]
    fn no_link_into_a_git_directory_beneath_a_work_tree() {
        let g = guard();
        for t in [".git/x", "../.git", "/ws/repo/.git/refs/x", "a/../.git/x/"] {
            assert!(g.refuses_link(Path::new("/ws/repo/src"), t.as_bytes()), "{t}");
        }
        for t in [".gitignore", "x.git/y", "src/.github", "../other"] {
            assert!(!g.refuses_link(Path::new("/ws/repo/src"), t.as_bytes()), "{t}");
        }
        assert!(!g.refuses_link(Path::new("/ws/other/src"), b".git/x"));
        // No symlink inside a `.git`, whatever it names (but in the exempt directories).
        for l in ["/ws/other/.git/logs/HEAD", "/ws/other/.git/worktrees", "/ws/x/.git/COMMIT_EDITMSG"] {
            assert!(g.refuses_link(Path::new(l), b"/home/u/.bashrc"), "{l}");
        }
        assert!(!g.refuses_link(Path::new("/ws/other/.git"), b"../gitdir"));
        assert!(!g.refuses_link(Path::new("/tmp/r/.git/logs/HEAD"), b"x"));
        // git's test of symlink support, and nothing like it.
        assert!(!g.refuses_link(Path::new("/ws/x/.git/tAb12Z9"), b"testing"));
        for (l, t) in [
            ("/ws/x/.git/tAb12Z9", "/home/u/.bashrc"),
            ("/ws/x/.git/tAb12Z9", "testing/x"),
            ("/ws/x/.git/logs/tAb12Z9", "testing"),
            ("/ws/x/.git/tAb12Z", "testing"),
            ("/ws/x/.git/tAb12Z9x", "testing"),
            ("/ws/x/.git/xAb12Z9", "testing"),
            ("/ws/x/.git/tAb.2Z9", "testing"),
        ] {
            assert!(g.refuses_link(Path::new(l), t.as_bytes()), "{l} -> {t}");
        }
    }

    /// Beneath a repository's work tree no `.git` (nor a `HEAD` outside a `.git`) comes into
    /// being, at any depth and by any operation; what lies in an existing `.git`, and `.git`
    /// elsewhere, are not refused.
    #[test]
    fn no_new_git_beneath_a_work_tree() {
        let g = guard();
        for p in ["/ws/repo/.git", "/ws/repo/vendor/lib/.git", "/ws/repo/secret/.git"] {
            assert!(g.refuses(Path::new(p), CreateOp::Create), "{p}");
            assert!(g.refuses(Path::new(p), CreateOp::Place), "{p}");
        }
        for p in ["/ws/repo/.git/config", "/ws/repo/.git/objects/ab", "/ws/repo/.gitx", "/ws/other/.git", "/tmp/.git"] {
            assert!(!g.refuses(Path::new(p), CreateOp::Create), "{p}");
            assert!(!g.refuses(Path::new(p), CreateOp::Place), "{p}");
        }
        // No bare layout: `HEAD` beneath the work tree, but inside a `.git` as git writes it.
        for p in ["/ws/repo/HEAD", "/ws/repo/src/HEAD", "/ws/repo/sub/HEAD", "/ws/repo/.github/HEAD"] {
            assert!(g.refuses(Path::new(p), CreateOp::Place), "{p}");
        }
        for p in ["/ws/repo/.git/HEAD", "/ws/repo/sub/.git/HEAD", "/ws/repo/.git/worktrees/w/HEAD", "/ws/other/HEAD"] {
            assert!(!g.refuses(Path::new(p), CreateOp::Place), "{p}");
        }
        // No new module git directory; the existing ones are written as before.
        assert!(g.refuses(Path::new("/ws/repo/.git/modules/planted"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/ws/repo/.git/modules/lib/index"), CreateOp::Create));
    }

    #[test]
    fn names_are_refused_at_every_depth_and_beneath() {
        let g = guard();
        for p in [
            "/ws/.envrc",
            "/ws/a/b/.envrc",
            "/.envrc",
            "/ws/.envrc/x",
            "/ws/p/.claude/commands",
            "/ws/.claude/commands/x.md",
        ] {
            assert!(g.refuses(Path::new(p), CreateOp::Create), "{p}");
            assert!(g.refuses(Path::new(p), CreateOp::Place), "{p}");
        }
        for p in ["/ws/envrc", "/ws/.envrc2", "/ws/.claude", "/ws/.claude/other", "/ws/commands", "/ws/x.envrc"] {
            assert!(!g.refuses(Path::new(p), CreateOp::Create), "{p}");
        }
    }

    #[test]
    fn names_are_not_refused_in_the_private_directories_but_exact_paths_are() {
        let g = guard();
        assert!(!g.refuses(Path::new("/tmp/.envrc"), CreateOp::Create));
        // An area bound inside a private directory is the host's: not exempt there.
        assert!(g.refuses(Path::new("/tmp/ws/.envrc"), CreateOp::Create));
        assert!(g.refuses(Path::new("/tmp/ws/a/.claude/commands"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/tmp/wsx/.envrc"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/tmp/x/.claude/commands"), CreateOp::Place));
        assert!(g.refuses(Path::new("/ws/secret/key"), CreateOp::Create));
    }

    #[test]
    fn placing_a_leading_part_of_a_pattern_is_refused_but_creating_it_is_not() {
        let g = guard();
        assert!(!g.refuses(Path::new("/ws/.claude"), CreateOp::Create));
        assert!(g.refuses(Path::new("/ws/.claude"), CreateOp::Place));
        assert!(g.refuses(Path::new("/ws/deep/.claude"), CreateOp::Place));
    }

    #[test]
    fn exact_paths_and_their_ancestors() {
        let g = guard();
        assert!(g.refuses(Path::new("/ws/.git/hooks"), CreateOp::Create));
        assert!(g.refuses(Path::new("/ws/.git/hooks/pre-commit"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/ws/.git/index.lock"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/ws/secret"), CreateOp::Create));
        assert!(g.refuses(Path::new("/ws/secret"), CreateOp::Place));
        assert!(g.refuses(Path::new("/ws/secret/key"), CreateOp::Create));
        assert!(!g.refuses(Path::new("/ws/secret/other"), CreateOp::Create));
    }

    #[test]
    fn patterns_are_checked_and_unions_never_lose_an_entry() {
        for bad in ["", "/abs", "~/x", "a/../b", "./a", "a//b", "a/*"] {
            let p = Protection { extra: vec![bad.into()], ..Protection::default() };
            assert!(p.canonical().is_err(), "{bad:?}");
        }
        let p = Protection { except: vec![".nope".into()], ..Protection::default() };
        assert!(p.canonical().is_err_and(|e| e.to_string().contains("protected_paths.except[0]")));
        let a = Protection {
            defaults: true,
            extra: vec!["Makefile".into()],
            except: vec![".idea".into(), ".envrc".into()],
        };
        let b = Protection { defaults: false, extra: vec!["secrets".into()], except: vec![] };
        let u = Protection::union(&a, &b);
        assert_eq!(u.except, vec![".envrc".to_string(), ".idea".to_string()]);
        assert_eq!(u.extra, vec!["Makefile".to_string(), "secrets".to_string()]);
        let c = Protection::default();
        let u = Protection::union(&a, &c);
        assert!(u.except.is_empty());
        assert!(u.names().contains(&".envrc".to_string()));
    }
}
