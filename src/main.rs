//! The `seal` binary: parse arguments, run the command, map the result to an exit code.
//!
//! One thing lives here rather than in the library (which forbids `unsafe`): a command whose
//! output goes to a pipe that closes early (`seal verify --all | head -1`) ends like coreutils,
//! killed by SIGPIPE, instead of panicking on EPIPE in `println!` (exit 101). Rust ignores
//! SIGPIPE by default; the commands that print restore the default disposition. The daemons
//! keep ignoring it: a supervisor that closes their stdout must not stop them.

fn main() -> std::process::ExitCode {
    seal::cli::main_with(default_sigpipe)
}

/// SIGPIPE back to its default: the process ends at its first write to a closed pipe.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: `signal` with SIG_DFL installs no handler and touches no memory of ours; it runs
    // before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
