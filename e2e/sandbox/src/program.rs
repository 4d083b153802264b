//! What the sandbox's programs (`wmco-fault-campaign`, `wmco-soak`) share: the seed they print, and how a run's
//! verdict becomes an exit code.

use std::process::ExitCode;

/// `seed`, or the seconds since the epoch when none was given (printed by the caller, so a run can be replayed).
///
/// ```
/// assert_eq!(wmco_sandbox::program::seed_or_clock(Some(7)), 7);
/// assert!(wmco_sandbox::program::seed_or_clock(None) > 0);
/// ```
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |elapsed| elapsed.as_secs())
    })
}

/// 0 when the run passed, 1 when it found a failure, 2 (with the error on standard error, named after `program`)
/// when it could not run.
///
/// ```
/// use std::process::ExitCode;
/// assert_eq!(wmco_sandbox::program::exit_code("demo", Ok(true)), ExitCode::SUCCESS);
/// assert_eq!(wmco_sandbox::program::exit_code("demo", Ok(false)), ExitCode::FAILURE);
/// ```
pub fn exit_code(program: &str, verdict: anyhow::Result<bool>) -> ExitCode {
    match verdict {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("{program}: error: {error:#}");
            ExitCode::from(2)
        }
    }
}
