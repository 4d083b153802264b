//! The machine's trusted root certificates (`Cert:\LocalMachine\Root`): which certificates the desired state trusts
//! ([`TrustedRoots`]), and the one step that imports the missing ones and removes those the operator imported that
//! left the set ([`RootSync`]).
//!
//! The operator only removes what it imported itself: a record file on the host lists the thumbprints it imported
//! (a certificate the host already trusted is never recorded, so never removed). The record is written before the
//! imports with every certificate about to be imported, and rewritten afterwards with what stays, so a crash between
//! the two leaves no imported certificate unrecorded (windows-commands.md §4.1: `Import-Certificate` takes one
//! certificate per file, importing one already present adds no duplicate, removing a missing one is an error).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::command::CommandError;
use crate::host::HostValueError;
use crate::path::WinPath;
use crate::powershell::{PowerShellScript, wildcard_free_literal};
use crate::quote::powershell_literal;

/// The certificate store the machine's trusted roots live in.
pub const ROOT_STORE: &str = r"Cert:\LocalMachine\Root";

/// A certificate's thumbprint as Windows names it: the SHA-1 of its DER encoding, 40 upper-case hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Thumbprint(String);

impl Thumbprint {
    /// Validates a thumbprint (either case; stored upper-case, as `Cert:\` prints it).
    ///
    /// ```
    /// use wmco_windows_services::Thumbprint;
    /// let thumbprint = Thumbprint::new("cdd4eeae6000ac7f40c3802c171e30148030c072")?;
    /// assert_eq!(thumbprint.as_str(), "CDD4EEAE6000AC7F40C3802C171E30148030C072");
    /// assert!(Thumbprint::new("CDD4").is_err());
    /// # Ok::<(), wmco_windows_services::HostValueError>(())
    /// ```
    ///
    /// # Errors
    /// [`HostValueError::Thumbprint`] unless the text is 40 hex digits.
    pub fn new(text: &str) -> Result<Thumbprint, HostValueError> {
        if text.len() != 40 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HostValueError::Thumbprint { text: text.to_owned() });
        }
        Ok(Thumbprint(text.to_ascii_uppercase()))
    }

    /// The 40 upper-case hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Thumbprint {
    type Error = HostValueError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Thumbprint::new(&text)
    }
}

impl From<Thumbprint> for String {
    fn from(thumbprint: Thumbprint) -> String {
        thumbprint.0
    }
}

impl fmt::Display for Thumbprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The root certificates a host must trust, and where the host records those the operator imported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedRoots {
    /// Each certificate to trust, with the file on the host holding it alone (one of
    /// [`HostState::files`](crate::HostState::files), so it is uploaded before the import).
    pub certificates: BTreeMap<Thumbprint, WinPath>,
    /// The host file listing the thumbprints the operator imported, one per line.
    pub record: WinPath,
}

impl TrustedRoots {
    /// No certificate to trust: every certificate the operator imported is removed (a deconfigure).
    pub fn none(record: WinPath) -> TrustedRoots {
        TrustedRoots { certificates: BTreeMap::new(), record }
    }
}

/// The machine's root store as the state probe found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedRoots {
    /// The thumbprints of every certificate in [`ROOT_STORE`].
    pub store: BTreeSet<Thumbprint>,
    /// The thumbprints the record file lists (empty when there is no record).
    pub imported: BTreeSet<Thumbprint>,
}

/// What one sync of the root store does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootSync {
    /// The certificates to import, each from its file.
    pub import: Vec<(Thumbprint, WinPath)>,
    /// The certificates the operator imported that are no longer trusted, present in the store.
    pub remove: Vec<Thumbprint>,
    /// The record file.
    pub record: WinPath,
    /// What the record lists while the sync runs: the previous record and every certificate about to be imported.
    pub record_during: Vec<Thumbprint>,
    /// What the record lists afterwards: the imported certificates still trusted.
    pub record_after: Vec<Thumbprint>,
}

