//! Network targets by name (issue 17): the profile's `network_targets` patterns and the host
//! normalization that a request's host goes through before it is matched against them.
//!
//! One normalization for both sides: trimmed, IDNA to ASCII (UTS #46, which also lowercases), a
//! trailing dot dropped, LDH labels of 1–63 characters and at most 253 in all; a name whose last
//! label is all digits (or hex, `0x…`) is refused, since resolvers read such names as IPv4
//! numbers (`127.1`, `2130706433`). IP literals are normalized (IPv6 in brackets when printed).

use std::fmt;
use std::net::IpAddr;

use crate::error::Error;

/// The port of the egress proxy's listener on `127.0.0.1` inside every sandbox's own network
/// namespace (each has its own, so one fixed port serves all; the spawn's environment names it
/// before the container exists).
pub const PROXY_PORT: u16 = 3128;

/// A normalized host: a name (ASCII, lowercase, no trailing dot) or an IP address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl Host {
    /// Normalizes a host as a request or a pattern names it (see the module docs); `Err` says
    /// why it is not a host.
    pub fn parse(text: &str) -> Result<Host, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(String::from("empty host"));
        }
        if text.chars().any(|c| c.is_control() || matches!(c, '/' | '%' | '@' | ' ' | '\\' | '?' | '#')) {
            return Err(String::from(
                "the host contains a control character, '/', '%', '@', '\\', '?', '#' or a space",
            ));
        }
        let unbracketed = text.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        if let Some(inner) = unbracketed {
            return match inner.parse::<std::net::Ipv6Addr>() {
                Ok(v6) => Ok(Host::Ip(IpAddr::V6(v6))),
                Err(_) => Err(String::from("not an IPv6 address in brackets")),
            };
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        let ascii = idna::domain_to_ascii(text).map_err(|_| String::from("not a valid internationalized name"))?;
        let name = ascii.strip_suffix('.').unwrap_or(&ascii);
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(String::from("not a valid hostname"));
        }
        let last = name.rsplit('.').next().unwrap_or(name);
        if last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x") {
            return Err(String::from("a name ending in a number reads as an IPv4 address; write the address"));
        }
        Ok(Host::Name(name.to_owned()))
    }

    /// Whether the host is an IP address.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Ip(ip) => Some(*ip),
            Host::Name(_) => None,
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V4(v4)) => write!(f, "{v4}"),
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
        }
    }
}

/// Whether `ip` is the unspecified address (`0.0.0.0`, `::`, also IPv4-mapped): it names no
/// host, and a connection to it reaches this machine's own listeners. A red team allowed
/// `tcp:0.0.0.0:18080` and reached a service on the host's loopback through the proxy (4
/// December, night): refused as a target and as a `resolve` pin.
pub fn names_no_host(ip: IpAddr) -> bool {
    ip.to_canonical().is_unspecified()
}

/// Which hosts a pattern names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// Exactly this host.
    Exact(Host),
    /// `*.<domain>`: any name strictly below the domain (not the domain itself).
    Subdomains(String),
}

/// One `tcp:<host-pattern>:<port>` of a profile's `network_targets`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetPattern {
    host: HostPattern,
    port: u16,
}

impl TargetPattern {
    /// Parses `tcp:<host-pattern>:<port>`, where the pattern is a name, `*.` + a domain, or an
    /// IP literal (IPv6 in brackets), normalized as [`Host::parse`] says; port 1–65535. Anything
    /// else is [`Error::InvalidArgument`] naming the text.
    pub fn parse(text: &str) -> Result<TargetPattern, Error> {
        let bad = |why: &str| Err(Error::InvalidArgument { detail: format!("network target {text:?}: {why}") });
        let Some(rest) = text.trim().strip_prefix("tcp:") else { return bad("must start with tcp:") };
        let Some((host, port)) = rest.rsplit_once(':') else { return bad("no port") };
        let port = port.trim();
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || port.len() > 5 {
            return bad("the port is not a number");
        }
        let port: u16 = match port.parse() {
            Ok(p) if p >= 1 => p,
            _ => return bad("the port is not in 1-65535"),
        };
        let host = host.trim();
        let pattern = if let Some(domain) = host.strip_prefix("*.") {
            match Host::parse(domain) {
                Ok(Host::Name(d)) if d.contains('.') => HostPattern::Subdomains(d),
                Ok(Host::Name(_)) => return bad("a wildcard needs a domain of two labels or more (*.example.com)"),
                Ok(Host::Ip(_)) => return bad("a wildcard cannot stand before an IP address"),
                Err(why) => return bad(&why),
            }
        } else if host.contains('*') {
            return bad("'*' is allowed only as a whole first label (*.example.com)");
        } else {
            match Host::parse(host) {
                Ok(Host::Ip(ip)) if names_no_host(ip) => {
                    return bad("the unspecified address names no host (a connection to it reaches this machine); \
                         write the address meant, 127.0.0.1 for loopback");
                }
                Ok(h) => HostPattern::Exact(h),
                Err(why) => return bad(&why),
            }
        };
        Ok(TargetPattern { host: pattern, port })
    }

