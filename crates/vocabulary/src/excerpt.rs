//! Bounded excerpts of text a remote host printed, for error messages, Events and logs: a host that prints
//! megabytes (or one very long line) must not turn into a megabyte-long error, condition or Event note.

/// How many characters of a host's text an error message quotes.
pub const EXCERPT_CHARS: usize = 256;

/// The first [`EXCERPT_CHARS`] characters of `text`, trimmed, with a marker saying how long the whole was when it
/// was cut.
///
/// ```
/// use wmco_vocabulary::excerpt;
/// assert_eq!(excerpt("  Access is denied.\r\n"), "Access is denied.");
/// let long = "[".repeat(10_000);
/// let quoted = excerpt(&long);
/// assert!(quoted.starts_with("[[[") && quoted.ends_with("… (10000 bytes in all)"));
/// assert!(quoted.chars().count() < 300);
/// ```
pub fn excerpt(text: &str) -> String {
    let trimmed = text.trim();
    match trimmed.char_indices().nth(EXCERPT_CHARS) {
        None => trimmed.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &trimmed[..cut], trimmed.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole_and_long_text_is_cut_on_a_character_boundary() {
        let exact = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
        let longer = "é".repeat(EXCERPT_CHARS + 1);
        let quoted = excerpt(&longer);
        assert_eq!(quoted, format!("{exact}… ({} bytes in all)", longer.len()));
    }
}
