//! Redaction of text that leaves the operator's hands — what `wmco diagnose` copies from the cluster (operator log
//! lines, Event messages, raw objects), what a command transcript records of a host's commands and output, the
//! operator's own log, the Events it publishes and the messages it writes into records: anything that looks like a
//! credential is replaced by `[REDACTED]` before it is printed, archived or written.
//!
//! What is hidden:
//! - PEM blocks (keys, and any other PEM body; the labels stay);
//! - the user info of a URL (`http://user:pass@proxy:3128` becomes `http://[REDACTED]@proxy:3128`): all of it, with or
//!   without a password, since a token is often passed as the user name (`https://<token>@host`); scheme and host stay;
//! - the word after `Bearer`, and after `Basic` when it is Base64 of `user:password`;
//! - JSON Web Tokens (ServiceAccount tokens) and Kubernetes bootstrap tokens (`abcdef.0123456789abcdef`);
//! - the values of fields named like a secret (`token`, `password`, `secret`, `authorization`, a pull secret's `auth`,
//!   …), written `name=value`, `name: value`, `"name":"value"`, with spaces around the `=` or `:`
//!   (`password = x`, `$token = '…'`); a quoted value is hidden whole (TOML `authorization = "Basic …"`);
//! - Base64 words whose decoded text (UTF-8, or UTF-16LE as PowerShell's `-EncodedCommand` carries a script) holds any
//!   of these (a bootstrap kubeconfig's Base64, a `client-key-data` PEM) or is a `user:password` pair (a pull secret's
//!   `auth`).
//!
//! [`redact_command`] also decodes a command line's `-EncodedCommand` script so a transcript can show it. Redaction
//! errs on the side of hiding: a diagnosis or a transcript loses a value, never leaks one. Redacting twice changes
//! nothing more than redacting once.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Field names whose values are always redacted (compared case-insensitively, as `name=value`, `name: value` or
/// `"name":"value"`, with spaces or tabs around the `=` or `:`). `auth` is a pull secret's Base64 `user:password`.
const SECRET_FIELDS: [&str; 8] =
    ["token", "password", "secret", "bearer", "authorization", "private_key", "privatekey", "auth"];

/// Base64 words shorter than this are left alone (they hold no credential worth decoding, and short words are
/// everywhere).
const MIN_ENCODED_WORD: usize = 24;

/// `text` with every credential-looking value replaced by [`REDACTED`].
///
/// ```
/// use wmco_redact::redact;
/// assert_eq!(redact("curl -H 'Authorization: Bearer s3cr3t' https://api"), "curl -H 'Authorization: [REDACTED] [REDACTED]' https://api");
/// assert_eq!(redact("users:\n- user:\n    token: abcdef.0123456789abcdef\n"), "users:\n- user:\n    token: [REDACTED]\n");
/// assert_eq!(redact("sc.exe query kubelet"), "sc.exe query kubelet");
/// ```
pub fn redact(text: &str) -> String {
    let text = redact_pem(text);
    let text = redact_encoded_words(&text);
    let text = redact_url_userinfo(&text);
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
/// use wmco_redact::redact_command;
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
/// is valid UTF-8 too, with a NUL after each character, so both readings are tried), or of a `user:password` pair.
fn holds_credential(word: &str) -> bool {
    let Ok(bytes) = lenient_base64().decode(word) else { return false };
    if is_user_password(&bytes) {
        return true;
    }
    let changed = |text: String| redact(&text) != text;
    decode_utf16le(&bytes).is_some_and(changed) || String::from_utf8(bytes).is_ok_and(changed)
}

/// Whether `bytes` read as `user:password`, as a pull secret's `auth` and HTTP Basic credentials hold them:
/// printable ASCII without spaces, with a `:` between two non-empty parts.
fn is_user_password(bytes: &[u8]) -> bool {
    let Some(colon) = bytes.iter().position(|&byte| byte == b':') else { return false };
    colon > 0 && colon + 1 < bytes.len() && bytes.iter().all(u8::is_ascii_graphic)
}

/// Replaces the user info of every URL (`scheme://user:password@host` becomes `scheme://[REDACTED]@host`). The
/// authority ends at whitespace, `/`, `?`, `#`, `"`, `<`, `>`, `\` or a backquote, and its last `@` ends the user
/// info, so a password holding `'`, `,` or `;` (all allowed in user info) is hidden whole; the price is that a `@` later
/// in the same unbroken run of text hides the text before it too.
fn redact_url_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find("://") {
        let authority_start = search + found + "://".len();
        let after_scheme = text[..search + found].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric());
        let authority_end = text[authority_start..]
            .find(|c: char| c.is_whitespace() || "/?#\"<>\\`".contains(c))
            .map_or(text.len(), |offset| authority_start + offset);
        let userinfo_end = text[authority_start..authority_end].rfind('@').map(|at| authority_start + at);
        if let (true, Some(userinfo_end)) = (after_scheme, userinfo_end)
            && userinfo_end > authority_start
            && &text[authority_start..userinfo_end] != REDACTED
        {
            out.push_str(&text[copied..authority_start]);
            out.push_str(REDACTED);
            copied = userinfo_end;
        }
        search = authority_end;
    }
    out.push_str(&text[copied..]);
    out
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

