//! The status channel from the container init to the helper: a pipe carrying at most
//! [`MAX_MESSAGES`] newline-terminated lines of at most [`MAX_LINE`] bytes, in a fixed grammar
//! and order (CONTRACT.md §15.1):
//!
//! ```text
//! ready                                        (first, at most once)
//! setup landlock=<full|partial|none> abi=<n> seccomp=<n>   (at most once)
//! direct <tcp|udp|ip>:<address>:<port>         (after setup, at most 256)
//! direct-dropped <n>                           (after the 256th direct, at most once)
//! exited <0..=255> | signalled <1..=64> | error helper: <stage>: <printable text>   (last)
//! ```
//!
//! `<stage>` is one of the init's set-up steps ([`Stage`]); the parser yields it typed. A
//! `direct` line (issue 17) records a connection or datagram of the workload to an address
//! off the sandbox's loopback, which did not go through the egress proxy and was refused
//! (`guard/direct.rs`); its address is in canonical form (`192.0.2.1:443`,
//! `[2001:db8::1]:53`). The `direct` lines do not count towards [`MAX_MESSAGES`]: they have
//! their own bound, [`MAX_DIRECT`], and what the init could not send past it is one count.
//!
//! The init is not dumpable once its workload can exist, so no workload can reach the pipe;
//! the parser still trusts nothing: an oversized or unterminated line, an unknown or
//! out-of-order message, anything after the final one, is a violation that fails the run
//! closed, and the helper never holds more than one line of pending bytes.

use std::net::SocketAddr;

use crate::protocol::LandlockStatus;

/// The longest line accepted, newline excluded.
pub const MAX_LINE: usize = 4096;

/// The most messages a spawn's init sends (`ready`, `setup`, the outcome), `direct` lines
/// aside.
pub const MAX_MESSAGES: usize = 3;

/// The most `direct` lines a spawn's init sends; later records are only counted
/// (`direct-dropped`).
pub const MAX_DIRECT: usize = 256;

/// One message of the init.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Landlock and seccomp are prepared; the init waits for `go`.
    Ready,
    /// What the init put in force.
    Setup {
        /// How much of the ruleset is enforced.
        landlock: LandlockStatus,
        /// The kernel's Landlock ABI.
        abi: u32,
        /// The seccomp mode read back.
        seccomp: u32,
    },
    /// A direct connection or datagram was refused (issue 17).
    Direct(Direct),
    /// So many more were refused past [`MAX_DIRECT`] (at least one).
    DirectDropped(u32),
    /// The workload exited with this code.
    Exited(i32),
    /// A signal ended the workload.
    Signalled(i32),
    /// A set-up step of the init failed.
    Error(Failure),
}

/// How a direct call went: the socket's transport as far as the init could tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A TCP (or MPTCP) socket.
    Tcp,
    /// A UDP (or UDP-Lite) socket.
    Udp,
    /// Another IP socket (ping, raw, SCTP), or one whose protocol could not be read.
    Ip,
}

impl Transport {
    /// Every transport.
    pub const ALL: [Transport; 3] = [Transport::Tcp, Transport::Udp, Transport::Ip];

    /// The wire name (the target's prefix).
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Ip => "ip",
        }
    }
}

/// One refused direct call: what it went to. Its `Display` is the record's target,
/// `<transport>:<address>:<port>` (`tcp:192.0.2.1:443`, `udp:[2001:db8::1]:53`), the form of
/// the proxy's own targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Direct {
    /// The socket's transport.
    pub transport: Transport,
    /// The address (flow information and scope are not kept).
    pub addr: SocketAddr,
}

impl Direct {
    /// The record of a call on a `transport` socket to `addr`.
    pub fn new(transport: Transport, addr: SocketAddr) -> Direct {
        Direct { transport, addr: SocketAddr::new(addr.ip(), addr.port()) }
    }

