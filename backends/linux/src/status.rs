//! The status channel from the container init to the helper: a pipe carrying at most
//! [`MAX_MESSAGES`] newline-terminated lines of at most [`MAX_LINE`] bytes, in a fixed grammar
//! and order (CONTRACT.md §15.1):
//!
//! ```text
//! ready                                        (first, at most once)
//! setup landlock=<full|partial|none> abi=<n> seccomp=<n>   (at most once)
//! exited <0..=255> | signalled <1..=64> | error <printable text>   (last)
//! ```
//!
//! The init is not dumpable once its workload can exist, so no workload can reach the pipe;
//! the parser still trusts nothing: an oversized or unterminated line, an unknown or
//! out-of-order message, anything after the final one, is a violation that fails the run
//! closed, and the helper never holds more than one line of pending bytes.

/// The longest line accepted, newline excluded.
pub const MAX_LINE: usize = 4096;

/// The most messages a spawn's init sends (`ready`, `setup`, the outcome).
pub const MAX_MESSAGES: usize = 3;

/// One message of the init.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Landlock and seccomp are prepared; the init waits for `go`.
    Ready,
    /// What the init put in force.
    Setup {
        /// `full`, `partial` or `none`.
        landlock: String,
        /// The kernel's Landlock ABI.
        abi: u32,
        /// The seccomp mode read back.
        seccomp: u32,
    },
    /// The workload exited with this code.
    Exited(i32),
    /// A signal ended the workload.
    Signalled(i32),
    /// A setup step failed (`helper: <step>: <reason>`).
    Error(String),
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
}

impl StatusChannel {
    /// An empty channel.
    pub fn new() -> StatusChannel {
        StatusChannel::default()
    }

    /// Takes `bytes` read from the pipe. Err (the run fails closed): a violation of the framing,
    /// the grammar or the order; nothing after it is read.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.pending);
                let message = parse_line(&line)?;
                self.admit(message)?;
            } else {
                if self.pending.len() >= MAX_LINE {
                    return Err(format!("a line longer than {MAX_LINE} bytes"));
                }
                self.pending.push(b);
            }
        }
        Ok(())
    }

    /// At the end of the pipe: an unterminated line is a violation.
    pub fn finish(&self) -> Result<(), String> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(format!("an unterminated line of {} bytes at the end", self.pending.len()))
        }
    }

    /// The messages parsed so far, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn admit(&mut self, message: Message) -> Result<(), String> {
        if self.messages.len() >= MAX_MESSAGES {
            return Err(format!("more than {MAX_MESSAGES} messages"));
        }
        if self.messages.iter().any(Message::is_final) {
            return Err(String::from("a message after the outcome"));
        }
        match &message {
            Message::Ready if !self.messages.is_empty() => return Err(String::from("`ready` not first")),
            Message::Setup { .. } if self.messages.iter().any(|m| matches!(m, Message::Setup { .. })) => {
                return Err(String::from("a second `setup`"));
            }
            _ => {}
        }
        self.messages.push(message);
        Ok(())
    }
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 10 {
        return Err(format!("{what}: not a number"));
    }
    text.parse().map_err(|_| format!("{what}: out of range"))
}

/// Parses one line (without its newline) strictly.
pub fn parse_line(line: &[u8]) -> Result<Message, String> {
    let text = std::str::from_utf8(line).map_err(|_| String::from("a line that is not UTF-8"))?;
    if text.chars().any(char::is_control) {
        return Err(String::from("a line with control characters"));
    }
    if text == "ready" {
        return Ok(Message::Ready);
    }
    if let Some(rest) = text.strip_prefix("setup ") {
        let fields: Vec<&str> = rest.split(' ').collect();
        let [landlock, abi, seccomp] = fields.as_slice() else {
            return Err(String::from("`setup` needs exactly landlock=, abi= and seccomp="));
        };
        let landlock = landlock.strip_prefix("landlock=").ok_or("`setup`: landlock= expected")?;
        if !matches!(landlock, "full" | "partial" | "none") {
            return Err(String::from("`setup`: unknown landlock status"));
        }
        let abi = number(abi.strip_prefix("abi=").ok_or("`setup`: abi= expected")?, "abi")?;
        let seccomp = number(seccomp.strip_prefix("seccomp=").ok_or("`setup`: seccomp= expected")?, "seccomp")?;
        return Ok(Message::Setup { landlock: landlock.to_owned(), abi, seccomp });
    }
    if let Some(code) = text.strip_prefix("exited ") {
        let code: i32 = number(code, "exit code")?;
        return if (0..=255).contains(&code) {
            Ok(Message::Exited(code))
        } else {
            Err(String::from("exit code: out of range"))
        };
    }
    if let Some(sig) = text.strip_prefix("signalled ") {
        let sig: i32 = number(sig, "signal")?;
        return if (1..=64).contains(&sig) {
            Ok(Message::Signalled(sig))
        } else {
            Err(String::from("signal: out of range"))
        };
    }
    if let Some(detail) = text.strip_prefix("error ") {
        if detail.trim().is_empty() {
            return Err(String::from("`error` without a detail"));
        }
        return Ok(Message::Error(detail.to_owned()));
    }
    Err(String::from("an unknown message"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn fed(bytes: &[u8]) -> Result<Vec<Message>, String> {
        let mut c = StatusChannel::new();
        c.feed(bytes)?;
        c.finish()?;
        Ok(c.messages().to_vec())
    }

    #[test]
    fn the_usual_sequences_parse() {
        let m = fed(b"ready\nsetup landlock=full abi=7 seccomp=2\nexited 3\n").unwrap();
        assert_eq!(
            m,
            vec![
                Message::Ready,
                Message::Setup { landlock: String::from("full"), abi: 7, seccomp: 2 },
                Message::Exited(3)
            ]
        );
        assert_eq!(
            fed(b"ready\nsetup landlock=none abi=0 seccomp=0\nsignalled 40\n").unwrap()[2],
            Message::Signalled(40)
        );
        assert_eq!(
            fed(b"error helper: landlock: no\n").unwrap(),
            vec![Message::Error(String::from("helper: landlock: no"))]
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
        let err = c.feed(&vec![b'a'; MAX_LINE + 1]).unwrap_err();
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
        let mut line = b"error ".to_vec();
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
}
