//! The profile vocabulary (CONTRACT.md §3): access values, home, isolation, roots and the
//! caller-facing `ProfileConfig`, with its JSON form.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::error::Error;

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

/// What the caller asks for; [`crate::Profile::new`] validates and canonicalises it.
///
/// `Default` is the safest value on every axis (everything `Deny`, isolated HOME, sandboxed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileConfig {
    /// The workspace tree (absolute, existing directory).
    pub workspace_root: PathBuf,
    /// Read access to the workspace.
    pub workspace_read: Access,
    /// Write access to the workspace.
    pub workspace_write: Access,
    /// Read access to everything not covered by the workspace, a root or the executor's own dirs.
    pub host_read: Access,
    /// Write access to the same.
    pub host_write: Access,
    /// Outbound network.
    pub network: Access,
    /// Whether a command may start at all.
    pub command: Access,
    /// Which HOME the process gets.
    pub home: Home,
    /// Sandboxed or acknowledged-unconfined.
    pub isolation: Isolation,
    /// Extra trees with their own authority.
    pub additional_roots: Vec<RootAccess>,
    /// Required (and only allowed) with `Isolation::Unconfined`.
    pub ack_unconfined: bool,
    /// Whether the workload may make unix sockets (`socket(AF_UNIX)`) while the network is not
    /// `Allow`: `Deny` (default) or `Allow`, which makes path-named unix sockets in readable
    /// areas connectable (reported `unix-sockets/widened`). `Gated` is refused: no grant lifts it.
    /// With network `Allow` unix sockets are open whatever this says. `socketpair` works always.
    pub unix_sockets: Access,
}

const CONFIG_KEYS: &[&str] = &[
    "workspace_root",
    "workspace_read",
    "workspace_write",
    "host_read",
    "host_write",
    "network",
    "command",
    "home",
    "isolation",
    "additional_roots",
    "ack_unconfined",
    "unix_sockets",
];

impl ProfileConfig {
    /// Decodes the JSON profile file format (CONTRACT.md §3): snake_case keys, access values as
    /// ABI numbers or lowercase names, missing keys taking the safe defaults, unknown keys
    /// rejected. Every failure is [`Error::InvalidProfile`] naming the key.
    pub fn from_json(text: &str) -> Result<ProfileConfig, Error> {
        let value: Strict = serde_json::from_str(text).map_err(|e| Error::profile(format!("profile json: {e}")))?;
        Self::from_value(&value.0)
    }

    /// Decodes an already parsed JSON value; see [`ProfileConfig::from_json`].
    pub fn from_value(value: &Value) -> Result<ProfileConfig, Error> {
        let Value::Object(map) = value else {
            return Err(Error::profile("profile must be a json object"));
        };
        let mut config = ProfileConfig::default();
        for (key, v) in map {
            match key.as_str() {
                "workspace_root" => config.workspace_root = decode_path(key, v)?,
                "workspace_read" => config.workspace_read = decode_access(key, v)?,
                "workspace_write" => config.workspace_write = decode_access(key, v)?,
                "host_read" => config.host_read = decode_access(key, v)?,
                "host_write" => config.host_write = decode_access(key, v)?,
                "network" => config.network = decode_access(key, v)?,
                "command" => config.command = decode_access(key, v)?,
                "home" => config.home = decode_home(key, v)?,
                "isolation" => config.isolation = decode_isolation(key, v)?,
                "additional_roots" => config.additional_roots = decode_roots(key, v)?,
                "unix_sockets" => {
                    config.unix_sockets = match decode_access(key, v)? {
                        Access::Gated => {
                            return Err(Error::profile(format!(
                                "{key}: expected \"deny\" or \"allow\" (no grant lifts it, so \"gated\" means nothing)"
                            )));
                        }
                        other => other,
                    };
                }
                "ack_unconfined" => {
                    config.ack_unconfined =
                        v.as_bool().ok_or_else(|| Error::profile(format!("{key}: expected true or false")))?;
                }
                other => {
                    return Err(Error::profile(format!(
                        "{other}: unknown key (known keys: {})",
                        CONFIG_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(config)
    }
}

impl<'de> serde::Deserialize<'de> for ProfileConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Strict::deserialize(deserializer)?;
        ProfileConfig::from_value(&value.0).map_err(serde::de::Error::custom)
    }
}

/// A JSON value whose objects may not repeat a key: a profile that says `"network"` twice is
/// ambiguous, and the last one silently winning could open what the first one closed.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Strict(Value::Array(items)))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if out.insert(key.clone(), value).is_some() {
                return Err(serde::de::Error::custom(format!("{key}: duplicate key")));
            }
        }
        Ok(Strict(Value::Object(out)))
    }
}

