//! The log of refused credentials: one warning per refusal, at most
//! `MAX_LINES_PER_WINDOW` per `WINDOW`, then one line saying how many
//! were left out. A line names the reason and, when a credential was sent,
//! the first 8 hex digits of its SHA-256: enough to tell one client's
//! retries from another's, never the credential or whose it is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::log::Logger;

/// The length of one rate-limit window.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// Most refusal lines per window.
pub(crate) const MAX_LINES_PER_WINDOW: u32 = 20;
/// The message of a refusal line.
pub const FAILED_LOGIN_MESSAGE: &str = "authentication failed";
/// The message of the line counting refusals left out.
pub(crate) const SUPPRESSED_MESSAGE: &str = "authentication failures not logged";

#[derive(Debug)]
struct Window {
    started: Instant,
    logged: u32,
    suppressed: u64,
}

/// Writes refusal lines through the Hub's logger, rate-limited. Cheap to
/// clone (the window is shared).
#[derive(Debug, Clone)]
pub(crate) struct FailedLogins {
    logger: Logger,
    window: Arc<Mutex<Window>>,
}

/// The first 8 hex digits of the credential's SHA-256.
fn hash_prefix(credential: &str) -> String {
    let digest = Sha256::digest(credential.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl FailedLogins {
    /// Refusals logged through `logger`.
    pub fn new(logger: Logger) -> Self {
        FailedLogins {
            logger,
            window: Arc::new(Mutex::new(Window {
                started: Instant::now(),
                logged: 0,
                suppressed: 0,
            })),
        }
    }

    /// Records one refusal: `reason` is the answer's message (it never
    /// holds input), `credential` what was sent, if anything.
    pub fn record(&self, reason: &str, credential: Option<&str>) {
        self.record_at(Instant::now(), reason, credential);
    }

    fn record_at(&self, now: Instant, reason: &str, credential: Option<&str>) {
        let mut window = self.window.lock();
        if now.duration_since(window.started) >= WINDOW {
            if window.suppressed > 0 {
                self.logger.warn(
                    SUPPRESSED_MESSAGE,
                    &[("count", Value::from(window.suppressed))],
                );
            }
            *window = Window {
                started: now,
                logged: 0,
                suppressed: 0,
            };
        }
        if window.logged >= MAX_LINES_PER_WINDOW {
            window.suppressed += 1;
            return;
        }
        window.logged += 1;
        let mut fields = vec![("reason", Value::from(reason))];
        if let Some(credential) = credential {
            fields.push(("credential_sha256_prefix", hash_prefix(credential).into()));
        }
        self.logger.warn(FAILED_LOGIN_MESSAGE, &fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::CaptureBuffer;

    #[test]
    fn refusals_are_logged_without_the_credential_and_rate_limited() {
        let capture = CaptureBuffer::new();
        let log = FailedLogins::new(Logger::new(capture.writer(), false));
        let start = Instant::now();
        let token = "scb1.secret-token-value";
        for _ in 0..MAX_LINES_PER_WINDOW + 5 {
            log.record_at(start, "invalid token signature", Some(token));
        }
        log.record_at(start, "missing bearer token", None);
        let lines = capture.lines();
        assert_eq!(lines.len(), MAX_LINES_PER_WINDOW as usize);
        let first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(first["msg"], FAILED_LOGIN_MESSAGE);
        assert_eq!(first["reason"], "invalid token signature");
        assert_eq!(first["credential_sha256_prefix"], hash_prefix(token));
        assert_eq!(hash_prefix(token).len(), 8);
        assert!(!lines.iter().any(|l| l.contains("secret-token")));

        // The next window first says how many were left out.
        log.record_at(start + WINDOW, "token expired", None);
        let lines = capture.lines();
        let summary: serde_json::Value =
            serde_json::from_str(&lines[MAX_LINES_PER_WINDOW as usize]).unwrap();
        assert_eq!(summary["msg"], SUPPRESSED_MESSAGE);
        assert_eq!(summary["count"], 6);
        let next: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        assert_eq!(next["reason"], "token expired");
        assert!(next.get("credential_sha256_prefix").is_none());
    }
}
