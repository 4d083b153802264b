//! Redaction of text that leaves the operator's hands — what `wmco diagnose` copies from the cluster (operator log
//! lines, Event messages, raw objects) and what a command transcript records of a host's commands and output: anything
//! that looks like a credential is replaced by `[REDACTED]` before it is printed, archived or written — PEM blocks
//! (keys, and any other PEM body), `Bearer` tokens, JSON Web Tokens (ServiceAccount tokens), Kubernetes bootstrap
//! tokens (`abcdef.0123456789abcdef`), the values of fields named like a secret (`token`, `password`, …), and Base64
//! words whose decoded text (UTF-8, or UTF-16LE as PowerShell's `-EncodedCommand` carries a script) holds any of
//! these (a bootstrap kubeconfig's Base64, a `client-key-data` PEM). [`redact_command`] also decodes a command line's
//! `-EncodedCommand` script so a transcript can show it. Redaction errs on the side of hiding: a diagnosis or a
//! transcript loses a value, never leaks one.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Field names whose values are always redacted (compared case-insensitively, as `name=value`, `name: value` or
/// `"name":"value"`).
const SECRET_FIELDS: [&str; 7] =
    ["token", "password", "secret", "bearer", "authorization", "private_key", "privatekey"];

/// Base64 words shorter than this are left alone (they hold no credential worth decoding, and short words are
/// everywhere).
const MIN_ENCODED_WORD: usize = 24;

/// `text` with every credential-looking value replaced by [`REDACTED`].
///
/// ```
/// use wmco_ssh_transport::redact::redact;
/// assert_eq!(redact("curl -H 'Authorization: Bearer s3cr3t' https://api"), "curl -H 'Authorization: [REDACTED] [REDACTED]' https://api");
/// assert_eq!(redact("users:\n- user:\n    token: abcdef.0123456789abcdef\n"), "users:\n- user:\n    token: [REDACTED]\n");
/// assert_eq!(redact("sc.exe query kubelet"), "sc.exe query kubelet");
/// ```
pub fn redact(text: &str) -> String {
    let text = redact_pem(text);
    let text = redact_encoded_words(&text);
    let text = redact_words(&text);
    redact_fields(&text)
}

/// A command line made fit for a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedCommand {
    /// The line, redacted. When its `-EncodedCommand` script held a credential, the argument is the Base64 of the
    /// redacted script, so the line still runs (with `[REDACTED]` in place of the value).
    pub line: String,
    /// The decoded `-EncodedCommand` script (also `-enc`, `-ec`, `-e`), redacted; `None` when the line has none or
    /// its argument is not Base64 of UTF-16LE text.
    pub script: Option<String>,
}

/// Redacts a command line and decodes its `-EncodedCommand` script, if any.
///
/// ```
/// use base64::Engine as _;
/// use wmco_ssh_transport::redact::redact_command;
/// let encode = |script: &str| {
///     let bytes: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
///     base64::engine::general_purpose::STANDARD.encode(bytes)
/// };
/// let line = format!("powershell.exe -NoProfile -EncodedCommand {}", encode("$t = 'token: abc123'"));
/// let redacted = redact_command(&line);
/// assert_eq!(redacted.script.as_deref(), Some("$t = 'token: [REDACTED]"));
/// assert_eq!(redacted.line, format!("powershell.exe -NoProfile -EncodedCommand {}", encode("$t = 'token: [REDACTED]")));
/// assert_eq!(redact_command("sc.exe query kubelet").script, None);
/// ```
pub fn redact_command(line: &str) -> RedactedCommand {
    let Some((start, end, script)) = encoded_script(line) else {
        return RedactedCommand { line: redact(line), script: None };
    };
    let redacted_script = redact(&script);
    let line = if redacted_script == script {
        redact(line)
    } else {
        let encoded = STANDARD.encode(utf16le(&redacted_script));
        redact(&format!("{}{encoded}{}", &line[..start], &line[end..]))
    };
    RedactedCommand { line, script: Some(redacted_script) }
}

