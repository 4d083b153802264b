//! Targeted faults: a rule names a point of the host's conversation — an exec request whose command line (or the
//! PowerShell script its `-EncodedCommand` carries) contains a text, or an SFTP write to a file whose path contains
//! a text — and what goes wrong there: the connection drops, the request fails or never answers, the host reboots,
//! the disk is full, or the answer is hostile (far too long, not text, JSON nested without end). A rule hits the
//! next `times` matching requests and is then spent, so a campaign can break exactly one step of a configuration.
//!
//! ```
//! use winhost_sim::faults::{FaultAction, FaultPoint, FaultRule, Request};
//! let mut rules = vec![FaultRule::once(FaultPoint::Upload("kubelet.exe".into()), FaultAction::DiskFull)];
//! assert_eq!(FaultRule::take(&mut rules, &Request::Upload(r"C:\k\kubelet.exe.wmco-tmp")), Some(FaultAction::DiskFull));
//! assert!(rules.is_empty(), "spent after one hit");
//! assert_eq!(FaultRule::take(&mut rules, &Request::Upload(r"C:\k\kubelet.exe.wmco-tmp")), None);
//! ```

/// The message Windows gives for `ERROR_DISK_FULL` (112).
pub const DISK_FULL_MESSAGE: &str = "There is not enough space on the disk.";

/// Where a rule applies.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultPoint {
    /// An exec request whose command line or decoded `-EncodedCommand` script contains the text (case-insensitive;
    /// the empty text matches every command).
    Command(String),
    /// An SFTP write to a file whose Windows path contains the text (case-insensitive; empty matches every write).
    Upload(String),
}

/// What goes wrong at the point.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAction {
    /// The SSH connection drops before the request runs.
    Drop,
    /// The request fails without running: a command exits 1 with a message on stderr, a write gets
    /// `SSH_FX_FAILURE`.
    Fail,
    /// The request is accepted and never answered (a hung command, an SFTP peer stalled mid-file).
    Hang,
    /// The host reboots instead of running the request: every connection drops, new ones are refused for a moment,
    /// services start again by their start type.
    Reboot,
    /// The disk is full: a command fails (exit 1) and a write gets `SSH_FX_FAILURE`, both with
    /// [`DISK_FULL_MESSAGE`]; nothing is written.
    DiskFull,
    /// The command is answered with `bytes` bytes of standard output (exit 0) instead of running.
    HugeOutput {
        /// How many bytes.
        bytes: u64,
    },
    /// The command is answered with bytes that are neither UTF-8 nor valid UTF-16 (exit 0) instead of running.
    InvalidText,
    /// The command is answered with one line of JSON, objects nested `depth` deep (`{"a":{"a":…0…}}`, exit 0)
    /// instead of running: it starts with `{` like every document the product's probes print.
    DeepJson {
        /// The nesting depth.
        depth: u32,
    },
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FaultRule {
    /// Where.
    pub at: FaultPoint,
    /// What.
    pub action: FaultAction,
    /// How many matching requests it hits before it is spent.
    pub times: u32,
}