impl RootSync {
    /// The sync that takes `observed` to `desired`, or `None` when the store and the record already agree.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use wmco_windows_services::{ObservedRoots, RootSync, Thumbprint, TrustedRoots, WinPath};
    /// let ours = Thumbprint::new(&"A".repeat(40))?;
    /// let theirs = Thumbprint::new(&"B".repeat(40))?;
    /// let desired = TrustedRoots {
    ///     certificates: BTreeMap::from([(ours.clone(), WinPath::parse(r"C:\k\certs\a.crt")?)]),
    ///     record: WinPath::parse(r"C:\k\wmco\imported-root-certificates.txt")?,
    /// };
    /// // The host already trusts `theirs`; `ours` is missing.
    /// let observed = ObservedRoots { store: [theirs].into(), imported: Default::default() };
    /// let sync = RootSync::between(&desired, &observed).unwrap();
    /// assert_eq!(sync.import.len(), 1);
    /// assert!(sync.remove.is_empty());
    /// assert_eq!(sync.record_after, [ours]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn between(desired: &TrustedRoots, observed: &ObservedRoots) -> Option<RootSync> {
        let import: Vec<(Thumbprint, WinPath)> = desired
            .certificates
            .iter()
            .filter(|(thumbprint, _)| !observed.store.contains(*thumbprint))
            .map(|(thumbprint, file)| (thumbprint.clone(), file.clone()))
            .collect();
        let remove: Vec<Thumbprint> = observed
            .imported
            .iter()
            .filter(|thumbprint| {
                !desired.certificates.contains_key(*thumbprint) && observed.store.contains(*thumbprint)
            })
            .cloned()
            .collect();
        let imported_now = import.iter().map(|(thumbprint, _)| thumbprint.clone());
        let record_after: BTreeSet<Thumbprint> = observed
            .imported
            .iter()
            .filter(|thumbprint| desired.certificates.contains_key(*thumbprint))
            .cloned()
            .chain(imported_now.clone())
            .collect();
        let record_during: BTreeSet<Thumbprint> = observed.imported.iter().cloned().chain(imported_now).collect();
        (!import.is_empty() || !remove.is_empty() || record_after != observed.imported).then(|| RootSync {
            import,
            remove,
            record: desired.record.clone(),
            record_during: record_during.into_iter().collect(),
            record_after: record_after.into_iter().collect(),
        })
    }

    /// The script: record what is about to be imported, import, remove, record what stays. The record is replaced
    /// through a temporary file, never left half written.
    ///
    /// # Errors
    /// [`CommandError::WildcardInPath`] for a certificate file or record path holding `[` or `]`.
    pub fn script(&self) -> Result<PowerShellScript, CommandError> {
        let mut statements = Vec::new();
        if let Some(parent) = self.record.parent() {
            statements.push(format!(
                "New-Item -ItemType Directory -Force -Path {} | Out-Null",
                wildcard_free_literal(parent.as_str())?
            ));
        }
        if !self.import.is_empty() {
            statements.extend(self.write_record(&self.record_during)?);
        }
        for (_, file) in &self.import {
            statements.push(format!(
                "Import-Certificate -FilePath {} -CertStoreLocation {} | Out-Null",
                wildcard_free_literal(file.as_str())?,
                powershell_literal(ROOT_STORE)
            ));
        }
        for thumbprint in &self.remove {
            statements.push(format!(
                "Remove-Item -LiteralPath {} -ErrorAction SilentlyContinue",
                powershell_literal(&format!(r"{ROOT_STORE}\{thumbprint}"))
            ));
        }
        statements.extend(self.write_record(&self.record_after)?);
        Ok(PowerShellScript::from_statements(&statements))
    }

    /// Statements replacing the record with `thumbprints` (an empty record file when there are none).
    fn write_record(&self, thumbprints: &[Thumbprint]) -> Result<[String; 2], CommandError> {
        let record = wildcard_free_literal(self.record.as_str())?;
        let staging = wildcard_free_literal(&format!("{}.tmp", self.record.as_str()))?;
        let values: Vec<String> =
            thumbprints.iter().map(|thumbprint| powershell_literal(thumbprint.as_str())).collect();
        Ok([
            format!("Set-Content -LiteralPath {staging} -Value @({}) -Encoding ASCII", values.join(", ")),
            format!("Move-Item -LiteralPath {staging} -Destination {record} -Force"),
        ])
    }
}

