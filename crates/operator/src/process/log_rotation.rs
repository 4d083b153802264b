//! The node services' log rotation from the Go operator's environment variables (wmco-anchor.md §8.7):
//! `SERVICES_LOG_FILE_SIZE` (a Kubernetes quantity of bytes, e.g. `100Mi`), `SERVICES_LOG_FILE_AGE` and
//! `SERVICES_LOG_FLUSH_INTERVAL` (Go durations, e.g. `168h`, `1h30m`, `5s`). `wmco run` parses them as flags, so a
//! value that cannot be used stops the operator at start with an error naming it, as the Go operator does.

use std::time::Duration;

use jiff::SignedDuration;

/// The binary and decimal suffixes of a Kubernetes quantity, with their factors.
const QUANTITY_SUFFIXES: [(&str, u64); 12] = [
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
    ("Ei", 1 << 60),
    ("k", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("P", 1_000_000_000_000_000),
    ("E", 1_000_000_000_000_000_000),
];

/// A log file size: a non-negative Kubernetes quantity (`1048576`, `100M`, `100Mi`, `1.5Gi`) in whole bytes.
///
/// ```
/// use wmco_operator::process::parse_log_file_size;
/// assert_eq!(parse_log_file_size("100Mi"), Ok(100 * 1024 * 1024));
/// assert_eq!(parse_log_file_size("1.5k"), Ok(1500));
/// assert!(parse_log_file_size("-1M").is_err());
/// ```
///
/// # Errors
/// A message saying what a usable value looks like.
pub fn parse_log_file_size(text: &str) -> Result<u64, String> {
    let refuse = || format!("{text:?} is not a size: use a non-negative Kubernetes quantity such as 100Mi or 500M");
    let trimmed = text.trim();
    let (number, factor) = QUANTITY_SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| trimmed.strip_suffix(suffix).map(|number| (number, *factor)))
        .unwrap_or((trimmed, 1));
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(refuse());
    }
    let whole: u128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| refuse())? };
    let scale = 10_u128.checked_pow(u32::try_from(fraction.len()).map_err(|_| refuse())?).ok_or_else(refuse)?;
    let fraction: u128 = if fraction.is_empty() { 0 } else { fraction.parse().map_err(|_| refuse())? };
    let bytes = (whole * scale + fraction).checked_mul(u128::from(factor)).ok_or_else(refuse)? / scale;
    u64::try_from(bytes).map_err(|_| refuse())
}

/// A non-negative Go duration (`168h`, `1h30m`, `90s`, `500ms`).
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::process::parse_log_duration;
/// assert_eq!(parse_log_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_log_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert!(parse_log_duration("-5s").is_err());
/// ```
///
/// # Errors
/// A message saying what a usable value looks like.
pub fn parse_log_duration(text: &str) -> Result<Duration, String> {
    let refuse = || format!("{text:?} is not a duration: use a non-negative Go duration such as 168h, 1h30m or 5s");
    let trimmed = text.trim();
    if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(refuse());
    }
    let parsed: SignedDuration = trimmed.parse().map_err(|_| refuse())?;
    Duration::try_from(parsed).map_err(|_| refuse())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_every_quantity_suffix_and_refuse_the_rest() {
        assert_eq!(parse_log_file_size("0"), Ok(0));
        assert_eq!(parse_log_file_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_log_file_size("100M"), Ok(100_000_000));
        assert_eq!(parse_log_file_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_log_file_size(".5Ki"), Ok(512));
        assert_eq!(parse_log_file_size("2E"), Ok(2_000_000_000_000_000_000));
        for bad in ["", "M", "1.2.3", "10 MB", "1e3", "-1", "10m", "100000E", "x"] {
            let error = parse_log_file_size(bad).expect_err(bad);
            assert!(error.contains("Kubernetes quantity"), "{error}");
        }
    }

    #[test]
    fn durations_are_go_durations_and_never_negative() {
        assert_eq!(parse_log_duration("168h"), Ok(Duration::from_secs(168 * 3600)));
        assert_eq!(parse_log_duration("2h45m"), Ok(Duration::from_secs(9900)));
        assert_eq!(parse_log_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_log_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "5", "-5s", "h", "five seconds", "P1D"] {
            let error = parse_log_duration(bad).expect_err(bad);
            assert!(error.contains("Go duration"), "{error}");
        }
    }
}