    /// Parses the canonical text [`Display`](std::fmt::Display) writes, nothing else.
    fn parse(text: &str) -> Option<Direct> {
        let (name, rest) = text.split_once(':')?;
        let transport = Transport::ALL.into_iter().find(|t| t.as_str() == name)?;
        let direct = Direct::new(transport, rest.parse().ok()?);
        (direct.to_string() == text).then_some(direct)
    }
}

impl std::fmt::Display for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.transport.as_str(), self.addr)
    }
}

/// The `direct` line (without its newline) of `record`.
pub fn direct_line(record: &Direct) -> String {
    format!("direct {record}")
}

/// The `direct-dropped` line (without its newline) for `n` records past [`MAX_DIRECT`].
pub fn direct_dropped_line(n: u32) -> String {
    format!("direct-dropped {n}")
}

/// A set-up step of the container init that can fail: the `<stage>` of an `error` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The parent-death signal could not be set.
    ParentDeath,
    /// The init could not change whether it is dumpable.
    Dumpable,
    /// The init could not block its signals.
    Signals,
    /// A mount is not the object it was checked to be (or the check could not run).
    Identities,
    /// Landlock could not be prepared or put in force (as required).
    Landlock,
    /// The seccomp filter could not be compiled or installed (as required).
    Seccomp,
    /// A warm container's process could not be read.
    Go,
    /// A warm container's stdio could not be installed.
    Stdio,
    /// A warm container's working directory could not be entered.
    Cwd,
    /// The process to exec is unusable (no process, empty argv, a NUL byte).
    Exec,
    /// The workload could not be forked.
    Fork,
    /// The creation guard of protected paths (issue 14), or the watch on direct network calls
    /// (issue 17), could not be read or started.
    Guard,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Stage; 12] = [
        Stage::ParentDeath,
        Stage::Dumpable,
        Stage::Signals,
        Stage::Identities,
        Stage::Landlock,
        Stage::Seccomp,
        Stage::Go,
        Stage::Stdio,
        Stage::Cwd,
        Stage::Exec,
        Stage::Fork,
        Stage::Guard,
    ];

    /// The wire name (the runtime and the tests match on the detail's prefix, e.g.
    /// `helper: identities: grant target`).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::ParentDeath => "parent-death signal",
            Stage::Dumpable => "dumpable",
            Stage::Signals => "signals",
            Stage::Identities => "identities",
            Stage::Landlock => "landlock",
            Stage::Seccomp => "seccomp",
            Stage::Go => "go",
            Stage::Stdio => "stdio",
            Stage::Cwd => "cwd",
            Stage::Exec => "exec",
            Stage::Fork => "fork",
            Stage::Guard => "protect guard",
        }
    }

    fn from_wire(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set-up failure of the init. Its `Display` is the run's failure detail,
/// `helper: <stage>: <reason>`, exactly as the `error` line carried it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The step that failed.
    pub stage: Stage,
    /// Why (printable text; may be empty).
    pub reason: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reason.is_empty() {
            write!(f, "helper: {}:", self.stage)
        } else {
            write!(f, "helper: {}: {}", self.stage, self.reason)
        }
    }
}

/// The most bytes of an `error` line [`error_line`] writes (newline excluded).
const MAX_ERROR_LINE: usize = 1024;

/// The `error` line (without its newline) that reports `stage` failing for `reason`: control
/// characters become spaces, the line is cut to at most 1024 bytes and its trailing blanks
/// dropped, so that it is one line of printable text within the channel's bound.
pub fn error_line(stage: Stage, reason: &str) -> String {
    let mut line = format!("error helper: {stage}: ");
    for c in reason.chars().map(|c| if c.is_control() { ' ' } else { c }) {
        if line.len() + c.len_utf8() > MAX_ERROR_LINE {
            break;
        }
        line.push(c);
    }
    line.truncate(line.trim_end().len());
    line
}

