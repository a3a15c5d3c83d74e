//! How a command fails: a message on stderr and an exit code (2, or by the error's fault).

use super::*;

pub(super) fn fail(msg: impl std::fmt::Display) -> u8 {
    eprintln!("seal: {msg}");
    2
}

/// Prints an error and returns the exit code its fault calls for (1 the caller's, 2 else).
pub(super) fn fail_by_fault<E: seal_core::fault::HasFault + std::fmt::Display>(e: E) -> u8 {
    eprintln!("seal: {}", terminal_safe(&e.to_string()));
    e.fault().exit_code()
}
