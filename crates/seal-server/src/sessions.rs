//! The review workbench's sessions (`crate::workbench`): a server-side table from a random session id (the
//! `seal_review` cookie, HttpOnly, SameSite=Strict) to the reviewer who logged in, the
//! session's CSRF token and its expiry.
//!
//! Decision: the table is keyed by the sha256 of the id, not the id, so a lookup's timing
//! says nothing about the ids held; the CSRF token is compared in constant time. Sessions live
//! in this process only: a restart logs everyone out, and replicas behind one address need
//! sticky routing for `/review/` (docs/DEPLOYING.md). The table is bounded
//! ([`MAX_SESSIONS`]); expired sessions are dropped whenever one is opened.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;
use seal_core::canonical::Hash;

/// How long a session lasts after login: a working day.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Most sessions held at once: past it a login is refused (503) until some expire.
pub const MAX_SESSIONS: usize = 4096;
/// The session cookie's name.
pub const COOKIE: &str = "seal_review";

/// A logged-in reviewer, as a request sees it.
#[derive(Debug, Clone)]
pub struct Session {
    /// The reviewer's name from `reviewers.tokens_env` (the label their reviews carry).
    pub reviewer: String,
    /// The token the session's POSTs carry in `X-CSRF-Token`.
    pub csrf: String,
}

struct Held {
    session: Session,
    expires: Instant,
}

/// The table.
#[derive(Default)]
pub struct Sessions {
    held: Mutex<HashMap<String, Held>>,
}

/// Why a session was not opened.
#[derive(Debug, thiserror::Error)]
#[error("the review workbench holds {MAX_SESSIONS} sessions already: log in again later")]
pub struct Full;

/// 32 random bytes as lowercase hex.
fn random_hex() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

fn slot(id: &str) -> String {
    Hash::of(id.as_bytes()).to_string()
}

impl Sessions {
    /// Opens a session for `reviewer`: (the session id for the cookie, the session).
    pub fn open(&self, reviewer: &str, now: Instant) -> Result<(String, Session), Full> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|_, h| h.expires > now);
        if held.len() >= MAX_SESSIONS {
            return Err(Full);
        }
        let id = random_hex();
        let session = Session {
            reviewer: reviewer.to_string(),
            csrf: random_hex(),
        };
        held.insert(
            slot(&id),
            Held {
                session: session.clone(),
                expires: now + SESSION_TTL,
            },
        );
        Ok((id, session))
    }

    /// The live session of `id`, if any.
    pub fn get(&self, id: &str, now: Instant) -> Option<Session> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(&slot(id))
            .filter(|h| h.expires > now)
            .map(|h| h.session.clone())
    }

    /// Ends the session of `id` (logout).
    pub fn close(&self, id: &str) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(&slot(id));
    }
}

/// Whether `given` is the session's CSRF token, compared in constant time.
pub fn csrf_matches(session: &Session, given: Option<&str>) -> bool {
    use subtle::ConstantTimeEq;
    let given = given.unwrap_or("");
    given.len() == session.csrf.len() && bool::from(given.as_bytes().ct_eq(session.csrf.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_expire_close_and_check_their_csrf_token() {
        let t = Sessions::default();
        let now = Instant::now();
        let (id, s) = t.open("ada", now).unwrap();
        assert_eq!(id.len(), 64);
        assert_eq!(t.get(&id, now).unwrap().reviewer, "ada");
        assert!(t.get("nope", now).is_none());
        assert!(t.get(&id, now + SESSION_TTL).is_none(), "expired");
        assert!(csrf_matches(&s, Some(&s.csrf)));
        assert!(!csrf_matches(&s, Some(&s.csrf[..63])));
        assert!(!csrf_matches(&s, None));
        let mut wrong = s.csrf.clone();
        wrong.replace_range(..1, if wrong.starts_with('0') { "1" } else { "0" });
        assert!(!csrf_matches(&s, Some(&wrong)));
        t.close(&id);
        assert!(t.get(&id, now).is_none());
        let (other, _) = t.open("ada", now).unwrap();
        assert_ne!(other, id, "a fresh id each login");
    }
}
