//! Network targets (CONTRACT.md §19) as grant targets. The egress proxy (issue 17) resolves
//! names itself (a direct route): every token's route fingerprint is `direct:v1`. A
//! `network.proxy-target.v1` grant names one exact target, checked here and by
//! [`sandbox_bundle::TargetPattern`] (the profile's patterns), and is issued only by an executor
//! that claims `target-network`.

use std::fmt;
use std::net::IpAddr;

use crate::Error;

/// The route fingerprint of every executor (the proxy resolves names itself: a direct route).
pub(crate) const NO_ROUTE: &str = "direct:v1";

/// A `tcp:<host>:<port>` destination.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NetworkTarget {
    host: String,
    port: u16,
}

impl NetworkTarget {
    /// Parses `tcp:<host>:<port>`: the host trimmed, lowercased, a trailing dot dropped, IP
    /// literals normalized (IPv6 in brackets); LDH hostnames with labels of 1–63 characters and
    /// at most 253 in all; NUL, `/`, `%`, `@` and spaces rejected; port 1–65535. Anything else
    /// is [`Error::InvalidArgument`]. A target is normalized when it prints back unchanged.
    pub fn parse(text: &str) -> Result<NetworkTarget, Error> {
        let bad = |why: &str| Err(Error::InvalidArgument { detail: format!("network target {text:?}: {why}") });
        let Some(rest) = text.strip_prefix("tcp:") else { return bad("must start with tcp:") };
        let Some((host, port)) = rest.rsplit_once(':') else { return bad("no port") };
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || port.len() > 5 {
            return bad("the port is not a number");
        }
        let port: u16 = match port.parse() {
            Ok(p) if p >= 1 => p,
            _ => return bad("the port is not in 1-65535"),
        };
        let host = host.trim();
        if host.is_empty() {
            return bad("empty host");
        }
        if host.chars().any(|c| matches!(c, '\0' | '/' | '%' | '@' | ' ')) {
            return bad("the host contains NUL, '/', '%', '@' or a space");
        }
        let unbracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            let host = match ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => format!("[{v6}]"),
            };
            return Ok(NetworkTarget { host, port });
        }
        let lower = host.to_ascii_lowercase();
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return bad("not a valid hostname");
        }
        Ok(NetworkTarget { host: name.to_owned(), port })
    }

    /// The host (IPv6 in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for NetworkTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tcp:{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_normalize_and_reject() {
        for (text, want) in [
            ("tcp:Example.COM.:443", "tcp:example.com:443"),
            ("tcp: example.com :80", "tcp:example.com:80"),
            ("tcp:127.0.0.1:22", "tcp:127.0.0.1:22"),
            ("tcp:[::1]:8080", "tcp:[::1]:8080"),
            ("tcp:0:0:0:0:0:0:0:1:8080", "tcp:[::1]:8080"),
        ] {
            assert_eq!(NetworkTarget::parse(text).map(|t| t.to_string()).ok().as_deref(), Some(want), "{text}");
        }
        for bad in [
            "udp:a:1",
            "tcp:a",
            "tcp:a:0",
            "tcp:a:65536",
            "tcp::80",
            "tcp:a b:1",
            "tcp:a/b:1",
            "tcp:a%b:1",
            "tcp:u@h:1",
            "tcp:-a:1",
            "tcp:a..b:1",
            "tcp:a\0:1",
            "tcp:a:+1",
        ] {
            assert!(matches!(NetworkTarget::parse(bad), Err(Error::InvalidArgument { .. })), "{bad:?}");
        }
        let long = format!("tcp:{}.com:1", "a".repeat(64));
        assert!(NetworkTarget::parse(&long).is_err());
    }
}
