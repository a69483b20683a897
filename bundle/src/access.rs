//! The profile vocabulary (CONTRACT.md §3): access values, home, isolation and roots; and the
//! read side for approval systems, [`Profile::access_for`] (CONTRACT.md §5).

use std::fmt;
use std::path::PathBuf;

use crate::error::Error;
use crate::profile::{Axis, Profile, clean_path};

macro_rules! abi_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $num:literal => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[repr(u8)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant = $num),+ }

        impl $name {
            /// The lowercase name (`Display`).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl TryFrom<u8> for $name {
            type Error = Error;
            fn try_from(value: u8) -> Result<Self, Error> {
                match value {
                    $($num => Ok($name::$variant),)+
                    other => Err(Error::profile(format!(
                        "{} value {other} is out of range", stringify!($name).to_lowercase()))),
                }
            }
        }

        impl From<$name> for u8 {
            fn from(value: $name) -> u8 { value as u8 }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

abi_enum! {
    /// Whether an axis is open: never, per granted spawn, or always. Ordered `Deny < Gated < Allow`.
    Access {
        /// Never; no grant lifts it.
        #[default]
        Deny = 0 => "deny",
        /// Denied unless a grant lifts it for one spawn.
        Gated = 1 => "gated",
        /// Every spawn has it.
        Allow = 2 => "allow",
    }
}

abi_enum! {
    /// Which HOME the spawned process gets. Ordered `IsolatedHome < RealHome`.
    Home {
        /// A private, owner-only HOME per executor.
        #[default]
        IsolatedHome = 0 => "isolated-home",
        /// The caller's HOME path (no filesystem access is granted by it).
        RealHome = 1 => "real-home",
    }
}

abi_enum! {
    /// Whether the process is confined. Ordered `Sandboxed < Unconfined`.
    Isolation {
        /// Confined by the platform backend; fails closed when none is available.
        #[default]
        Sandboxed = 0 => "sandboxed",
        /// Spawned directly on the host; needs `ack_unconfined`.
        Unconfined = 1 => "unconfined",
    }
}

/// An extra tree with its own read and write authority.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RootAccess {
    /// An absolute path to an existing directory.
    pub path: PathBuf,
    /// Read access below `path`.
    pub read: Access,
    /// Write access below `path`.
    pub write: Access,
}

impl Profile {
    /// The dependency-free read side for approval systems (CONTRACT.md §5).
    pub fn access_for(&self, kind: &str, scope: &str) -> Result<Access, Error> {
        let c = self.config();
        let axis = match kind {
            "command.execute" | "network" => {
                if !scope.is_empty() {
                    return Err(Error::profile(format!("scope: {kind} takes an empty scope")));
                }
                return Ok(if kind == "network" { c.network } else { c.command });
            }
            "filesystem.read" => Axis::Read,
            "filesystem.write" => Axis::Write,
            other => return Err(Error::profile(format!("kind: unknown kind {other:?}"))),
        };
        if let Some(rest) = scope.strip_prefix("host:") {
            if rest != "*" {
                return Err(Error::profile("scope: host: must be followed by *"));
            }
            return Ok(self.host(axis));
        }
        if let Some(rest) = scope.strip_prefix("tree:") {
            let p = clean_path("scope", rest)?;
            return Ok(self.tree_value(axis, &p));
        }
        let p = clean_path("scope", scope)?;
        Ok(self.path_value(axis, &p))
    }
}
