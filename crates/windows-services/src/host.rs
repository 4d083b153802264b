//! The small validated values a host's desired state ([`HostState`](crate::HostState)) is made of: machine
//! environment variable names, file hashes, firewall rules, registry keys and values, rotated files, and the error
//! naming a value that is not acceptable.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::path::WinPath;

/// Why a host-level name or value is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostValueError {
    /// An environment variable name outside `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("environment variable name {name:?} must match [A-Za-z_][A-Za-z0-9_]*")]
    EnvVarName {
        /// The text given.
        name: String,
    },
    /// A registry key that is not `HKLM\` followed by non-empty segments free of `[ ] * ?` and control characters.
    #[error("registry key {key:?} must be HKLM\\<segments> without empty segments, [ ] * ? or control characters")]
    RegistryKey {
        /// The text given.
        key: String,
    },
    /// A registry value name outside `[A-Za-z][A-Za-z0-9_]*`.
    #[error("registry value name {name:?} must match [A-Za-z][A-Za-z0-9_]*")]
    RegistryValueName {
        /// The text given.
        name: String,
    },
    /// Not 64 hex digits.
    #[error("{text:?} is not a SHA-256 digest (64 hex digits)")]
    Sha256 {
        /// The text given.
        text: String,
    },
    /// Not 40 hex digits.
    #[error("{text:?} is not a certificate thumbprint (40 hex digits)")]
    Thumbprint {
        /// The text given.
        text: String,
    },
    /// A firewall rule name that is empty or holds control or wildcard characters.
    #[error("firewall rule name {name:?} must be non-empty and free of control characters and * ? [ ]")]
    FirewallRuleName {
        /// The text given.
        name: String,
    },
}

/// A machine environment variable name (`[A-Za-z_][A-Za-z0-9_]*`, e.g. `HTTP_PROXY`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvVarName(String);

impl EnvVarName {
    /// Validates a variable name.
    ///
    /// # Errors
    /// [`HostValueError::EnvVarName`].
    pub fn new(name: &str) -> Result<EnvVarName, HostValueError> {
        let mut chars = name.chars();
        let valid_start = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !valid_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(HostValueError::EnvVarName { name: name.to_owned() });
        }
        Ok(EnvVarName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EnvVarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for EnvVarName {
    type Error = HostValueError;
    fn try_from(name: String) -> Result<Self, Self::Error> {
        EnvVarName::new(&name)
    }
}

impl From<EnvVarName> for String {
    fn from(name: EnvVarName) -> String {
        name.0
    }
}

/// A lower-case hex SHA-256 digest.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// Accepts 64 hex digits in either case (Get-FileHash prints upper case) and stores them lower-case.
    ///
    /// # Errors
    /// [`HostValueError::Sha256`].
    pub fn new(text: &str) -> Result<Sha256Hex, HostValueError> {
        if text.len() != 64 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HostValueError::Sha256 { text: text.to_owned() });
        }
        Ok(Sha256Hex(text.to_ascii_lowercase()))
    }

    /// The lower-case hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Sha256Hex {
    type Error = HostValueError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Sha256Hex::new(&text)
    }
}

impl From<Sha256Hex> for String {
    fn from(digest: Sha256Hex) -> String {
        digest.0
    }
}

/// Traffic direction of a firewall rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    /// Inbound (MSFT_NetFirewallRule `Direction` = 1).
    Inbound,
    /// Outbound (`Direction` = 2).
    Outbound,
}

impl Direction {
    /// The `-Direction` value.
    pub fn powershell_value(self) -> &'static str {
        match self {
            Direction::Inbound => "Inbound",
            Direction::Outbound => "Outbound",
        }
    }
}

/// Transport protocol of a firewall rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl Protocol {
    /// The `-Protocol` value.
    pub fn powershell_value(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        }
    }
}

/// A Windows Firewall rule that allows traffic to a local port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FirewallRule {
    /// The rule's unique `-Name` (also used as its display name).
    pub name: String,
    /// Direction.
    pub direction: Direction,
    /// Protocol.
    pub protocol: Protocol,
    /// Local port.
    pub local_port: u16,
}

