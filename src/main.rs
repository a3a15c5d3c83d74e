//! The `seal` binary: parse arguments, run the command, map the result to an exit code.
//!
//! One thing lives here rather than in the library (which forbids `unsafe`): a command whose
//! output goes to a pipe that closes early (`seal verify --all | head -1`) ends like coreutils,
//! killed by SIGPIPE, instead of panicking on EPIPE in `println!` (exit 101). Rust ignores
//! SIGPIPE by default; the commands that print restore the default disposition. The daemons
//! keep ignoring it: a supervisor that closes their stdout must not stop them.

/// jemalloc instead of glibc's malloc. Why: a fifth of the daemon's CPU under load was glibc's
/// `malloc`/`free` of the JSON trees every request, roll and postguard audit builds; jemalloc's
/// thread caches halve the CPU a run at 256 runs in flight for ~8% more peak memory, where
/// mimalloc had cost 45-150% more (docs/BENCHMARKS.md, "The allocator: jemalloc"). In the
/// binary only: the library crates, their tests and the fuzz targets keep the system allocator.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
