//! The JSON profile file format of [`ProfileConfig`] (CONTRACT.md §3).

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::ProfileConfig;
use crate::access::{Access, Home, Isolation, RootAccess};
use crate::error::Error;
use crate::protect::Protection;
use crate::target::TargetPattern;

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
    "protected_paths",
    "network_targets",
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
                "protected_paths" => config.protected_paths = decode_protection(key, v)?,
                "network_targets" => config.network_targets = decode_targets(key, v)?,
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

/// `network_targets`: an array of `tcp:<host-pattern>:<port>` strings.
fn decode_targets(key: &str, v: &Value) -> Result<Vec<TargetPattern>, Error> {
    let Value::Array(items) = v else {
        return Err(Error::profile(format!("{key}: expected an array of \"tcp:<host>:<port>\" strings")));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let text = item.as_str().ok_or_else(|| Error::profile(format!("{key}[{i}]: expected a string")))?;
            TargetPattern::parse(text).map_err(|e| match e {
                Error::InvalidArgument { detail } => Error::profile(format!("{key}[{i}]: {detail}")),
                other => other,
            })
        })
        .collect()
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

/// `{"defaults": "protect-v1" | "none", "extra": [..], "except": [..]}`, every key optional.
fn decode_protection(key: &str, v: &Value) -> Result<Protection, Error> {
    let Value::Object(map) = v else {
        return Err(Error::profile(format!("{key}: expected an object {{defaults, extra, except}}")));
    };
    let mut p = Protection::default();
    for (k, v) in map {
        let name = format!("{key}.{k}");
        match k.as_str() {
            "defaults" => {
                p.defaults = match v.as_str() {
                    Some(crate::protect::PROTECT_V1) => true,
                    Some("none") => false,
                    _ => return Err(Error::profile(format!("{name}: expected \"protect-v1\" or \"none\""))),
                }
            }
            "extra" | "except" => {
                let Value::Array(items) = v else {
                    return Err(Error::profile(format!("{name}: expected an array of strings")));
                };
                let mut list = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let Value::String(s) = item else {
                        return Err(Error::profile(format!("{name}[{i}]: expected a string")));
                    };
                    list.push(s.clone());
                }
                if k == "extra" {
                    p.extra = list;
                } else {
                    p.except = list;
                }
            }
            _ => return Err(Error::profile(format!("{name}: unknown key (known keys: defaults, extra, except)"))),
        }
    }
    Ok(p)
}