/// Parses the text after `error ` (`helper: <stage>: <reason>`); None when it has no known stage.
fn parse_failure(detail: &str) -> Option<Failure> {
    let rest = detail.strip_prefix("helper: ")?;
    let (stage, reason) = match rest.split_once(": ") {
        Some(split) => split,
        None => (rest.strip_suffix(':')?, ""),
    };
    Some(Failure { stage: Stage::from_wire(stage)?, reason: reason.to_owned() })
}

impl Message {
    fn is_final(&self) -> bool {
        matches!(self, Message::Exited(_) | Message::Signalled(_) | Message::Error(_))
    }
}

/// The helper's reader state: bounded pending bytes and the messages parsed so far.
#[derive(Debug, Default)]
pub struct StatusChannel {
    pending: Vec<u8>,
    messages: Vec<Message>,
    /// How many of `messages` are `direct` or `direct-dropped`.
    direct: usize,
}

impl StatusChannel {
    /// An empty channel.
    pub fn new() -> StatusChannel {
        StatusChannel::default()
    }

    /// Takes `bytes` read from the pipe. Err (the run fails closed): a violation of the framing,
    /// the grammar or the order; nothing after it is read.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), Violation> {
        self.take(bytes)
    }

    fn take(&mut self, bytes: &[u8]) -> Result<(), Violation> {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.pending);
                let message = parse_line(&line)?;
                self.admit(message)?;
            } else {
                if self.pending.len() >= MAX_LINE {
                    return Err(Violation::LineTooLong);
                }
                self.pending.push(b);
            }
        }
        Ok(())
    }

    /// Takes `bytes` up to the end of the first outcome line (a kept container's init writes the
    /// next run's `ready` after it, issue 16): returns how many bytes were taken. Err as
    /// [`StatusChannel::feed`].
    pub fn feed_run(&mut self, bytes: &[u8]) -> Result<usize, Violation> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.has_outcome() {
                return Ok(i);
            }
            self.take(std::slice::from_ref(&b))?;
        }
        Ok(bytes.len())
    }

    /// Whether the run's outcome (its last message) was read.
    pub fn has_outcome(&self) -> bool {
        self.messages.iter().rev().take(1).any(Message::is_final)
    }

    /// At the end of the pipe: an unterminated line is a violation.
    pub fn finish(&self) -> Result<(), Violation> {
        if self.pending.is_empty() { Ok(()) } else { Err(Violation::Unterminated(self.pending.len())) }
    }

    /// The messages parsed so far, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn admit(&mut self, message: Message) -> Result<(), Violation> {
        if self.messages.iter().any(Message::is_final) {
            return Err(Violation::AfterOutcome);
        }
        let setup = self.messages.iter().any(|m| matches!(m, Message::Setup { .. }));
        let dropped = self.messages.iter().any(|m| matches!(m, Message::DirectDropped(_)));
        match &message {
            Message::Direct(_) | Message::DirectDropped(_) if !setup => return Err(Violation::DirectBeforeSetup),
            Message::Direct(_) if dropped || self.direct >= MAX_DIRECT => return Err(Violation::TooManyDirect),
            Message::DirectDropped(_) if dropped || self.direct < MAX_DIRECT => {
                return Err(Violation::DroppedOutOfPlace);
            }
            Message::Direct(_) | Message::DirectDropped(_) => {
                self.direct += 1;
                self.messages.push(message);
                return Ok(());
            }
            _ => {}
        }
        if self.messages.len() - self.direct >= MAX_MESSAGES {
            return Err(Violation::TooMany);
        }
        match &message {
            Message::Ready if !self.messages.is_empty() => return Err(Violation::ReadyNotFirst),
            Message::Setup { .. } if self.messages.iter().any(|m| matches!(m, Message::Setup { .. })) => {
                return Err(Violation::SecondSetup);
            }
            _ => {}
        }
        self.messages.push(message);
        Ok(())
    }
}