    /// The exact target `host:port` (a pattern that names one host).
    pub fn exact(host: Host, port: u16) -> TargetPattern {
        TargetPattern { host: HostPattern::Exact(host), port }
    }

    /// The host pattern.
    pub fn host(&self) -> &HostPattern {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether this pattern names every target `other` names (for `restrict`).
    pub fn covers(&self, other: &TargetPattern) -> bool {
        if self.port != other.port {
            return false;
        }
        match (&self.host, &other.host) {
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Subdomains(_), HostPattern::Exact(h)) => self.matches(h, other.port),
            (HostPattern::Subdomains(a), HostPattern::Subdomains(b)) => {
                a == b || self.matches(&Host::Name(b.clone()), other.port)
            }
            (HostPattern::Exact(_), HostPattern::Subdomains(_)) => false,
        }
    }

    /// Whether the pattern names `host` (normalized) at `port`.
    pub fn matches(&self, host: &Host, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        match (&self.host, host) {
            (HostPattern::Exact(want), got) => want == got,
            (HostPattern::Subdomains(domain), Host::Name(name)) => {
                name.len() > domain.len() + 1
                    && name.ends_with(domain.as_str())
                    && name.as_bytes()[name.len() - domain.len() - 1] == b'.'
            }
            (HostPattern::Subdomains(_), Host::Ip(_)) => false,
        }
    }
}

impl fmt::Display for TargetPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Exact(h) => write!(f, "tcp:{h}:{}", self.port),
            HostPattern::Subdomains(d) => write!(f, "tcp:*.{d}:{}", self.port),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn host(s: &str) -> Host {
        Host::parse(s).unwrap()
    }

    #[test]
    fn patterns_normalize_and_print_back() {
        for (text, want) in [
            ("tcp:Example.COM.:443", "tcp:example.com:443"),
            ("tcp:*.NpmJS.org:443", "tcp:*.npmjs.org:443"),
            ("tcp:bücher.example:80", "tcp:xn--bcher-kva.example:80"),
            ("tcp:127.0.0.1:8080", "tcp:127.0.0.1:8080"),
            ("tcp:[::1]:8080", "tcp:[::1]:8080"),
            ("tcp:[0:0::1]:8080", "tcp:[::1]:8080"),
        ] {
            let p = TargetPattern::parse(text).unwrap();
            assert_eq!(p.to_string(), want, "{text}");
            assert_eq!(TargetPattern::parse(want).unwrap(), p, "{want} prints back");
        }
        for bad in [
            "udp:a.com:1",
            "tcp:a.com",
            "tcp:a.com:0",
            "tcp:a.com:65536",
            "tcp::80",
            "tcp:*:80",
            "tcp:*.com:80",
            "tcp:a.*.com:80",
            "tcp:*.127.0.0.1:80",
            "tcp:a b.com:1",
            "tcp:u@h.com:1",
            "tcp:127.1:80",
            "tcp:2130706433:80",
            "tcp:a.0x7f:80",
            "tcp:a\0.com:1",
            "tcp:[1.2.3.4]:1",
            "tcp:0.0.0.0:80",
            "tcp:[::]:80",
            "tcp:[::ffff:0.0.0.0]:80",
        ] {
            assert!(matches!(TargetPattern::parse(bad), Err(Error::InvalidArgument { .. })), "{bad:?}");
        }
    }

    #[test]
    fn wildcards_match_subdomains_only_and_ports_exactly() {
        let p = TargetPattern::parse("tcp:*.example.com:443").unwrap();
        assert!(p.matches(&host("a.example.com"), 443));
        assert!(p.matches(&host("A.B.Example.COM."), 443));
        assert!(!p.matches(&host("example.com"), 443));
        assert!(!p.matches(&host("badexample.com"), 443));
        assert!(!p.matches(&host("a.example.com"), 80));
        assert!(!p.matches(&host("example.com.evil.org"), 443));
        let exact = TargetPattern::parse("tcp:example.com:443").unwrap();
        assert!(exact.matches(&host("EXAMPLE.com."), 443));
        assert!(!exact.matches(&host("a.example.com"), 443));
        let ip = TargetPattern::parse("tcp:[::1]:80").unwrap();
        assert!(ip.matches(&host("[0::1]"), 80));
        assert!(ip.matches(&host("::1"), 80));
    }
}
