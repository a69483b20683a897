//! SOCKS5 (RFC 1928) with username/password authentication (RFC 1929), `CONNECT` only.
//!
//! The greeting must offer method `0x02`; the username and password must be this execution's
//! id and secret. The target is an IPv4 address, a domain (normalized with [`Host::parse`]) or
//! an IPv6 address; policy, resolution and connection are [`upstream`]'s. A success reply names
//! `0.0.0.0:0` and the connection becomes a tunnel.

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sandbox_bundle::Host;

use super::upstream::{self, Refusal, RelayEnd};
use super::{Connection, DenialReason, printable, target_text};

/// The protocol version, also the first byte that tells SOCKS5 from HTTP.
pub(super) const VERSION: u8 = 0x05;

/// The username/password method (RFC 1929).
const METHOD_PASSWORD: u8 = 0x02;

/// "No acceptable methods".
const METHOD_NONE: u8 = 0xFF;

/// The version of the username/password sub-negotiation.
const AUTH_VERSION: u8 = 0x01;

/// The only command served.
const CMD_CONNECT: u8 = 0x01;

/// Reply codes (RFC 1928 §6).
mod reply {
    /// Succeeded.
    pub(super) const SUCCEEDED: u8 = 0x00;
    /// General SOCKS server failure.
    pub(super) const FAILURE: u8 = 0x01;
    /// Connection not allowed by ruleset.
    pub(super) const NOT_ALLOWED: u8 = 0x02;
    /// Host unreachable.
    pub(super) const HOST_UNREACHABLE: u8 = 0x04;
    /// Connection refused.
    pub(super) const REFUSED: u8 = 0x05;
    /// Command not supported.
    pub(super) const COMMAND_UNSUPPORTED: u8 = 0x07;
    /// Address type not supported.
    pub(super) const ADDRESS_UNSUPPORTED: u8 = 0x08;
}

/// A request's target as read.
enum Target {
    /// A normalized host.
    Host(Host),
    /// A domain that is not a host [`Host::parse`] accepts, made printable.
    Bad(String),
}

/// Serves a SOCKS5 connection whose version byte was read.
pub(super) fn serve(conn: &Connection<'_>) {
    match handshake(conn) {
        Ok(true) => {
            if let Err(e) = request(conn) {
                tracing::debug!("sandbox proxy: a SOCKS5 request ended: {e}");
            }
        }
        Ok(false) => {}
        Err(e) => tracing::debug!("sandbox proxy: a SOCKS5 handshake ended: {e}"),
    }
}

/// Reads the greeting and the credentials; `Ok(false)` when refused (answered and recorded).
fn handshake(conn: &Connection<'_>) -> io::Result<bool> {
    let count = read_u8(conn)?;
    let methods = read_vec(conn, usize::from(count))?;
    if !methods.contains(&METHOD_PASSWORD) {
        conn.deny(String::new(), DenialReason::BadCredential);
        conn.send(&[VERSION, METHOD_NONE]);
        return Ok(false);
    }
    if !conn.send(&[VERSION, METHOD_PASSWORD]) {
        return Ok(false);
    }
    let version = read_u8(conn)?;
    let user_len = read_u8(conn)?;
    let user = read_vec(conn, usize::from(user_len))?;
    let password_len = read_u8(conn)?;
    let password = read_vec(conn, usize::from(password_len))?;
    let good = conn.shared.verifier.check(&user, &password);
    if version != AUTH_VERSION || !good {
        conn.deny(String::new(), DenialReason::BadCredential);
        conn.send(&[AUTH_VERSION, 0x01]);
        return Ok(false);
    }
    Ok(conn.send(&[AUTH_VERSION, 0x00]))
}

/// Reads and serves the request.
fn request(conn: &Connection<'_>) -> io::Result<()> {
    let [version, command, _reserved, address_type] = read_array::<4>(conn)?;
    let host = match address_type {
        0x01 => Target::Host(Host::Ip(IpAddr::V4(Ipv4Addr::from(read_array::<4>(conn)?)))),
        0x03 => {
            let len = read_u8(conn)?;
            let name = read_vec(conn, usize::from(len))?;
            let name = String::from_utf8_lossy(&name);
            match Host::parse(&name) {
                Ok(host) => Target::Host(host),
                Err(_) => Target::Bad(printable(&name)),
            }
        }
        0x04 => Target::Host(Host::Ip(IpAddr::V6(Ipv6Addr::from(read_array::<16>(conn)?)))),
        _ => {
            conn.deny(String::new(), DenialReason::Unsupported);
            answer(conn, reply::ADDRESS_UNSUPPORTED);
            return Ok(());
        }
    };
    let port = u16::from_be_bytes(read_array::<2>(conn)?);
    let host = match host {
        Target::Host(host) => host,
        Target::Bad(raw) => {
            conn.deny(raw, DenialReason::Unsupported);
            answer(conn, reply::NOT_ALLOWED);
            return Ok(());
        }
    };
    let target = target_text(&host, port);
    if version != VERSION {
        conn.deny(target, DenialReason::Unsupported);
        answer(conn, reply::FAILURE);
        return Ok(());
    }
    if command != CMD_CONNECT {
        conn.deny(target, DenialReason::Unsupported);
        answer(conn, reply::COMMAND_UNSUPPORTED);
        return Ok(());
    }
    connect(conn, &host, port, target);
    Ok(())
}

/// Connects an allowed target and tunnels, or answers the refusal.
fn connect(conn: &Connection<'_>, host: &Host, port: u16, target: String) {
    let code = match upstream::open(conn, host, port) {
        Ok(origin) => {
            if answer(conn, reply::SUCCEEDED) {
                upstream::relay(&conn.client, &origin, RelayEnd::BothClosed);
            }
            return;
        }
        Err(Refusal::Stopping) => return,
        Err(Refusal::NotAllowed) => {
            conn.deny(target, DenialReason::NotAllowed);
            reply::NOT_ALLOWED
        }
        Err(Refusal::NotPublic) => {
            conn.deny(target, DenialReason::NotPublic);
            reply::NOT_ALLOWED
        }
        Err(Refusal::NoSuchName) => reply::HOST_UNREACHABLE,
        Err(Refusal::Unreachable { refused: true }) => reply::REFUSED,
        Err(Refusal::Unreachable { refused: false }) => reply::HOST_UNREACHABLE,
    };
    answer(conn, code);
}

/// Sends a reply with `code` and the bound address `0.0.0.0:0`; false when the workload is gone.
fn answer(conn: &Connection<'_>, code: u8) -> bool {
    conn.send(&[VERSION, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
}

/// Reads one byte.
fn read_u8(conn: &Connection<'_>) -> io::Result<u8> {
    let [byte] = read_array::<1>(conn)?;
    Ok(byte)
}

/// Reads exactly `N` bytes.
fn read_array<const N: usize>(conn: &Connection<'_>) -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    read_full(conn, &mut bytes)?;
    Ok(bytes)
}

/// Fills `buf` before the handshake's deadline (a socket timeout bounds one read only: a client
/// that sends a byte at a time would otherwise restart it with each byte).
fn read_full(conn: &Connection<'_>, buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        conn.before_handshake_read()?;
        match (&conn.client).read(&mut buf[filled..]) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads exactly `len` bytes.
fn read_vec(conn: &Connection<'_>, len: usize) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; len];
    read_full(conn, &mut bytes)?;
    Ok(bytes)
}
