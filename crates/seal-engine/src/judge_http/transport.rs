//! A request that got no answer, told the one way for the attempts and the health probe: its
//! error class and the error with its causes on one line.

use super::parse::ErrorClass;

/// The class of a request that failed before an answer: timed out, could not connect, or
/// another transport failure.
pub(super) fn class_of_send(e: &reqwest::Error) -> ErrorClass {
    if e.is_timeout() {
        ErrorClass::Timeout
    } else if e.is_connect() {
        ErrorClass::Connect
    } else {
        ErrorClass::Transport
    }
}

/// The error and each of its sources, `: `-joined.
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}