impl fmt::Display for RootSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import {} and remove {} trusted root certificates", self.import.len(), self.remove.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thumbprint(digit: char) -> Thumbprint {
        Thumbprint::new(&digit.to_string().repeat(40)).unwrap()
    }

    fn path(text: &str) -> WinPath {
        WinPath::parse(text).unwrap()
    }

    fn desired(digits: &[char]) -> TrustedRoots {
        TrustedRoots {
            certificates: digits
                .iter()
                .map(|digit| (thumbprint(*digit), path(&format!(r"C:\k\certs\{}.crt", thumbprint(*digit)))))
                .collect(),
            record: path(r"C:\k\wmco\imported-root-certificates.txt"),
        }
    }

    fn observed(store: &[char], imported: &[char]) -> ObservedRoots {
        ObservedRoots {
            store: store.iter().map(|digit| thumbprint(*digit)).collect(),
            imported: imported.iter().map(|digit| thumbprint(*digit)).collect(),
        }
    }

    #[test]
    fn thumbprints_are_forty_hex_digits() {
        assert!(Thumbprint::new(&"g".repeat(40)).is_err());
        assert!(Thumbprint::new(&"a".repeat(41)).is_err());
        assert_eq!(Thumbprint::new(&"ab".repeat(20)).unwrap().as_str(), "AB".repeat(20));
    }

    #[test]
    fn a_store_and_record_that_agree_need_no_sync() {
        assert_eq!(RootSync::between(&desired(&['A']), &observed(&['A', 'F'], &['A'])), None);
        // Trusted before the operator came: not recorded, nothing to do.
        assert_eq!(RootSync::between(&desired(&['F']), &observed(&['F'], &[])), None);
    }

    #[test]
    fn only_certificates_the_operator_imported_are_removed() {
        // F was there before; A was imported and left the set; B is new.
        let sync = RootSync::between(&desired(&['B', 'F']), &observed(&['A', 'F'], &['A'])).unwrap();
        assert_eq!(sync.import.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(), [thumbprint('B')]);
        assert_eq!(sync.remove, [thumbprint('A')]);
        assert_eq!(sync.record_during, [thumbprint('A'), thumbprint('B')]);
        assert_eq!(sync.record_after, [thumbprint('B')]);
    }

    #[test]
    fn a_record_entry_missing_from_the_store_is_dropped_without_a_removal() {
        let sync = RootSync::between(&desired(&[]), &observed(&[], &['A'])).unwrap();
        assert!(sync.import.is_empty() && sync.remove.is_empty());
        assert!(sync.record_after.is_empty());
    }

    #[test]
    fn a_certificate_removed_by_hand_is_imported_again() {
        let sync = RootSync::between(&desired(&['A']), &observed(&[], &['A'])).unwrap();
        assert_eq!(sync.import.len(), 1);
        assert_eq!(sync.record_after, [thumbprint('A')]);
    }

    #[test]
    fn the_script_records_before_importing_and_after_removing() {
        let sync = RootSync::between(&desired(&['B']), &observed(&['A'], &['A'])).unwrap();
        let text = sync.script().unwrap().text().to_owned();
        let a = "A".repeat(40);
        let b = "B".repeat(40);
        let expected = [
            "$ProgressPreference = 'SilentlyContinue'".to_owned(),
            "$ErrorActionPreference = 'Stop'".to_owned(),
            r"New-Item -ItemType Directory -Force -Path 'C:\k\wmco' | Out-Null".to_owned(),
            format!(
                r"Set-Content -LiteralPath 'C:\k\wmco\imported-root-certificates.txt.tmp' -Value @('{a}', '{b}') -Encoding ASCII"
            ),
            r"Move-Item -LiteralPath 'C:\k\wmco\imported-root-certificates.txt.tmp' -Destination 'C:\k\wmco\imported-root-certificates.txt' -Force".to_owned(),
            format!(r"Import-Certificate -FilePath 'C:\k\certs\{b}.crt' -CertStoreLocation 'Cert:\LocalMachine\Root' | Out-Null"),
            format!(r"Remove-Item -LiteralPath 'Cert:\LocalMachine\Root\{a}' -ErrorAction SilentlyContinue"),
            format!(
                r"Set-Content -LiteralPath 'C:\k\wmco\imported-root-certificates.txt.tmp' -Value @('{b}') -Encoding ASCII"
            ),
            r"Move-Item -LiteralPath 'C:\k\wmco\imported-root-certificates.txt.tmp' -Destination 'C:\k\wmco\imported-root-certificates.txt' -Force".to_owned(),
            "exit 0".to_owned(),
        ]
        .join("\n");
        assert_eq!(text, expected);
    }
}
