//! The markers Windows keeps while a restart is needed to finish an operation, read by every state probe in the round
//! trip it makes anyway (issue 37): Windows Update's `RebootRequired` key, Component Based Servicing's
//! `RebootPending` key and Session Manager's `PendingFileRenameOperations` value, the three the well-known
//! pending-reboot checks read (docs/testing.md § "Simulated Windows hosts" names them with their sources). Cheap
//! registry reads only: two `Test-Path` and one `Get-ItemProperty`.

use serde::Deserialize;
use serde_json::Value;
pub use wmco_vocabulary::RebootMarker;

/// The statements that set `$rbu`, `$rbc` and `$rbf`, each a boolean. A `PendingFileRenameOperations` of empty
/// strings only counts as absent; a missing value or key reads as `$null` (the cmdlet's errors are silenced).
pub(crate) fn statements() -> [&'static str; 3] {
    [
        r"$rbu = Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired'",
        r"$rbc = Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending'",
        r"$rbf = $null -ne ((Get-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager' -ErrorAction SilentlyContinue).PendingFileRenameOperations | Where-Object { $_ } | Select-Object -First 1)",
    ]
}

/// The probe document's entry for the markers.
pub(crate) const ENTRY: &str = "; reboot = [ordered]@{ windowsUpdate = $rbu; cbs = $rbc; fileRenames = $rbf }";

/// The section as printed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawMarkers {
    #[serde(default)]
    windows_update: bool,
    #[serde(default)]
    cbs: bool,
    #[serde(default)]
    file_renames: bool,
}

/// The markers present, in [`RebootMarker::ALL`] order. A missing section (the document of a probe from before the
/// markers were read, as in an older transcript) holds none; `None` when the section is not of the expected shape.
pub(crate) fn parse(section: Value) -> Option<Vec<RebootMarker>> {
    if section.is_null() {
        return Some(Vec::new());
    }
    if !section.is_object() {
        return None;
    }
    let raw: RawMarkers = serde_json::from_value(section).ok()?;
    let present = [raw.windows_update, raw.cbs, raw.file_renames];
    Some(RebootMarker::ALL.into_iter().zip(present).filter(|(_, present)| *present).map(|(marker, _)| marker).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProbeRequest;

    const EMPTY: &str = r#"{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[]"#;

    #[test]
    fn every_probe_reads_the_markers_in_its_one_script() {
        let script = ProbeRequest::default().script();
        let text = script.text();
        assert!(statements().iter().all(|statement| text.contains(statement)) && text.contains(ENTRY), "{text}");
        assert_eq!(text.matches("ConvertTo-Json").count(), 1, "one document");
        assert!(!text.contains("Get-ChildItem"), "registry tests only, no key enumeration");
    }

    #[test]
    fn present_markers_are_listed_in_order() {
        let request = ProbeRequest::default();
        let parsed = |section: &str| request.parse_output(&format!("{EMPTY},\"reboot\":{section}}}")).unwrap();
        let all = r#"{"windowsUpdate":true,"cbs":true,"fileRenames":true}"#;
        assert_eq!(parsed(all).pending_reboot, RebootMarker::ALL);
        let renames = r#"{"windowsUpdate":false,"cbs":false,"fileRenames":true}"#;
        assert_eq!(parsed(renames).pending_reboot, [RebootMarker::PendingFileRenameOperations]);
        let none = r#"{"windowsUpdate":false,"cbs":false,"fileRenames":false}"#;
        assert!(parsed(none).pending_reboot.is_empty());
    }

    #[test]
    fn an_older_document_without_the_section_has_no_markers() {
        let observed = ProbeRequest::default().parse_output(&format!("{EMPTY}}}")).unwrap();
        assert!(observed.pending_reboot.is_empty());
        assert_eq!(parse(Value::Null), Some(Vec::new()));
    }

    #[test]
    fn a_section_of_another_shape_is_a_bad_value() {
        let request = ProbeRequest::default();
        for section in [r#""yes""#, r#"{"cbs":"True"}"#, r#"{"rebootPending":true}"#, "[true]"] {
            let result = request.parse_output(&format!("{EMPTY},\"reboot\":{section}}}"));
            assert!(
                matches!(&result, Err(crate::ProbeError::BadValue { section: "reboot", .. })),
                "{section}: {result:?}"
            );
        }
    }

    #[test]
    fn markers_are_named_as_the_condition_shows_them() {
        let names: Vec<String> = RebootMarker::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["WindowsUpdate", "ComponentBasedServicing", "PendingFileRenameOperations"]);
    }
}
