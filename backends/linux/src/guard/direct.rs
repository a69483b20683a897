//! The watch on direct network calls (issue 17): with the egress proxy on, the sandbox's
//! network namespace has only `lo`, so the kernel refuses every connection and datagram to an
//! address off the loopback (no route: ENETUNREACH). The watch makes those refusals visible:
//! the guard's filter also sends `connect` and `sendto` with an address to the init, which
//! copies the address out of the caller's memory, and for an IPv4 or IPv6 address off the
//! loopback records the call (a `direct` line on the status pipe, a `DenialReason::Direct`
//! denial in the run's output) and answers ENETUNREACH itself, without performing it. Every
//! other call (the loopback, the proxy's port among it; Unix and netlink sockets; an address
//! that cannot be read or that the kernel would refuse for its length or family) continues
//! into the kernel untouched (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! Letting the kernel continue is safe although the caller's memory may change between our
//! read and the kernel's (another thread may rewrite the address): the watch only observes,
//! it enforces nothing. Whatever address the kernel then reads, the namespace has no route
//! but `lo`, so an address off the loopback is refused by the kernel as it was before the
//! watch existed. The worst a racing workload achieves is a refusal that is not recorded.
//!
//! The socket's transport (TCP or UDP) names the record: sockfs's `system.sockprotoname`
//! attribute of the caller's descriptor, read through `/proc/<tid>/fd/<n>` (`pidfd_getfd` is
//! refused by the base policy). Another thread may swap the descriptor meanwhile: that only
//! mislabels the record. A record whose socket cannot be read is named `ip:`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nix::errno::Errno;

use crate::status::{Direct, Transport};

/// `sizeof(struct sockaddr_storage)`: the kernel refuses (EINVAL) a longer address.
pub(super) const SOCKADDR_STORAGE: usize = 128;

/// `sizeof(struct sockaddr_in)`: the shortest IPv4 address the kernel takes.
const SOCKADDR_IN: usize = 16;

/// `SIN6_LEN_RFC2133`: the shortest IPv6 address the kernel takes (no scope id).
const SOCKADDR_IN6: usize = 24;

/// `MSG_FASTOPEN`: a `sendto` on a TCP socket that connects first.
const MSG_FASTOPEN: i32 = 0x2000_0000;

/// One network call sent to the guard, its address still in the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NetCall {
    /// The socket (in the caller's table).
    pub fd: i32,
    /// The address's address in the caller's memory.
    pub addr: u64,
    /// Its length (the kernel reads an int).
    pub len: i32,
    /// `sendto`'s flags; None for `connect`.
    pub send_flags: Option<i32>,
}

/// The `connect` or `sendto` of syscall `n` with arguments `a`; None for any other call.
pub(super) fn decode(n: libc::c_long, a: &[u64; 6]) -> Option<NetCall> {
    match n {
        libc::SYS_connect => {
            Some(NetCall { fd: super::int(a[0]), addr: a[1], len: super::int(a[2]), send_flags: None })
        }
        libc::SYS_sendto => Some(NetCall {
            fd: super::int(a[0]),
            addr: a[4],
            len: super::int(a[5]),
            send_flags: Some(super::int(a[3])),
        }),
        _ => None,
    }
}

/// What the guard does with a network call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The kernel performs it (and gives its own answer).
    Continue,
    /// It is recorded and answered ENETUNREACH, as the kernel would, without being performed.
    Refuse(Direct),
}

/// The IPv4 or IPv6 address `bytes` (the caller's `sockaddr`, exactly as long as it said)
/// holds; None for another family, or one shorter than the kernel accepts.
pub(super) fn destination(bytes: &[u8]) -> Option<SocketAddr> {
    let family = libc::c_int::from(u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]));
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    match family {
        libc::AF_INET if bytes.len() >= SOCKADDR_IN => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port))
        }
        libc::AF_INET6 if bytes.len() >= SOCKADDR_IN6 => {
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port))
        }
        _ => None,
    }
}

/// Whether a call to `ip` stays in the sandbox: the loopback (`127.0.0.0/8`, `::1`, and
/// `127.0.0.0/8` mapped into IPv6), or the unspecified address, which the kernel connects to
/// the loopback.
pub(super) fn is_local(ip: IpAddr) -> bool {
    let v4 = |a: Ipv4Addr| a.is_loopback() || a.is_unspecified();
    match ip {
        IpAddr::V4(a) => v4(a),
        IpAddr::V6(a) => a.is_loopback() || a.is_unspecified() || a.to_ipv4_mapped().is_some_and(v4),
    }
}

/// The protocol names (`system.sockprotoname`, without a `v6` suffix) of IP sockets.
const IP_PROTOCOLS: &[&str] = &["TCP", "MPTCP", "UDP", "UDP-Lite", "UDPLITE", "SCTP", "PING", "RAW", "DCCP", "L2TP/IP"];

