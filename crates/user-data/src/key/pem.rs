//! The first PEM block of a text: its label and decoded body (RFC 7468, with legacy `Proc-Type` headers noticed).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A decoded PEM block.
pub(crate) struct PemBlock {
    /// The label between `-----BEGIN ` and `-----`.
    pub(crate) label: String,
    /// The base64-decoded body.
    pub(crate) body: Vec<u8>,
    /// True when the block carries a legacy `Proc-Type: 4,ENCRYPTED` header.
    pub(crate) legacy_encrypted: bool,
}

/// Why the text is not a PEM block.
pub(crate) enum PemProblem {
    /// No `-----BEGIN ` line at all.
    NoBlock,
    /// A BEGIN line without its END line, or a body that is not base64.
    Damaged(&'static str),
}

/// Reads the first PEM block of `text`.
pub(crate) fn first_block(text: &str) -> Result<PemBlock, PemProblem> {
    const BEGIN: &str = "-----BEGIN ";
    let begin = text.find(BEGIN).ok_or(PemProblem::NoBlock)?;
    let after_begin = &text[begin + BEGIN.len()..];
    let label_end = after_begin.find("-----").ok_or(PemProblem::Damaged("malformed BEGIN line"))?;
    let label = &after_begin[..label_end];
    let body_start = &after_begin[label_end + "-----".len()..];
    let end_marker = format!("-----END {label}-----");
    let body_end = body_start.find(&end_marker).ok_or(PemProblem::Damaged("no matching END line"))?;
    let body_text = &body_start[..body_end];
    let legacy_encrypted = body_text.lines().any(|line| line.trim() == "Proc-Type: 4,ENCRYPTED");
    let base64_text: String = body_text
        .lines()
        .filter(|line| !line.contains(':'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    let body = STANDARD.decode(base64_text.as_bytes()).map_err(|_| PemProblem::Damaged("the body is not base64"))?;
    Ok(PemBlock { label: label.to_owned(), body, legacy_encrypted })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_label_and_body_after_leading_text() {
        let block = first_block("comment\n-----BEGIN X-----\nAAEC\n-----END X-----\n").ok().unwrap();
        assert_eq!((block.label.as_str(), block.body.as_slice(), block.legacy_encrypted), ("X", &[0, 1, 2][..], false));
    }

    #[test]
    fn notices_legacy_encryption_headers() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert!(first_block(text).ok().unwrap().legacy_encrypted);
    }

    #[test]
    fn refuses_missing_end_and_bad_base64() {
        assert!(matches!(first_block("-----BEGIN X-----\nAAAA\n"), Err(PemProblem::Damaged("no matching END line"))));
        assert!(matches!(
            first_block("-----BEGIN X-----\n!!\n-----END X-----"),
            Err(PemProblem::Damaged("the body is not base64"))
        ));
        assert!(matches!(first_block("ssh-ed25519 AAAA"), Err(PemProblem::NoBlock)));
    }
}