/// A violation of the channel's framing, grammar or order: the run fails closed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A line over [`MAX_LINE`] bytes.
    #[error("a line longer than {MAX_LINE} bytes")]
    LineTooLong,
    /// Bytes without a newline at the end of the pipe.
    #[error("an unterminated line of {0} bytes at the end")]
    Unterminated(usize),
    /// More than [`MAX_MESSAGES`] messages.
    #[error("more than {MAX_MESSAGES} messages")]
    TooMany,
    /// A message after `exited`, `signalled` or `error`.
    #[error("a message after the outcome")]
    AfterOutcome,
    /// `ready` after another message.
    #[error("`ready` not first")]
    ReadyNotFirst,
    /// A second `setup`.
    #[error("a second `setup`")]
    SecondSetup,
    /// `direct` or `direct-dropped` before `setup`.
    #[error("`direct` before `setup`")]
    DirectBeforeSetup,
    /// More than [`MAX_DIRECT`] `direct` lines, or one after `direct-dropped`.
    #[error("more than {MAX_DIRECT} `direct` lines")]
    TooManyDirect,
    /// `direct-dropped` before the [`MAX_DIRECT`]th `direct`, or twice.
    #[error("`direct-dropped` out of place")]
    DroppedOutOfPlace,
    /// A `direct` target that is not `<tcp|udp|ip>:<address>:<port>` in canonical form.
    #[error("`direct`: not a canonical target")]
    BadDirect,
    /// A line that is not UTF-8.
    #[error("a line that is not UTF-8")]
    NotUtf8,
    /// A line with control characters.
    #[error("a line with control characters")]
    ControlCharacters,
    /// `setup` with other than three fields.
    #[error("`setup` needs exactly landlock=, abi= and seccomp=")]
    SetupFields,
    /// A `setup` field without its name (`landlock`, `abi`, `seccomp`).
    #[error("`setup`: {0}= expected")]
    SetupField(&'static str),
    /// A Landlock status other than the known ones.
    #[error("`setup`: unknown landlock status")]
    UnknownLandlock,
    /// A field that is not a plain decimal number.
    #[error("{0}: not a number")]
    NotANumber(&'static str),
    /// A number outside its field's range.
    #[error("{0}: out of range")]
    OutOfRange(&'static str),
    /// `error` with nothing after it.
    #[error("`error` without a detail")]
    EmptyError,
    /// `error` without a known stage.
    #[error("`error`: not `helper: <stage>: <reason>` with a known stage")]
    UnknownStage,
    /// Anything else.
    #[error("an unknown message")]
    Unknown,
}

fn number<T: std::str::FromStr>(text: &str, what: &'static str) -> Result<T, Violation> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 10 {
        return Err(Violation::NotANumber(what));
    }
    text.parse().map_err(|_| Violation::OutOfRange(what))
}

/// Parses one line (without its newline) strictly.
pub fn parse_line(line: &[u8]) -> Result<Message, Violation> {
    let text = std::str::from_utf8(line).map_err(|_| Violation::NotUtf8)?;
    if text.chars().any(char::is_control) {
        return Err(Violation::ControlCharacters);
    }
    if text == "ready" {
        return Ok(Message::Ready);
    }
    if let Some(rest) = text.strip_prefix("setup ") {
        let fields: Vec<&str> = rest.split(' ').collect();
        let [landlock, abi, seccomp] = fields.as_slice() else {
            return Err(Violation::SetupFields);
        };
        let landlock = landlock.strip_prefix("landlock=").ok_or(Violation::SetupField("landlock"))?;
        let landlock = LandlockStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == landlock)
            .ok_or(Violation::UnknownLandlock)?;
        let abi = number(abi.strip_prefix("abi=").ok_or(Violation::SetupField("abi"))?, "abi")?;
        let seccomp = number(seccomp.strip_prefix("seccomp=").ok_or(Violation::SetupField("seccomp"))?, "seccomp")?;
        return Ok(Message::Setup { landlock, abi, seccomp });
    }
    if let Some(target) = text.strip_prefix("direct ") {
        return Direct::parse(target).map(Message::Direct).ok_or(Violation::BadDirect);
    }
    if let Some(n) = text.strip_prefix("direct-dropped ") {
        let n: u32 = number(n, "direct-dropped")?;
        return if n >= 1 { Ok(Message::DirectDropped(n)) } else { Err(Violation::OutOfRange("direct-dropped")) };
    }
    if let Some(code) = text.strip_prefix("exited ") {
        let code: i32 = number(code, "exit code")?;
        return if (0..=255).contains(&code) {
            Ok(Message::Exited(code))
        } else {
            Err(Violation::OutOfRange("exit code"))
        };
    }
    if let Some(sig) = text.strip_prefix("signalled ") {
        let sig: i32 = number(sig, "signal")?;
        return if (1..=64).contains(&sig) {
            Ok(Message::Signalled(sig))
        } else {
            Err(Violation::OutOfRange("signal"))
        };
    }
    if let Some(detail) = text.strip_prefix("error ") {
        if detail.trim().is_empty() {
            return Err(Violation::EmptyError);
        }
        let failure = parse_failure(detail).ok_or(Violation::UnknownStage)?;
        return Ok(Message::Error(failure));
    }
    Err(Violation::Unknown)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn violations_keep_their_words() {
        assert_eq!(parse_line(b"setup landlock=full abi=x seccomp=1"), Err(Violation::NotANumber("abi")));
        assert_eq!(Violation::NotANumber("abi").to_string(), "abi: not a number");
        let e = parse_line(b"setup abi=1 landlock=full seccomp=1").unwrap_err();
        assert_eq!(e.to_string(), "`setup`: landlock= expected");
        assert_eq!(parse_line(b"exited 256").unwrap_err().to_string(), "exit code: out of range");
        assert_eq!(Violation::LineTooLong.to_string(), format!("a line longer than {MAX_LINE} bytes"));
        assert_eq!(Violation::TooMany.to_string(), format!("more than {MAX_MESSAGES} messages"));
        let mut c = StatusChannel::new();
        assert_eq!(c.feed(b"ready\nready\n").map_err(|v| v.to_string()), Err(String::from("`ready` not first")));
        let mut c = StatusChannel::new();
        c.feed(b"ready\nexi").unwrap();
        assert_eq!(
            c.finish().map_err(|v| v.to_string()),
            Err(String::from("an unterminated line of 3 bytes at the end"))
        );
    }

    fn fed(bytes: &[u8]) -> Result<Vec<Message>, String> {
        let mut c = StatusChannel::new();
        c.feed(bytes).map_err(|v| v.to_string())?;
        c.finish().map_err(|v| v.to_string())?;
        Ok(c.messages().to_vec())
    }

    #[test]
    fn the_usual_sequences_parse() {
        let m = fed(b"ready\nsetup landlock=full abi=7 seccomp=2\nexited 3\n").unwrap();
        assert_eq!(
            m,
            vec![
                Message::Ready,
                Message::Setup { landlock: LandlockStatus::Full, abi: 7, seccomp: 2 },
                Message::Exited(3)
            ]
        );
        assert_eq!(
            fed(b"ready\nsetup landlock=none abi=0 seccomp=0\nsignalled 40\n").unwrap()[2],
            Message::Signalled(40)
        );
        assert_eq!(
            fed(b"error helper: landlock: no\n").unwrap(),
            vec![Message::Error(Failure { stage: Stage::Landlock, reason: String::from("no") })]
        );
        assert_eq!(fed(b"ready\nerror helper: cwd: /x: ENOENT\n").unwrap().len(), 2);
        assert_eq!(fed(b"").unwrap(), Vec::new());
    }

    #[test]
    fn bytes_may_arrive_in_any_pieces() {
        let all = b"ready\nsetup landlock=partial abi=3 seccomp=2\nexited 0\n";
        let mut c = StatusChannel::new();
        for b in all {
            c.feed(std::slice::from_ref(b)).unwrap();
        }
        c.finish().unwrap();
        assert_eq!(c.messages().len(), 3);
    }

    #[test]
    fn oversized_lines_fail_and_pending_memory_stays_bounded() {
        let mut c = StatusChannel::new();
        let err = c.feed(&vec![b'a'; MAX_LINE + 1]).unwrap_err().to_string();
        assert!(err.contains("longer than"), "{err}");
        assert!(c.pending.len() <= MAX_LINE);
        // 300 MB in 64 KiB pieces stops at the first line's bound.
        let mut c = StatusChannel::new();
        let chunk = vec![b'x'; 65536];
        let mut fed_bytes = 0usize;
        while c.feed(&chunk).is_ok() {
            fed_bytes += chunk.len();
            assert!(fed_bytes < 300 << 20, "never refused");
        }
        assert!(c.pending.capacity() <= 2 * MAX_LINE + 64, "{}", c.pending.capacity());
        // Exactly MAX_LINE bytes is fine.
        let mut line = b"error helper: exec: ".to_vec();
        line.resize(MAX_LINE, b'e');
        line.push(b'\n');
        assert!(fed(&line).is_ok());
    }

    #[test]
    fn malformed_lines_fail() {
        for bad in [
            &b"hello\n"[..],
            b"ready \n",
            b"Ready\n",
            b"exited\n",
            b"exited -1\n",
            b"exited 256\n",
            b"exited 1 2\n",
            b"exited 99999999999999999999\n",
            b"signalled 0\n",
            b"signalled 65\n",
            b"signalled +9\n",
            b"error \n",
            b"error helper: a\rb\n",
            b"error \x1b[2Jx\n",
            b"error \xff\xfe\n",
            b"setup landlock=full abi=7\n",
            b"setup landlock=yes abi=7 seccomp=2\n",
            b"setup landlock=full abi=7 seccomp=2 extra=1\n",
            b"setup landlock=full seccomp=2 abi=7\n",
            b"exited 0\0\n",
            b"error helper: forged: x\n",
            b"error helper: landlock no\n",
            b"error landlock: no\n",
            b"error eeee\n",
        ] {
            assert!(fed(bad).is_err(), "accepted {:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn order_and_count_are_enforced() {
        for bad in [
            &b"exited 0\nexited 1\n"[..],
            b"exited 0\nerror helper: x: forged\n",
            b"error helper: x: y\nready\n",
            b"ready\nready\n",
            b"setup landlock=full abi=7 seccomp=2\nready\n",
            b"ready\nsetup landlock=full abi=7 seccomp=2\nsetup landlock=full abi=7 seccomp=2\n",
            b"ready\nsetup landlock=full abi=7 seccomp=2\nexited 0\nexited 0\n",
        ] {
            assert!(fed(bad).is_err(), "accepted {:?}", String::from_utf8_lossy(bad));
        }
        // An unterminated last line is a violation at the end of the pipe.
        let mut c = StatusChannel::new();
        c.feed(b"ready\nexited 0").unwrap();
        assert!(c.finish().is_err());
    }

    #[test]
    fn direct_records_round_trip() {
        let records = [
            Direct::new(Transport::Tcp, "192.0.2.1:443".parse().unwrap()),
            Direct::new(Transport::Udp, "[2001:db8::1]:53".parse().unwrap()),
            Direct::new(Transport::Ip, "[::ffff:192.0.2.9]:0".parse().unwrap()),
            // Flow information and scope are dropped.
            Direct::new(
                Transport::Udp,
                SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1".parse().unwrap(), 53, 7, 2)),
            ),
        ];
        let mut bytes = b"ready\nsetup landlock=full abi=7 seccomp=2\n".to_vec();
        for r in &records {
            let line = direct_line(r);
            assert_eq!(parse_line(line.as_bytes()).unwrap(), Message::Direct(*r), "{line}");
            bytes.extend(line.as_bytes());
            bytes.push(b'\n');
        }
        assert_eq!(direct_line(&records[0]), "direct tcp:192.0.2.1:443");
        assert_eq!(direct_line(&records[1]), "direct udp:[2001:db8::1]:53");
        assert_eq!(records[3].to_string(), "udp:[fe80::1]:53");
        bytes.extend(b"exited 0\n");
        let m = fed(&bytes).unwrap();
        assert_eq!(m.len(), 3 + records.len());
        assert_eq!(m[2], Message::Direct(records[0]));
        assert_eq!(m.last(), Some(&Message::Exited(0)));
        for bad in [
            &b"direct \n"[..],
            b"direct tcp:192.0.2.1\n",
            b"direct sctp:192.0.2.1:1\n",
            b"direct TCP:192.0.2.1:443\n",
            b"direct tcp:192.0.2.01:443\n",
            b"direct tcp:[2001:0db8::1]:53\n",
            b"direct tcp:[fe80::1%2]:53\n",
            b"direct tcp:192.0.2.1:443 x\n",
            b"direct tcp:192.0.2.1:65536\n",
            b"direct tcp:example.test:443\n",
            b"direct-dropped 0\n",
            b"direct-dropped -1\n",
            b"direct-dropped x\n",
        ] {
            assert!(parse_line(bad.strip_suffix(b"\n").unwrap()).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn direct_records_are_bounded_and_ordered() {
        let setup = "ready\nsetup landlock=full abi=7 seccomp=2\n";
        let line = "direct udp:192.0.2.53:53\n";
        // Up to the bound, then one count, then the outcome.
        let all = format!("{setup}{}direct-dropped 9\nexited 0\n", line.repeat(MAX_DIRECT));
        let m = fed(all.as_bytes()).unwrap();
        assert_eq!(m.len(), MAX_DIRECT + 4);
        assert_eq!(m[MAX_DIRECT + 2], Message::DirectDropped(9));
        for bad in [
            // Before setup.
            format!("ready\n{line}"),
            line.to_owned(),
            // Past the bound, or after the count.
            format!("{setup}{}", line.repeat(MAX_DIRECT + 1)),
            format!("{setup}{}direct-dropped 1\n{line}", line.repeat(MAX_DIRECT)),
            // The count before the bound is reached, or twice.
            format!("{setup}{line}direct-dropped 1\n"),
            format!("{setup}{}direct-dropped 1\ndirect-dropped 1\n", line.repeat(MAX_DIRECT)),
            // After the outcome.
            format!("{setup}exited 0\n{line}"),
        ] {
            assert!(fed(bad.as_bytes()).is_err(), "accepted {}", &bad[..bad.len().min(200)]);
        }
        // The direct lines do not take the outcome's place among the three messages.
        assert!(fed(format!("{setup}{}signalled 9\n", line.repeat(10)).as_bytes()).is_ok());
    }

    #[test]
    fn every_stage_round_trips_to_the_same_detail() {
        for stage in Stage::ALL {
            for reason in ["prctl failed", "/x: ENOENT: no such file", "", "  indented", "a\tb\u{1b}c"] {
                let line = error_line(stage, reason);
                let Message::Error(failure) = parse_line(line.as_bytes()).unwrap() else { panic!("{line}") };
                assert_eq!(failure.stage, stage);
                assert_eq!(format!("error {failure}"), line);
            }
        }
        assert_eq!(error_line(Stage::ParentDeath, "prctl failed"), "error helper: parent-death signal: prctl failed");
        assert_eq!(error_line(Stage::Exec, "x\n"), "error helper: exec: x");
        let long = error_line(Stage::Landlock, &"é".repeat(2000));
        assert!(long.len() <= 1024 && long.starts_with("error helper: landlock: é"), "{}", long.len());
    }
}