/// An IP socket's protocol (`proto` without its `v6` suffix) and whether it is IPv6; None for
/// a socket of another family (`UNIX-STREAM`, `NETLINK`, …).
fn ip_protocol(proto: &str) -> Option<(&str, bool)> {
    let (base, v6) = match proto.strip_suffix("v6") {
        Some(base) => (base, true),
        None => (proto, false),
    };
    IP_PROTOCOLS.contains(&base).then_some((base, v6))
}

/// The transport a record names for a socket of protocol `proto` (None: unreadable).
pub(super) fn transport(proto: Option<&str>) -> Transport {
    match proto.and_then(ip_protocol).map(|(base, _)| base) {
        Some("TCP" | "MPTCP") => Transport::Tcp,
        Some("UDP" | "UDP-Lite" | "UDPLITE") => Transport::Udp,
        _ => Transport::Ip,
    }
}

/// What to do with `call`, whose address reads `bytes`, on a socket of protocol `proto`
/// (None: unreadable, then the address alone decides).
pub(super) fn judge(call: &NetCall, bytes: &[u8], proto: Option<&str>) -> Verdict {
    let ip = proto.map(ip_protocol);
    if let (Some(flags), Some(Some(("TCP" | "MPTCP", _)))) = (call.send_flags, ip) {
        if flags & MSG_FASTOPEN == 0 {
            // A stream socket's sendto ignores its address (it sends on the connection).
            return Verdict::Continue;
        }
    }
    let Some(addr) = destination(bytes) else { return Verdict::Continue };
    if is_local(addr.ip()) {
        return Verdict::Continue;
    }
    match ip {
        // A socket of another family: the kernel refuses an IP address (EINVAL, EAFNOSUPPORT).
        Some(None) => return Verdict::Continue,
        // An IPv4 socket refuses an IPv6 address, a TCPv6 socket an IPv4 one (EAFNOSUPPORT).
        Some(Some((_, false))) if addr.is_ipv6() => return Verdict::Continue,
        Some(Some(("TCP" | "MPTCP", true))) if addr.is_ipv4() => return Verdict::Continue,
        _ => {}
    }
    Verdict::Refuse(Direct::new(transport(proto), addr))
}