/// The byte range of the argument of the first `-EncodedCommand` flag (`-enc`, `-ec`, `-e`, any case, `-` or `/`)
/// in `line`, and its decoded script.
fn encoded_script(line: &str) -> Option<(usize, usize, String)> {
    let mut words = whitespace_words(line).into_iter();
    while let Some((_, word)) = words.next() {
        let flag = word.trim_start_matches(['-', '/']).to_ascii_lowercase();
        if word.starts_with(['-', '/']) && matches!(flag.as_str(), "encodedcommand" | "enc" | "ec" | "e") {
            let (start, argument) = words.next()?;
            let quoted = argument.trim_matches('"');
            let offset = argument.find(quoted).unwrap_or(0);
            let start = start + offset;
            let script = decode_utf16le(&lenient_base64().decode(quoted).ok()?)?;
            return Some((start, start + quoted.len(), script));
        }
    }
    None
}

/// The words of `text` split at whitespace, each with its byte offset.
fn whitespace_words(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (index, character) in text.char_indices() {
        match (character.is_whitespace(), start) {
            (true, Some(from)) => {
                words.push((from, &text[from..index]));
                start = None;
            }
            (false, None) => start = Some(index),
            _ => {}
        }
    }
    if let Some(from) = start {
        words.push((from, &text[from..]));
    }
    words
}