impl FirewallRule {
    /// A rule, with its name validated.
    ///
    /// # Errors
    /// [`HostValueError::FirewallRuleName`].
    pub fn new(name: &str, direction: Direction, protocol: Protocol, local_port: u16) -> Result<Self, HostValueError> {
        if name.is_empty() || name.chars().any(|c| c.is_control() || "*?[]".contains(c)) {
            return Err(HostValueError::FirewallRuleName { name: name.to_owned() });
        }
        Ok(FirewallRule { name: name.to_owned(), direction, protocol, local_port })
    }
}

/// A key under `HKEY_LOCAL_MACHINE`, written `HKLM\SOFTWARE\OpenSSH`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RegistryKey(String);

impl RegistryKey {
    /// Validates `HKLM\<segment>\...` (segments non-empty, without `[ ] * ?` or control characters, which
    /// PowerShell's `-Path` would interpret).
    ///
    /// # Errors
    /// [`HostValueError::RegistryKey`].
    pub fn new(key: &str) -> Result<RegistryKey, HostValueError> {
        let invalid = || HostValueError::RegistryKey { key: key.to_owned() };
        let rest = key.strip_prefix(r"HKLM\").ok_or_else(invalid)?;
        let bad_segment =
            |segment: &str| segment.is_empty() || segment.chars().any(|c| "[]*?".contains(c) || c.is_control());
        if rest.split('\\').any(bad_segment) {
            return Err(invalid());
        }
        Ok(RegistryKey(key.to_owned()))
    }

    /// The PowerShell provider path: `HKLM:\SOFTWARE\OpenSSH`.
    pub fn provider_path(&self) -> String {
        format!("HKLM:{}", &self.0[4..])
    }
}

impl fmt::Display for RegistryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for RegistryKey {
    type Error = HostValueError;
    fn try_from(key: String) -> Result<Self, Self::Error> {
        RegistryKey::new(&key)
    }
}

impl From<RegistryKey> for String {
    fn from(key: RegistryKey) -> String {
        key.0
    }
}

/// A registry value name (`[A-Za-z][A-Za-z0-9_]*`, so the probe can read it as a plain member).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RegistryValueName(String);

impl RegistryValueName {
    /// Validates a value name.
    ///
    /// # Errors
    /// [`HostValueError::RegistryValueName`].
    pub fn new(name: &str) -> Result<RegistryValueName, HostValueError> {
        let mut chars = name.chars();
        let valid_start = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        if !valid_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(HostValueError::RegistryValueName { name: name.to_owned() });
        }
        Ok(RegistryValueName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RegistryValueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for RegistryValueName {
    type Error = HostValueError;
    fn try_from(name: String) -> Result<Self, Self::Error> {
        RegistryValueName::new(&name)
    }
}

impl From<RegistryValueName> for String {
    fn from(name: RegistryValueName) -> String {
        name.0
    }
}

/// Registry data of the two types the product writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RegistryData {
    /// REG_DWORD.
    Dword(u32),
    /// REG_SZ.
    String(String),
}

/// One registry value to hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RegistryValue {
    /// The key (which must already exist).
    pub key: RegistryKey,
    /// The value name.
    pub name: RegistryValueName,
    /// The data.
    pub data: RegistryData,
}

/// Files another program rotates in one directory, `<prefix><timestamp><suffix>`, of which only the newest `keep`
/// stay (hybrid-overlay's `ovnkube-client-<timestamp>.pem` client certificates, wmco-anchor.md §6): the names'
/// timestamps (`2006-01-02-15-04-05`) sort by age, and `<prefix>current<suffix>`, the rotating program's pointer to
/// the newest, is never removed.
///
/// ```
/// use wmco_windows_services::RotatedFiles;
/// let rotated = RotatedFiles::new(r"C:\k\cni\config".parse()?, "ovnkube-client-", ".pem", 2);
/// assert_eq!(rotated.filter(), "ovnkube-client-*.pem");
/// let names = ["ovnkube-client-2026-11-01-00-00-00.pem", "ovnkube-client-current.pem",
///     "ovnkube-client-2026-11-03-00-00-00.pem", "ovnkube-client-2026-11-02-00-00-00.pem"].map(String::from);
/// assert_eq!(rotated.stale(&names), ["ovnkube-client-2026-11-01-00-00-00.pem"]);
/// # Ok::<(), wmco_windows_services::PathError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RotatedFiles {
    /// The directory the files are in.
    pub directory: WinPath,
    /// What every such file's name starts with.
    pub prefix: String,
    /// What every such file's name ends with.
    pub suffix: String,
    /// How many of the newest stay.
    pub keep: usize,
}