/// The answer to a refused call: what the kernel answers without a route.
pub(super) const REFUSED: Errno = Errno::ENETUNREACH;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4], port: u16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(u16::try_from(libc::AF_INET).unwrap().to_ne_bytes());
        b.extend(port.to_be_bytes());
        b.extend(a);
        b.extend([0u8; 8]);
        b
    }

    fn v6(a: Ipv6Addr, port: u16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(u16::try_from(libc::AF_INET6).unwrap().to_ne_bytes());
        b.extend(port.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(a.octets());
        b.extend(0u32.to_ne_bytes());
        b
    }

    const CONNECT: NetCall = NetCall { fd: 3, addr: 1, len: 16, send_flags: None };
    const SENDTO: NetCall = NetCall { fd: 3, addr: 1, len: 16, send_flags: Some(0) };

    fn refused(t: Transport, addr: &str) -> Verdict {
        Verdict::Refuse(Direct::new(t, addr.parse().unwrap()))
    }

    #[test]
    fn addresses_are_read_as_the_kernel_takes_them() {
        assert_eq!(destination(&v4([192, 0, 2, 1], 443)), Some("192.0.2.1:443".parse().unwrap()));
        let doc: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(destination(&v6(doc, 53)), Some("[2001:db8::1]:53".parse().unwrap()));
        // Shorter than the kernel takes: it answers EINVAL itself.
        assert_eq!(destination(&v4([192, 0, 2, 1], 443)[..15]), None);
        assert_eq!(destination(&v6(doc, 53)[..23]), None);
        assert_eq!(destination(&v6(doc, 53)[..24]), Some("[2001:db8::1]:53".parse().unwrap()));
        assert_eq!(destination(&[]), None);
        // Other families.
        let mut unix = u16::try_from(libc::AF_UNIX).unwrap().to_ne_bytes().to_vec();
        unix.extend(b"/run/x\0");
        assert_eq!(destination(&unix), None);
        let mut unspec = v4([192, 0, 2, 1], 443);
        unspec[..2].copy_from_slice(&u16::try_from(libc::AF_UNSPEC).unwrap().to_ne_bytes());
        assert_eq!(destination(&unspec), None);
    }

    #[test]
    fn the_loopback_and_the_unspecified_address_stay_inside() {
        for local in ["127.0.0.1", "127.255.255.254", "0.0.0.0", "::1", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0"] {
            assert!(is_local(local.parse().unwrap()), "{local}");
        }
        for remote in [
            "192.0.2.1",
            "10.255.255.53",
            "255.255.255.255",
            "224.0.0.251",
            "128.0.0.1",
            "2001:db8::1",
            "::ffff:192.0.2.1",
            "::127.0.0.1",
            "fe80::1",
        ] {
            assert!(!is_local(remote.parse().unwrap()), "{remote}");
        }
    }

    #[test]
    fn calls_off_the_loopback_are_refused_and_named_by_their_socket() {
        let remote = v4([192, 0, 2, 1], 443);
        assert_eq!(judge(&CONNECT, &remote, Some("TCP")), refused(Transport::Tcp, "192.0.2.1:443"));
        assert_eq!(judge(&CONNECT, &remote, Some("UDP")), refused(Transport::Udp, "192.0.2.1:443"));
        assert_eq!(judge(&CONNECT, &remote, None), refused(Transport::Ip, "192.0.2.1:443"));
        assert_eq!(judge(&CONNECT, &remote, Some("PING")), refused(Transport::Ip, "192.0.2.1:443"));
        assert_eq!(judge(&SENDTO, &remote, Some("UDP")), refused(Transport::Udp, "192.0.2.1:443"));
        let doc: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(judge(&CONNECT, &v6(doc, 53), Some("UDPv6")), refused(Transport::Udp, "[2001:db8::1]:53"));
        assert_eq!(judge(&CONNECT, &v6(doc, 443), Some("TCPv6")), refused(Transport::Tcp, "[2001:db8::1]:443"));
        assert_eq!(judge(&CONNECT, &v6(doc, 443), Some("MPTCPv6")), refused(Transport::Tcp, "[2001:db8::1]:443"));
        let mapped = v6("::ffff:192.0.2.1".parse().unwrap(), 80);
        assert_eq!(judge(&CONNECT, &mapped, Some("TCPv6")), refused(Transport::Tcp, "[::ffff:192.0.2.1]:80"));
        // A UDPv6 socket may send to an IPv4 address.
        assert_eq!(judge(&SENDTO, &remote, Some("UDPv6")), refused(Transport::Udp, "192.0.2.1:443"));
        // TCP Fast Open connects inside sendto.
        let tfo = NetCall { send_flags: Some(MSG_FASTOPEN), ..SENDTO };
        assert_eq!(judge(&tfo, &remote, Some("TCP")), refused(Transport::Tcp, "192.0.2.1:443"));
    }

    #[test]
    fn everything_else_continues_into_the_kernel() {
        let c = Verdict::Continue;
        // The loopback (the proxy's port among it) and the unspecified address.
        assert_eq!(judge(&CONNECT, &v4([127, 0, 0, 1], 3128), Some("TCP")), c);
        assert_eq!(judge(&CONNECT, &v4([0, 0, 0, 0], 80), Some("TCP")), c);
        assert_eq!(judge(&SENDTO, &v6(Ipv6Addr::LOCALHOST, 53), Some("UDPv6")), c);
        assert_eq!(judge(&CONNECT, &v6("::ffff:127.0.0.1".parse().unwrap(), 1), None), c);
        // Other families, and addresses the kernel refuses for their length or family.
        let remote = v4([192, 0, 2, 1], 443);
        assert_eq!(judge(&CONNECT, &remote[..8], Some("TCP")), c);
        assert_eq!(judge(&CONNECT, &remote, Some("UNIX-STREAM")), c);
        assert_eq!(judge(&CONNECT, &remote, Some("NETLINK")), c);
        let doc = v6("2001:db8::1".parse().unwrap(), 443);
        assert_eq!(judge(&CONNECT, &doc, Some("TCP")), c);
        assert_eq!(judge(&SENDTO, &doc, Some("UDP")), c);
        assert_eq!(judge(&CONNECT, &remote, Some("TCPv6")), c);
        let mut unix = u16::try_from(libc::AF_UNIX).unwrap().to_ne_bytes().to_vec();
        unix.extend(b"/dev/log\0");
        assert_eq!(judge(&SENDTO, &unix, Some("UNIX-DGRAM")), c);
        assert_eq!(judge(&CONNECT, &unix, None), c);
        // A stream socket's sendto ignores its address.
        assert_eq!(judge(&SENDTO, &remote, Some("TCP")), c);
        assert_eq!(judge(&SENDTO, &remote, Some("MPTCPv6")), c);
    }

    #[test]
    fn transports_are_named_from_the_socket_protocol() {
        assert_eq!(transport(Some("TCP")), Transport::Tcp);
        assert_eq!(transport(Some("TCPv6")), Transport::Tcp);
        assert_eq!(transport(Some("UDPv6")), Transport::Udp);
        assert_eq!(transport(Some("UDP-Lite")), Transport::Udp);
        assert_eq!(transport(Some("UDPLITEv6")), Transport::Udp);
        assert_eq!(transport(Some("RAWv6")), Transport::Ip);
        assert_eq!(transport(Some("UNIX-STREAM")), Transport::Ip);
        assert_eq!(transport(None), Transport::Ip);
    }

    #[test]
    fn calls_decode_with_int_arguments_truncated() {
        let fd = 5 | (1 << 32);
        assert_eq!(
            decode(libc::SYS_connect, &[fd, 0x1000, 16 | (1 << 40), 0, 0, 0]),
            Some(NetCall { fd: 5, addr: 0x1000, len: 16, send_flags: None })
        );
        assert_eq!(
            decode(libc::SYS_sendto, &[fd, 0x2000, 64, 0x4000, 0x3000, 28]),
            Some(NetCall { fd: 5, addr: 0x3000, len: 28, send_flags: Some(0x4000) })
        );
        assert_eq!(decode(libc::SYS_sendmsg, &[0; 6]), None);
    }
}