/// Replaces JSON Web Tokens, bootstrap tokens, the word after `Bearer` and the Base64 `user:password` after
/// `Basic`. A `[REDACTED]` already there stays as it is.
fn redact_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = "";
    for (is_word, piece) in split_words(text) {
        if !is_word {
            out.push_str(piece);
            continue;
        }
        let after_bearer = previous.eq_ignore_ascii_case("bearer");
        let basic_credentials = previous.eq_ignore_ascii_case("basic")
            && lenient_base64().decode(piece).is_ok_and(|bytes| is_user_password(&bytes));
        let placeholder = piece == REDACTED.trim_matches(['[', ']']);
        if !placeholder && (after_bearer || basic_credentials || is_jwt(piece) || is_bootstrap_token(piece)) {
            out.push_str(REDACTED);
            previous = "";
        } else {
            out.push_str(piece);
            previous = piece;
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

/// Replaces the value of each field named in [`SECRET_FIELDS`] (see [`next_secret_field`]): a quoted value whole,
/// between its quotes, an unquoted one up to a quote, a comma, whitespace, `}` or `&`, unless it is a variable
/// reference ([`is_variable_reference`]).
fn redact_fields(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(field) = next_secret_field(&lower, search) {
        let value_end = match field.quote {
            Some(quote) => quoted_value_end(text, field.value_start, quote),
            None => value_end(text, field.value_start),
        };
        let value = &text[field.value_start..value_end];
        let variable = field.quote.is_none() && is_variable_reference(value);
        if !value.is_empty() && value != REDACTED && !variable {
            out.push_str(&text[copied..field.value_start]);
            out.push_str(REDACTED);
            copied = value_end;
        }
        search = value_end.max(field.name_end);
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether an unquoted value is a PowerShell or shell variable (`$t`, `$env:TOKEN`): it names where the secret is,
/// not the secret (`@{ 'X-aws-ec2-metadata-token' = $t }` stays as it runs).
fn is_variable_reference(value: &str) -> bool {
    value.strip_prefix('$').is_some_and(|name| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    })
}

/// A secret field found in a text.
struct SecretField {
    /// The end of its name.
    name_end: usize,
    /// Where its value starts (after an opening quote).
    value_start: usize,
    /// The quote around the value: `"`, `'` or `\"` (JSON inside a JSON string).
    quote: Option<&'static str>,
}

/// The next secret field at or after `from` in `lower`: a name of [`SECRET_FIELDS`] not preceded by a letter or
/// digit (`client_secret`, `$token`, `bearer_token` count), then [`separator_length`]'s separator.
fn next_secret_field(lower: &str, from: usize) -> Option<SecretField> {
    let mut best: Option<SecretField> = None;
    for field in SECRET_FIELDS {
        let mut position = from;
        while let Some(found) = lower[position..].find(field) {
            let start = position + found;
            let end = start + field.len();
            let before_ok = lower[..start].chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric());
            if let (true, Some((length, quote))) = (before_ok, separator_length(&lower[end..])) {
                if best.as_ref().is_none_or(|best| end < best.name_end) {
                    best = Some(SecretField { name_end: end, value_start: end + length, quote });
                }
                break;
            }
            position = end;
        }
    }
    best
}

/// The length of the separator at the start of `after` (the text after a field name), and the value's opening quote:
/// an optional closing quote of the name (`"`, `'`, `\"`), spaces or tabs, `=` or `:`, spaces or tabs, an optional
/// opening quote. A `:` directly followed by the value counts only after a quoted name (`"token":123`), so
/// `token:abc` in prose or a URL is no field.
fn separator_length(after: &str) -> Option<(usize, Option<&'static str>)> {
    const QUOTES: [&str; 3] = ["\\\"", "\"", "'"];
    let quote_at = |text: &str| QUOTES.into_iter().find(|quote| text.starts_with(quote));
    let blanks = |text: &str| text.len() - text.trim_start_matches([' ', '\t']).len();
    let name_quote = quote_at(after).map_or(0, str::len);
    let mut length = name_quote + blanks(&after[name_quote..]);
    let separator = after[length..].chars().next()?;
    if separator != '=' && separator != ':' {
        return None;
    }
    length += 1;
    let spaced = blanks(&after[length..]);
    length += spaced;
    let quote = quote_at(&after[length..]);
    if separator == ':' && name_quote == 0 && spaced == 0 && quote.is_none() {
        return None;
    }
    Some((length + quote.map_or(0, str::len), quote))
}

/// Where an unquoted field value starting at `start` ends: at a quote, a comma, whitespace, `}` or `&`.
fn value_end(text: &str, start: usize) -> usize {
    text[start..]
        .find(|c: char| c == '"' || c == ',' || c == '}' || c == '&' || c.is_whitespace())
        .map_or(text.len(), |offset| start + offset)
}

/// Where a value quoted with `quote` starting at `start` ends: at the closing quote (`\"` escapes a `"`, `''` stands
/// for a `'`), or at the end of the line when the quote is never closed.
fn quoted_value_end(text: &str, start: usize, quote: &str) -> usize {
    let line_end = text[start..].find('\n').map_or(text.len(), |offset| start + offset);
    let mut index = start;
    while index < line_end {
        let rest = &text[index..line_end];
        if quote == "'" && rest.starts_with("''") {
            index += 2;
        } else if quote == "\"" && rest.starts_with('\\') {
            index += rest.chars().nth(1).map_or(1, |c| 1 + c.len_utf8());
        } else if rest.starts_with(quote) {
            return index;
        } else {
            index += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    line_end
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
    fn url_user_info_is_redacted_and_scheme_and_host_kept() {
        let script = "[Environment]::SetEnvironmentVariable('HTTPS_PROXY', 'http://wmco:pr0xy-s3cret@proxy.example:3129', 'Machine')";
        assert_eq!(
            redact(script),
            "[Environment]::SetEnvironmentVariable('HTTPS_PROXY', 'http://[REDACTED]@proxy.example:3129', 'Machine')"
        );
        assert_eq!(redact("HTTPS_PROXY=https://u:p@proxy/x?y=1"), "HTTPS_PROXY=https://[REDACTED]@proxy/x?y=1");
        // A password may hold `'`, `,` and `;`; PowerShell doubles a `'`.
        assert_eq!(redact("'http://u:a'',b;c@proxy:3128'"), "'http://[REDACTED]@proxy:3128'");
        assert_eq!(redact(r#"{"httpsProxy":"http://u:p@proxy"}"#), r#"{"httpsProxy":"http://[REDACTED]@proxy"}"#);
        // A user name alone may be a token (`https://<token>@host`): hidden too.
        assert_eq!(redact("git clone https://ghp_abc@github.com/o/r"), "git clone https://[REDACTED]@github.com/o/r");
        for kept in ["http://proxy.example:3128", "see https://example.com/a@b", "ssh administrator@10.0.0.5"] {
            assert_eq!(redact(kept), kept);
        }
    }

    #[test]
    fn basic_credentials_are_redacted_like_bearer_tokens() {
        let credentials = STANDARD.encode("mirror:first-s3cret");
        assert_eq!(redact(&format!("Authorization: Basic {credentials}")), "Authorization: [REDACTED] [REDACTED]");
        assert_eq!(redact(&format!("header basic {credentials} sent")), "header basic [REDACTED] sent");
        assert_eq!(redact("basic checks passed"), "basic checks passed");
    }

    #[test]
    fn fields_with_spaces_around_the_separator_and_quoted_values_are_redacted_whole() {
        assert_eq!(redact("password = hunter2 user = admin"), "password = [REDACTED] user = admin");
        assert_eq!(redact("$token = 'abc def'\nexit 0"), "$token = '[REDACTED]'\nexit 0");
        assert_eq!(redact("$token = 'it''s secret' ; next"), "$token = '[REDACTED]' ; next");
        assert_eq!(
            redact("[host.\"https://mirror\".header]\n  authorization = \"Basic bWlycm9yOnM=\"\n"),
            "[host.\"https://mirror\".header]\n  authorization = \"[REDACTED]\"\n"
        );
        assert_eq!(redact(r#"{"password" : "a \"b\" c"}"#), r#"{"password" : "[REDACTED]"}"#);
        assert_eq!(redact(r#"{"msg":"{\"token\":\"s3cr3t\"}"}"#), r#"{"msg":"{\"token\":\"[REDACTED]\"}"}"#);
        assert_eq!(redact("secret:\tvalue"), "secret:\t[REDACTED]");
        assert_eq!(redact("password='unterminated\nnext line"), "password='[REDACTED]\nnext line");
    }

    #[test]
    fn a_pull_secrets_auth_is_redacted() {
        let auth = STANDARD.encode("mirror:s3");
        assert_eq!(
            redact(&format!(r#"{{"auths":{{"mirror.example":{{"auth":"{auth}","email":"a@b"}}}}}}"#)),
            r#"{"auths":{"mirror.example":{"auth":"[REDACTED]","email":"a@b"}}}"#
        );
        // Long enough to be searched as a Base64 word: hidden wherever it stands.
        let long = STANDARD.encode("mirror-user:first-s3cret-password");
        assert_eq!(redact(&format!("cred {long} end")), "cred [REDACTED] end");
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let credentials = STANDARD.encode("mirror:first-s3cret");
        for text in [
            "Authorization: Bearer abc123def456".to_owned(),
            format!("authorization = \"Basic {credentials}\""),
            "HTTPS_PROXY=http://wmco:pr0xy-s3cret@proxy.example:3129".to_owned(),
            "$password = 'x' ; token: y".to_owned(),
        ] {
            let once = redact(&text);
            assert_ne!(once, text);
            assert_eq!(redact(&once), once);
        }
    }

    #[test]
    fn ordinary_lines_are_kept() {
        for line in [
            "2026-11-26T10:00:00Z INFO reconcile{instance=wmco/byoh-10-0-0-5 host=10.0.0.5 step=probe}: probing",
            r#"{"level":"WARN","message":"pin_host_key failed","span":{"instance":"wmco/byoh-10-0-0-5"}}"#,
            "CSR csr-7xk2q approved: every rule A1-F4 passed (node win-1.example.com)",
            "tokens minted: 3",
            "sc.exe config kubelet binPath= \"C:\\k\\kubelet.exe --bootstrap-kubeconfig=C:\\k\\bootstrap-kubeconfig\" start= auto",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  C:/k/kubelet.exe",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "read Secret openshift-config/pull-secret (2 registries); secretRef: cloud-private-key",
            "oauth-proxy ready; auths for 2 registries; basic checks passed",
            "HTTP_PROXY=http://proxy.example:3128 NO_PROXY=.cluster.local,.svc",
            "ssh Administrator@10.0.0.5:22: connected",
            "$t = Invoke-RestMethod -Headers @{ 'X-aws-ec2-metadata-token-ttl-seconds' = '60' }",
            "Invoke-RestMethod -Headers @{ 'X-aws-ec2-metadata-token' = $t } -Uri $u; $env:TOKEN = $env:OTHER",
        ] {
            assert_eq!(redact(line), line);
        }
    }
}