fn decode_path(key: &str, v: &Value) -> Result<PathBuf, Error> {
    match v {
        Value::String(s) => Ok(PathBuf::from(s)),
        _ => Err(Error::profile(format!("{key}: expected a path string"))),
    }
}

fn decode_access(key: &str, v: &Value) -> Result<Access, Error> {
    let bad = || Error::profile(format!("{key}: expected \"deny\", \"gated\", \"allow\" or 0, 1, 2"));
    match v {
        Value::String(s) => match s.as_str() {
            "deny" => Ok(Access::Deny),
            "gated" => Ok(Access::Gated),
            "allow" => Ok(Access::Allow),
            _ => Err(bad()),
        },
        Value::Number(n) => {
            n.as_u64().and_then(|n| u8::try_from(n).ok()).and_then(|n| Access::try_from(n).ok()).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn decode_home(key: &str, v: &Value) -> Result<Home, Error> {
    let bad =
        || Error::profile(format!("{key}: expected \"isolated\", \"isolated-home\", \"real\", \"real-home\" or 0, 1"));
    match v {
        Value::String(s) => match s.as_str() {
            "isolated" | "isolated-home" => Ok(Home::IsolatedHome),
            "real" | "real-home" => Ok(Home::RealHome),
            _ => Err(bad()),
        },
        Value::Number(n) => {
            n.as_u64().and_then(|n| u8::try_from(n).ok()).and_then(|n| Home::try_from(n).ok()).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn decode_isolation(key: &str, v: &Value) -> Result<Isolation, Error> {
    let bad = || Error::profile(format!("{key}: expected \"sandboxed\", \"unconfined\" or 0, 1"));
    match v {
        Value::String(s) => match s.as_str() {
            "sandboxed" => Ok(Isolation::Sandboxed),
            "unconfined" => Ok(Isolation::Unconfined),
            _ => Err(bad()),
        },
        Value::Number(n) => {
            n.as_u64().and_then(|n| u8::try_from(n).ok()).and_then(|n| Isolation::try_from(n).ok()).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn decode_roots(key: &str, v: &Value) -> Result<Vec<RootAccess>, Error> {
    let Value::Array(items) = v else {
        return Err(Error::profile(format!("{key}: expected an array of {{path, read, write}}")));
    };
    let mut roots = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(Error::profile(format!("{key}[{i}]: expected an object {{path, read, write}}")));
        };
        let mut root = RootAccess::default();
        let mut has_path = false;
        for (k, v) in map {
            let name = format!("{key}[{i}].{k}");
            match k.as_str() {
                "path" => {
                    root.path = decode_path(&name, v)?;
                    has_path = true;
                }
                "read" => root.read = decode_access(&name, v)?,
                "write" => root.write = decode_access(&name, v)?,
                _ => {
                    return Err(Error::profile(format!("{name}: unknown key (known keys: path, read, write)")));
                }
            }
        }
        if !has_path {
            return Err(Error::profile(format!("{key}[{i}].path: missing")));
        }
        roots.push(root);
    }
    Ok(roots)
}
