//! Deadlines and cancellation (CONTRACT.md §8).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::Error;

/// A shared cancellation flag.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

impl CancelToken {
    /// A new, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every deadline holding this token.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// An optional instant and an optional cancel token; done when either fires (the token wins).
#[derive(Clone, Debug, Default)]
pub struct Deadline {
    at: Option<Instant>,
    token: Option<CancelToken>,
}

impl Deadline {
    /// Never done (unless a token is added).
    pub fn none() -> Self {
        Self::default()
    }

    /// Done at `t`.
    pub fn at(t: Instant) -> Self {
        Deadline { at: Some(t), token: None }
    }

    /// Done `d` from now (saturating far in the future on overflow).
    pub fn after(d: Duration) -> Self {
        let now = Instant::now();
        Deadline { at: Some(now.checked_add(d).unwrap_or(now + Duration::from_secs(86_400 * 365 * 30))), token: None }
    }

    /// Adds a cancel token.
    pub fn with_token(self, t: CancelToken) -> Self {
        Deadline { token: Some(t), ..self }
    }

    /// The instant, if any.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// `Err(Cancelled)` / `Err(DeadlineExceeded)` when done, carrying `partial`.
    pub fn check(&self, partial: &[u8]) -> Result<(), Error> {
        if self.token.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(Error::Cancelled { partial: partial.to_vec() });
        }
        if self.at.is_some_and(|t| Instant::now() >= t) {
            return Err(Error::DeadlineExceeded { partial: partial.to_vec() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_wins_over_instant() {
        let t = CancelToken::new();
        let d = Deadline::at(Instant::now()).with_token(t.clone());
        assert!(matches!(d.check(b""), Err(Error::DeadlineExceeded { .. })));
        t.cancel();
        assert!(matches!(d.check(b"x"), Err(Error::Cancelled { partial }) if partial == b"x"));
        assert!(Deadline::none().check(b"").is_ok());
        assert!(Deadline::after(Duration::from_secs(60)).check(b"").is_ok());
        assert!(Deadline::after(Duration::MAX).check(b"").is_ok());
    }
}