/// A request as the rules see it.
#[derive(Clone, Copy, Debug)]
pub enum Request<'a> {
    /// An exec request's command line.
    Command(&'a str),
    /// An SFTP write's Windows path.
    Upload(&'a str),
}

impl FaultRule {
    /// A rule hitting the next matching request only.
    pub fn once(at: FaultPoint, action: FaultAction) -> FaultRule {
        FaultRule { at, action, times: 1 }
    }

    /// A rule hitting every matching request.
    pub fn always(at: FaultPoint, action: FaultAction) -> FaultRule {
        FaultRule { at, action, times: u32::MAX }
    }

    /// The action of the first rule matching `request`, spending one of its hits (a spent rule is removed).
    pub fn take(rules: &mut Vec<FaultRule>, request: &Request<'_>) -> Option<FaultAction> {
        let index = rules.iter().position(|rule| rule.matches(request))?;
        let rule = &mut rules[index];
        let action = rule.action.clone();
        rule.times = rule.times.saturating_sub(1);
        if rule.times == 0 {
            rules.remove(index);
        }
        Some(action)
    }

    fn matches(&self, request: &Request<'_>) -> bool {
        match (&self.at, request) {
            (FaultPoint::Command(text), Request::Command(line)) => {
                let text = text.to_lowercase();
                line.to_lowercase().contains(&text)
                    || encoded_scripts(line).iter().any(|script| script.to_lowercase().contains(&text))
            }
            (FaultPoint::Upload(text), Request::Upload(path)) => path.to_lowercase().contains(&text.to_lowercase()),
            _ => false,
        }
    }
}

/// The scripts every `-EncodedCommand <base64>` of a command line carries.
fn encoded_scripts(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .filter(|pair| pair[0].eq_ignore_ascii_case("-EncodedCommand"))
        .filter_map(|pair| crate::ps::decode(pair[1].trim_matches('"')))
        .collect()
}

/// The standard output a hostile answer sends, or `None` for actions that are not an answer.
pub fn hostile_output(action: &FaultAction) -> Option<Vec<u8>> {
    match action {
        FaultAction::HugeOutput { bytes } => {
            let line = b"winhost-sim: hostile output without end\r\n";
            let length = usize::try_from(*bytes).unwrap_or(usize::MAX);
            Some(line.iter().copied().cycle().take(length).collect())
        }
        // Lone continuation bytes and an unpaired UTF-16 surrogate (0xD800 little-endian), then an odd length.
        FaultAction::InvalidText => Some(vec![0x80, 0xBF, 0xFE, 0xFF, 0x00, 0xD8, 0x41, 0x00, 0xC3]),
        FaultAction::DeepJson { depth } => {
            let depth = *depth as usize;
            let mut text = br#"{"a":"#.repeat(depth);
            text.push(b'0');
            text.resize(text.len() + depth, b'}');
            Some(text)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_rule_matches_the_line_or_the_encoded_script_case_insensitively() {
        let script = "$ProgressPreference = 'SilentlyContinue'\nGet-CimInstance Win32_Service";
        let line = format!("powershell.exe -NonInteractive -EncodedCommand {}", crate::ps::encode(script));
        let mut rules = vec![FaultRule::always(FaultPoint::Command("get-ciminstance".into()), FaultAction::Fail)];
        assert_eq!(FaultRule::take(&mut rules, &Request::Command(&line)), Some(FaultAction::Fail));
        assert_eq!(FaultRule::take(&mut rules, &Request::Command("SC.EXE query kubelet")), None);
        let mut sc = vec![FaultRule::once(FaultPoint::Command("sc.exe create".into()), FaultAction::Hang)];
        assert_eq!(FaultRule::take(&mut sc, &Request::Command("sc.exe create kubelet")), Some(FaultAction::Hang));
        assert_eq!(rules.len(), 1, "an `always` rule is never spent");
    }

    #[test]
    fn upload_rules_match_only_writes_and_commands_only_commands() {
        let mut rules = vec![FaultRule::once(FaultPoint::Upload("kubelet".into()), FaultAction::Drop)];
        assert_eq!(FaultRule::take(&mut rules, &Request::Command("copy kubelet.exe")), None);
        assert_eq!(FaultRule::take(&mut rules, &Request::Upload(r"C:\k\kubelet.exe")), Some(FaultAction::Drop));
    }

    #[test]
    fn hostile_answers_are_what_they_claim() {
        let huge = hostile_output(&FaultAction::HugeOutput { bytes: 100_000 }).unwrap();
        assert_eq!(huge.len(), 100_000);
        let invalid = hostile_output(&FaultAction::InvalidText).unwrap();
        assert!(std::str::from_utf8(&invalid).is_err());
        assert!(invalid.len() % 2 == 1, "not even a whole number of UTF-16 units");
        let deep = hostile_output(&FaultAction::DeepJson { depth: 10_000 }).unwrap();
        assert_eq!((deep.len(), &deep[..10], deep[60_000]), (60_001, &br#"{"a":{"a":"#[..], b'}'));
        let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&deep);
        assert!(parsed.unwrap_err().to_string().contains("recursion limit"), "deeper than serde_json's limit");
        assert_eq!(hostile_output(&FaultAction::Hang), None);
    }
}