/// Base64 with or without padding.
fn lenient_base64() -> GeneralPurpose {
    GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// `bytes` as UTF-16LE text, if they are (an even length, valid code units).
fn decode_utf16le(bytes: &[u8]) -> Option<String> {
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    String::from_utf16(&units).ok()
}

/// Replaces each Base64 word of at least [`MIN_ENCODED_WORD`] characters whose decoded text (UTF-8, else UTF-16LE)
/// holds something [`redact`] hides.
fn redact_encoded_words(text: &str) -> String {
    let is_base64_char = |character: char| character.is_ascii_alphanumeric() || "+/=".contains(character);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut run_start: Option<usize> = None;
    let check = |out: &mut String, copied: &mut usize, start: usize, end: usize| {
        let word = &text[start..end];
        if word.len() >= MIN_ENCODED_WORD && holds_credential(word) {
            out.push_str(&text[*copied..start]);
            out.push_str(REDACTED);
            *copied = end;
        }
    };
    for (index, character) in text.char_indices() {
        match (is_base64_char(character), run_start) {
            (true, None) => run_start = Some(index),
            (false, Some(start)) => {
                check(&mut out, &mut copied, start, index);
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(start) = run_start {
        check(&mut out, &mut copied, start, text.len());
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `word` is Base64 of text that [`redact`] changes, read as UTF-8 or as UTF-16LE (ASCII text in UTF-16LE
/// is valid UTF-8 too, with a NUL after each character, so both readings are tried).
fn holds_credential(word: &str) -> bool {
    let Ok(bytes) = lenient_base64().decode(word) else { return false };
    let changed = |text: String| redact(&text) != text;
    decode_utf16le(&bytes).is_some_and(changed) || String::from_utf8(bytes).is_ok_and(changed)
}

/// Replaces each `-----BEGIN …-----` … `-----END …-----` block (or, without an END, the rest of the text) with
/// `-----BEGIN …----- [REDACTED] -----END …-----`.
fn redact_pem(text: &str) -> String {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        out.push_str(&rest[..start]);
        let block = &rest[start..];
        let header_end = block[BEGIN.len()..].find("-----").map(|offset| BEGIN.len() + offset + 5);
        let Some(header_end) = header_end else {
            out.push_str(REDACTED);
            return out;
        };
        out.push_str(&block[..header_end]);
        out.push(' ');
        out.push_str(REDACTED);
        match block[header_end..].find(END) {
            Some(end_start) => {
                let footer = &block[header_end + end_start..];
                let footer_end =
                    footer[END.len()..].find("-----").map_or(footer.len(), |offset| END.len() + offset + 5);
                out.push(' ');
                out.push_str(&footer[..footer_end]);
                rest = &footer[footer_end..];
            }
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Replaces JSON Web Tokens, bootstrap tokens and the word after `Bearer`.
fn redact_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_bearer = false;
    for (is_word, piece) in split_words(text) {
        if !is_word {
            out.push_str(piece);
            continue;
        }
        if after_bearer || is_jwt(piece) || is_bootstrap_token(piece) {
            out.push_str(REDACTED);
            after_bearer = false;
        } else {
            after_bearer = piece.eq_ignore_ascii_case("bearer");
            out.push_str(piece);
        }
    }
    out
}

/// `text` cut into runs of token characters (letters, digits, `-`, `_`, `.`, `/`, `+`, `=`) and the rest.
fn split_words(text: &str) -> Vec<(bool, &str)> {
    let is_token_char = |character: char| character.is_ascii_alphanumeric() || "-_./+=".contains(character);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut current: Option<bool> = None;
    for (index, character) in text.char_indices() {
        let kind = is_token_char(character);
        match current {
            Some(previous) if previous == kind => {}
            Some(previous) => {
                pieces.push((previous, &text[start..index]));
                start = index;
                current = Some(kind);
            }
            None => current = Some(kind),
        }
    }
    if let Some(kind) = current {
        pieces.push((kind, &text[start..]));
    }
    pieces
}

/// A JSON Web Token: three base64url parts, the first starting `eyJ` (`{"`).
fn is_jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts.iter().all(|part| {
            part.len() >= 2 && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
        })
}

/// A Kubernetes bootstrap token: `[a-z0-9]{6}.[a-z0-9]{16}`.
fn is_bootstrap_token(word: &str) -> bool {
    let lower_alphanumeric = |part: &str| part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    match word.split_once('.') {
        Some((id, secret)) => {
            id.len() == 6 && secret.len() == 16 && lower_alphanumeric(id) && lower_alphanumeric(secret)
        }
        None => false,
    }
}

/// Replaces the value after `name=`, `name: ` or `"name":` for the names in [`SECRET_FIELDS`].
fn redact_fields(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some((name_end, value_start)) = next_secret_field(&lower, search) {
        let value_end = value_end(text, value_start);
        if value_end > value_start && &text[value_start..value_end] != REDACTED {
            out.push_str(&text[copied..value_start]);
            out.push_str(REDACTED);
            copied = value_end;
        }
        search = value_end.max(name_end);
    }
    out.push_str(&text[copied..]);
    out
}

/// The end of the next secret field name at or after `from` in `lower`, and where its value starts.
fn next_secret_field(lower: &str, from: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for field in SECRET_FIELDS {
        let mut position = from;
        while let Some(found) = lower[position..].find(field) {
            let start = position + found;
            let end = start + field.len();
            // `client_secret`, `bearer_token`: a prefix joined by `_` or `-` still names a secret.
            let before_ok = lower[..start].chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric());
            let after = &lower[end..];
            let separator =
                ["\":\"", "\": \"", "=", ": ", "\":"].into_iter().find(|separator| after.starts_with(separator));
            if let (true, Some(separator)) = (before_ok, separator) {
                if best.is_none_or(|(best_end, _)| end < best_end) {
                    best = Some((end, end + separator.len()));
                }
                break;
            }
            position = end;
        }
    }
    best
}

/// Where a field value starting at `start` ends: at a quote, a comma, whitespace, `}` or `&`.
fn value_end(text: &str, start: usize) -> usize {
    text[start..]
        .find(|c: char| c == '"' || c == ',' || c == '}' || c == '&' || c.is_whitespace())
        .map_or(text.len(), |offset| start + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_blocks_lose_their_body_and_keep_their_labels() {
        let line =
            "loaded key -----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk\\n-----END OPENSSH PRIVATE KEY----- ok";
        assert_eq!(
            redact(line),
            "loaded key -----BEGIN OPENSSH PRIVATE KEY----- [REDACTED] -----END OPENSSH PRIVATE KEY----- ok"
        );
        assert_eq!(redact("x -----BEGIN RSA PRIVATE KEY-----\nMIIE"), "x -----BEGIN RSA PRIVATE KEY----- [REDACTED]");
        assert_eq!(redact("-----BEGIN broken"), "[REDACTED]");
    }

    #[test]
    fn tokens_are_redacted_wherever_they_stand() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLWJ5dGVz";
        assert_eq!(redact(&format!("token {jwt} used")), "token [REDACTED] used");
        assert_eq!(redact("Authorization: Bearer abc123def456"), "Authorization: [REDACTED] [REDACTED]");
        assert_eq!(redact("header bearer s3cr3t-value, next"), "header bearer [REDACTED], next");
        assert_eq!(redact("bootstrap abcdef.0123456789abcdef done"), "bootstrap [REDACTED] done");
        assert_eq!(redact(r#"{"token":"s3cr3t","user":"a"}"#), r#"{"token":"[REDACTED]","user":"a"}"#);
        assert_eq!(redact("password=hunter2 user=admin"), "password=[REDACTED] user=admin");
        assert_eq!(redact("client_secret: xyz and more"), "client_secret: [REDACTED] and more");
    }

    #[test]
    fn base64_of_a_credential_is_redacted_and_other_base64_kept() {
        let kubeconfig = "apiVersion: v1\nusers:\n- name: kubelet\n  user:\n    token: abcdef.0123456789abcdef\n";
        let blob = STANDARD.encode(kubeconfig);
        assert_eq!(redact(&format!("echo {blob} > C:/k/bootstrap")), "echo [REDACTED] > C:/k/bootstrap");
        let pem = STANDARD.encode("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI\n-----END EC PRIVATE KEY-----\n");
        assert_eq!(redact(&format!("client-key-data: {pem}")), "client-key-data: [REDACTED]");
        let script = STANDARD.encode(utf16le("Write-Output 'Authorization: Bearer abc'"));
        assert_eq!(redact(&format!("x {script} y")), "x [REDACTED] y");
        let harmless = STANDARD.encode(utf16le("Get-Service kubelet | ConvertTo-Json"));
        let digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        for line in [format!("powershell.exe -EncodedCommand {harmless}"), format!("{digest}  C:/k/kubelet.exe")] {
            assert_eq!(redact(&line), line);
        }
    }

    #[test]
    fn an_encoded_script_is_decoded_and_redacted_and_the_line_re_encoded() {
        let script = "$k = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----'\nexit 0";
        let line = format!("cmd.exe /c --% powershell.exe -NoLogo -EncodedCommand {}\nexit $LASTEXITCODE", {
            STANDARD.encode(utf16le(script))
        });
        let redacted = redact_command(&line);
        let expected_script =
            "$k = '-----BEGIN OPENSSH PRIVATE KEY----- [REDACTED] -----END OPENSSH PRIVATE KEY-----'\nexit 0";
        assert_eq!(redacted.script.as_deref(), Some(expected_script));
        assert_eq!(
            redacted.line,
            format!(
                "cmd.exe /c --% powershell.exe -NoLogo -EncodedCommand {}\nexit $LASTEXITCODE",
                STANDARD.encode(utf16le(expected_script))
            )
        );
        assert!(!redacted.line.contains("b3Bl"));
        let clean = format!("powershell.exe -enc \"{}\"", STANDARD.encode(utf16le("hostname")));
        assert_eq!(redact_command(&clean), RedactedCommand { line: clean.clone(), script: Some("hostname".into()) });
        let undecodable = "powershell.exe -EncodedCommand not-base64!";
        assert_eq!(redact_command(undecodable), RedactedCommand { line: undecodable.into(), script: None });
    }

    #[test]
    fn ordinary_lines_are_kept() {
        for line in [
            "2026-11-26T10:00:00Z INFO reconcile{instance=wmco/byoh-10-0-0-5 host=10.0.0.5 step=probe}: probing",
            r#"{"level":"WARN","message":"pin_host_key failed","span":{"instance":"wmco/byoh-10-0-0-5"}}"#,
            "CSR csr-7xk2q approved: every rule A1-F4 passed (node win-1.example.com)",
            "tokens minted: 3",
        ] {
            assert_eq!(redact(line), line);
        }
    }
}
