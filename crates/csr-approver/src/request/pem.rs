//! PEM decoding of `spec.request`: finds the first PEM block leniently enough to read a subject (rule A3) and
//! records every deviation from "exactly one `CERTIFICATE REQUEST` block followed by whitespace" (rule B1).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{EncodingDefect, UnreadableRequest};

const BEGIN: &[u8] = b"-----BEGIN ";
const DASHES: &[u8] = b"-----";
/// The only PEM label rule B1 accepts.
pub(crate) const REQUEST_LABEL: &str = "CERTIFICATE REQUEST";

/// The DER of the first PEM block, and the defects of the PEM text around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedPem {
    pub(crate) der: Vec<u8>,
    pub(crate) defects: Vec<EncodingDefect>,
}

/// Decodes the first PEM block of `text`.
pub(crate) fn decode_first_block(text: &[u8]) -> Result<DecodedPem, UnreadableRequest> {
    let mut defects = Vec::new();
    let begin = find(text, BEGIN).ok_or(UnreadableRequest::NoPemBlock)?;
    if !text[..begin].iter().all(u8::is_ascii_whitespace) {
        defects.push(EncodingDefect::TextBeforeBlock);
    }
    let after_begin = &text[begin + BEGIN.len()..];
    let label_end = find(after_begin, DASHES).ok_or(UnreadableRequest::UnterminatedPemBlock)?;
    let label = &after_begin[..label_end];
    if label.contains(&b'\n') {
        return Err(UnreadableRequest::UnterminatedPemBlock);
    }
    let label_text = String::from_utf8_lossy(label).into_owned();
    if label_text != REQUEST_LABEL {
        defects.push(EncodingDefect::PemLabel { label: label_text.clone() });
    }
    let body_and_rest = &after_begin[label_end + DASHES.len()..];
    let end_marker = [b"-----END ", label, DASHES].concat();
    let body_end = find(body_and_rest, &end_marker).ok_or(UnreadableRequest::UnterminatedPemBlock)?;
    let body: Vec<u8> = body_and_rest[..body_end].iter().copied().filter(|byte| !byte.is_ascii_whitespace()).collect();
    let der = STANDARD.decode(&body).map_err(|_| UnreadableRequest::PemBase64)?;
    let after_block = &body_and_rest[body_end + end_marker.len()..];
    if find(after_block, BEGIN).is_some() {
        defects.push(EncodingDefect::SecondPemBlock);
    } else if !after_block.iter().all(u8::is_ascii_whitespace) {
        defects.push(EncodingDefect::TextAfterBlock);
    }
    Ok(DecodedPem { der, defects })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "MAMCAQA=";

    fn block(label: &str) -> String {
        format!("-----BEGIN {label}-----\n{BODY}\n-----END {label}-----\n")
    }

    #[test]
    fn one_clean_block_has_no_defects() {
        let decoded = decode_first_block(block(REQUEST_LABEL).as_bytes()).unwrap();
        assert_eq!(decoded, DecodedPem { der: vec![0x30, 0x03, 0x02, 0x01, 0x00], defects: vec![] });
    }

    #[test]
    fn surrounding_whitespace_is_fine() {
        let text = format!("\n  {}\n\n", block(REQUEST_LABEL));
        assert_eq!(decode_first_block(text.as_bytes()).unwrap().defects, vec![]);
    }

    #[test]
    fn second_block_and_trailing_text_are_defects() {
        let two = format!("{}{}", block(REQUEST_LABEL), block(REQUEST_LABEL));
        assert_eq!(decode_first_block(two.as_bytes()).unwrap().defects, vec![EncodingDefect::SecondPemBlock]);
        let trailing = format!("{}junk", block(REQUEST_LABEL));
        assert_eq!(decode_first_block(trailing.as_bytes()).unwrap().defects, vec![EncodingDefect::TextAfterBlock]);
        let leading = format!("junk{}", block(REQUEST_LABEL));
        assert_eq!(decode_first_block(leading.as_bytes()).unwrap().defects, vec![EncodingDefect::TextBeforeBlock]);
    }

    #[test]
    fn other_label_is_a_defect() {
        let decoded = decode_first_block(block("NEW CERTIFICATE REQUEST").as_bytes()).unwrap();
        assert_eq!(decoded.defects, vec![EncodingDefect::PemLabel { label: "NEW CERTIFICATE REQUEST".into() }]);
    }

    #[test]
    fn unreadable_inputs() {
        assert_eq!(decode_first_block(b"no pem here"), Err(UnreadableRequest::NoPemBlock));
        assert_eq!(
            decode_first_block(b"-----BEGIN CERTIFICATE REQUEST-----\nMAMCAQA=\n"),
            Err(UnreadableRequest::UnterminatedPemBlock)
        );
        let bad_base64 = "-----BEGIN CERTIFICATE REQUEST-----\nM*A=\n-----END CERTIFICATE REQUEST-----\n";
        assert_eq!(decode_first_block(bad_base64.as_bytes()), Err(UnreadableRequest::PemBase64));
        let headers =
            "-----BEGIN CERTIFICATE REQUEST-----\nProc-Type: 4\n\nMAMCAQA=\n-----END CERTIFICATE REQUEST-----";
        assert_eq!(decode_first_block(headers.as_bytes()), Err(UnreadableRequest::PemBase64));
    }
}
