//! Redaction of text `wmco diagnose` copies from the cluster (operator log lines, Event messages, raw objects):
//! anything that looks like a credential is replaced by `[REDACTED]` before it is printed or archived — PEM blocks
//! (keys, and any other PEM body), `Bearer` tokens, JSON Web Tokens (ServiceAccount tokens), Kubernetes bootstrap
//! tokens (`abcdef.0123456789abcdef`) and the values of fields named like a secret (`token`, `password`, …).
//! Redaction errs on the side of hiding: a diagnosis loses a value, never leaks one.

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Field names whose values are always redacted (compared case-insensitively, as `name=value`, `name: value` or
/// `"name":"value"`).
const SECRET_FIELDS: [&str; 7] =
    ["token", "password", "secret", "bearer", "authorization", "private_key", "privatekey"];

/// `text` with every credential-looking value replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    let text = redact_pem(text);
    let text = redact_words(&text);
    redact_fields(&text)
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