impl RotatedFiles {
    /// The files `<prefix>*<suffix>` of `directory`, the newest `keep` kept.
    pub fn new(directory: WinPath, prefix: &str, suffix: &str, keep: usize) -> RotatedFiles {
        RotatedFiles { directory, prefix: prefix.to_owned(), suffix: suffix.to_owned(), keep }
    }

    /// The wildcard that lists the files (`Get-ChildItem -Filter`).
    pub fn filter(&self) -> String {
        format!("{}*{}", self.prefix, self.suffix)
    }

    /// The names among `names` to remove: those of the pattern (case-insensitively, as Windows matches), except
    /// the pointer `<prefix>current<suffix>` and the newest `keep`, oldest first.
    pub fn stale<'a>(&self, names: &'a [String]) -> Vec<&'a str> {
        let current = format!("{}current{}", self.prefix, self.suffix);
        let matches = |name: &str| {
            let lower = name.to_ascii_lowercase();
            lower.len() >= self.prefix.len() + self.suffix.len()
                && lower.starts_with(&self.prefix.to_ascii_lowercase())
                && lower.ends_with(&self.suffix.to_ascii_lowercase())
        };
        let mut rotated: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|name| matches(name) && !name.eq_ignore_ascii_case(&current))
            .collect();
        rotated.sort_by_key(|name| name.to_ascii_lowercase());
        rotated.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        let stale = rotated.len().saturating_sub(self.keep);
        rotated.truncate(stale);
        rotated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_names_are_identifiers() {
        assert_eq!(EnvVarName::new("HTTP_PROXY").unwrap().as_str(), "HTTP_PROXY");
        assert!(EnvVarName::new("_x1").is_ok());
        for bad in ["", "1X", "A-B", "A B", "A=B", "%X%"] {
            assert_eq!(EnvVarName::new(bad), Err(HostValueError::EnvVarName { name: bad.into() }), "{bad}");
        }
    }

    #[test]
    fn sha256_accepts_either_case_and_stores_lower_case() {
        let upper = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
        assert_eq!(Sha256Hex::new(upper).unwrap().as_str(), upper.to_ascii_lowercase());
        assert!(Sha256Hex::new(&upper[1..]).is_err());
        assert!(Sha256Hex::new(&format!("{}g", &upper[1..])).is_err());
    }

    #[test]
    fn registry_keys_are_hklm_paths_without_wildcards() {
        let key = RegistryKey::new(r"HKLM\SOFTWARE\OpenSSH").unwrap();
        assert_eq!(key.provider_path(), r"HKLM:\SOFTWARE\OpenSSH");
        assert_eq!(key.to_string(), r"HKLM\SOFTWARE\OpenSSH");
        for bad in [r"HKCU\x", r"HKLM\", r"HKLM\a\\b", r"HKLM\a[1]", r"HKLM\a*", "HKLM"] {
            assert_eq!(RegistryKey::new(bad), Err(HostValueError::RegistryKey { key: bad.into() }), "{bad}");
        }
        assert!(RegistryValueName::new("DefaultShell").is_ok());
        assert!(RegistryValueName::new("Default Shell").is_err());
        assert!(RegistryValueName::new("_x").is_err());
    }

    #[test]
    fn firewall_rule_names_must_be_printable() {
        let rule = FirewallRule::new("ContainerLogsPort", Direction::Inbound, Protocol::Tcp, 10250).unwrap();
        assert_eq!(rule.local_port, 10250);
        assert_eq!(
            FirewallRule::new("", Direction::Inbound, Protocol::Tcp, 1),
            Err(HostValueError::FirewallRuleName { name: String::new() })
        );
        assert!(FirewallRule::new("a*", Direction::Inbound, Protocol::Tcp, 1).is_err());
    }
}
