//! Directories only SYSTEM and Administrators may use (issue 36, point 7). The default ACL of `C:\` lets
//! `BUILTIN\Users` read and execute everything below it, create folders in every folder and create files in its
//! subfolders (docs/testing.md § "Simulated Windows hosts"), so a directory created under it would let any local
//! account read the bootstrap token, the kubelet's keys and registry credentials, and plant a DLL beside the services
//! that run as LocalSystem.
//!
//! The state probe reads each such directory's security descriptor as SDDL (`(Get-Acl -LiteralPath P).Sddl`);
//! [`grants_only_system_and_administrators`] judges its DACL. [`restrict_statements`] are the icacls calls that set it:
//! `/inheritance:r` protects the DACL and drops what it inherited, `/grant:r` gives SYSTEM and Administrators full
//! control inherited by files and subfolders (`(OI)(CI)F`), both named by their well-known SIDs (`*S-1-5-18`,
//! `*S-1-5-32-544`), which localized Windows knows under other names; `/reset` first drops explicit entries of others
//! (it replaces the DACL with what the parent passes on). What lies below follows by inheritance.

use crate::path::WinPath;
use crate::quote::powershell_literal;

/// The SID of `NT AUTHORITY\SYSTEM` (SDDL alias `SY`).
pub const SYSTEM_SID: &str = "S-1-5-18";
/// The SID of `BUILTIN\Administrators` (SDDL alias `BA`).
pub const ADMINISTRATORS_SID: &str = "S-1-5-32-544";

/// `FILE_ALL_ACCESS`, what SDDL prints as `FA`.
const FILE_ALL_ACCESS: u32 = 0x001f_01ff;
/// `GENERIC_ALL` (SDDL `GA`), full control once mapped onto a file or directory.
const GENERIC_ALL: u32 = 0x1000_0000;

/// One access control entry of an SDDL DACL: `(type;flags;rights;object;inherited object;trustee)`.
#[derive(Debug, PartialEq, Eq)]
struct SddlEntry<'a> {
    kind: &'a str,
    flags: &'a str,
    rights: &'a str,
    trustee: &'a str,
}

impl SddlEntry<'_> {
    /// Whether the entry allows access (plain, object, callback or callback-object allow entries).
    fn allows(&self) -> bool {
        matches!(self.kind.to_ascii_uppercase().as_str(), "A" | "OA" | "XA" | "ZA")
    }

    /// Whether the entry carries the two-letter flag `flag` (`OI`, `CI`, `IO`, `ID`, ...).
    fn has_flag(&self, flag: &str) -> bool {
        self.flags.as_bytes().chunks(2).any(|pair| pair.eq_ignore_ascii_case(flag.as_bytes()))
    }

    /// Whether the trustee is SYSTEM or Administrators.
    fn trustee_is_system_or_administrators(&self) -> bool {
        [SYSTEM_SID, "SY", ADMINISTRATORS_SID, "BA"].iter().any(|known| self.trustee.eq_ignore_ascii_case(known))
    }

    /// Whether the rights are full control: `FA`, `GA`, or a hex mask holding all of `FILE_ALL_ACCESS` or
    /// `GENERIC_ALL`.
    fn is_full_control(&self) -> bool {
        let hex = self.rights.strip_prefix("0x").or_else(|| self.rights.strip_prefix("0X"));
        match hex.map(|digits| u32::from_str_radix(digits, 16)) {
            Some(Ok(mask)) => mask & FILE_ALL_ACCESS == FILE_ALL_ACCESS || mask & GENERIC_ALL != 0,
            Some(Err(_)) => false,
            None => self.rights.as_bytes().chunks(2).any(|pair| pair == b"FA" || pair == b"GA"),
        }
    }
}

/// The entries of the DACL in `sddl`, `None` without a DACL or with a NULL DACL (`D:NO_ACCESS_CONTROL`, which lets
/// everyone do everything) or malformed entries.
fn dacl_entries(sddl: &str) -> Option<Vec<SddlEntry<'_>>> {
    let start = sddl.find("D:")? + 2;
    let dacl = &sddl[start..];
    let first = dacl.find('(').unwrap_or(dacl.len());
    if dacl[..first].contains("NO_ACCESS_CONTROL") {
        return None;
    }
    let mut entries = Vec::new();
    let mut rest = &dacl[first..];
    while let Some(body) = rest.strip_prefix('(') {
        let end = body.find(')')?;
        let fields: Vec<&str> = body[..end].split(';').collect();
        let [kind, flags, rights, _, _, trustee, ..] = fields.as_slice() else { return None };
        entries.push(SddlEntry { kind, flags, rights, trustee });
        rest = &body[end + 1..];
    }
    Some(entries)
}

/// Whether the DACL of the security descriptor `sddl` (as `(Get-Acl).Sddl` prints it) lets only SYSTEM and
/// Administrators in — no allow entry for anyone else, inherit-only ones included — and gives both full control
/// that files and subfolders inherit.
///
/// ```
/// use wmco_windows_services::grants_only_system_and_administrators as private;
/// assert!(private("O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"));
/// assert!(private("O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;0x1f01ff;;;S-1-5-32-544)"), "inherited from a private parent");
/// // A directory created under C:\ inherits Users' read and create rights.
/// assert!(!private("O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;0x1200a9;;;BU)(A;CIID;LC;;;BU)"));
/// assert!(!private("O:BAG:SYD:PAI(A;OICI;FA;;;SY)"), "Administrators need full control too");
/// assert!(!private("O:BAG:SYD:NO_ACCESS_CONTROL"), "a NULL DACL lets everyone in");
/// ```
pub fn grants_only_system_and_administrators(sddl: &str) -> bool {
    let Some(entries) = dacl_entries(sddl) else { return false };
    let allowed: Vec<&SddlEntry<'_>> = entries.iter().filter(|entry| entry.allows()).collect();
    if allowed.iter().any(|entry| !entry.trustee_is_system_or_administrators()) {
        return false;
    }
    let full = |sid: &str, alias: &str| {
        allowed.iter().any(|entry| {
            (entry.trustee.eq_ignore_ascii_case(sid) || entry.trustee.eq_ignore_ascii_case(alias))
                && entry.is_full_control()
                && entry.has_flag("OI")
                && entry.has_flag("CI")
                && !entry.has_flag("IO")
        })
    };
    full(SYSTEM_SID, "SY") && full(ADMINISTRATORS_SID, "BA")
}

/// Whether the DACL holds an explicit (not inherited) entry for anyone but SYSTEM and Administrators — one that
/// `/inheritance:r` would keep, so `/reset` has to drop it first. A missing or NULL DACL counts as one.
pub fn has_explicit_entry_for_others(sddl: &str) -> bool {
    dacl_entries(sddl).is_none_or(|entries| {
        entries.iter().any(|entry| !entry.has_flag("ID") && !entry.trustee_is_system_or_administrators())
    })
}

/// The statements that restrict directories (windows-commands.md §8: a `foreach` over literals, the native icacls,
/// `exit $LASTEXITCODE` on its failure): each of `reset` gets `icacls P /reset`, then each of `protect` gets
/// `icacls P /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F /grant:r *S-1-5-32-544:(OI)(CI)F`.
pub(crate) fn restrict_statements(reset: &[WinPath], protect: &[WinPath]) -> Vec<String> {
    let each = |paths: &[WinPath], arguments: &str| {
        let literals: Vec<String> = paths.iter().map(|path| powershell_literal(path.as_str())).collect();
        format!(
            "foreach ($p in @({})) {{ icacls.exe $p {arguments} /q; if ($LASTEXITCODE -ne 0) {{ exit $LASTEXITCODE }} }}",
            literals.join(", ")
        )
    };
    let mut statements = Vec::new();
    if !reset.is_empty() {
        statements.push(each(reset, "/reset"));
    }
    if !protect.is_empty() {
        statements.push(each(
            protect,
            &format!("/inheritance:r /grant:r '*{SYSTEM_SID}:(OI)(CI)F' /grant:r '*{ADMINISTRATORS_SID}:(OI)(CI)F'"),
        ));
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `C:\` of Windows Server 2016–2022 (docs/testing.md § "Simulated Windows hosts").
    const DRIVE_ROOT: &str = "O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464G:S-1-5-80-956008885-\
                              3418522649-1831038044-1853292631-2271478464D:PAI(A;OICIIO;GA;;;CO)(A;OICI;FA;;;SY)\
                              (A;OICI;FA;;;BA)(A;CI;LC;;;BU)(A;CIIO;DC;;;BU)(A;OICI;0x1200a9;;;BU)";

    #[test]
    fn the_drive_root_and_what_inherits_it_are_not_private() {
        assert!(!grants_only_system_and_administrators(DRIVE_ROOT));
        let below = "O:BAG:SYD:AI(A;ID;FA;;;BA)(A;OICIIOID;GA;;;CO)(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)\
                     (A;CIID;LC;;;BU)(A;CIID;DC;;;BU)(A;OICIID;0x1200a9;;;BU)";
        assert!(!grants_only_system_and_administrators(below));
        assert!(!has_explicit_entry_for_others(below), "all of it is inherited: /inheritance:r drops it");
    }

    #[test]
    fn only_allow_entries_of_others_count_and_both_need_inherited_full_control() {
        let restricted = "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
        assert!(grants_only_system_and_administrators(restricted));
        assert!(grants_only_system_and_administrators(&format!("{restricted}(D;OICI;FA;;;BU)")), "a denial");
        assert!(grants_only_system_and_administrators("D:P(A;OICI;GA;;;S-1-5-18)(A;OICI;0x1F01FF;;;s-1-5-32-544)"));
        assert!(!grants_only_system_and_administrators(&format!("{restricted}(A;OICIIO;GA;;;CO)")), "inherit-only");
        assert!(!grants_only_system_and_administrators(&format!("{restricted}(A;;0x1200a9;;;S-1-5-21-1-2-3-1001)")));
        assert!(!grants_only_system_and_administrators("D:P(A;OICI;FA;;;SY)(A;;FA;;;BA)"), "not inherited below");
        assert!(!grants_only_system_and_administrators("D:P(A;OICI;FA;;;SY)(A;OICI;0x1200a9;;;BA)"));
        assert!(!grants_only_system_and_administrators("D:P(A;OICIIO;FA;;;SY)(A;OICI;FA;;;BA)"));
        assert!(!grants_only_system_and_administrators("O:BAG:SY"), "no DACL read");
        assert!(!grants_only_system_and_administrators("D:P(A;OICI;FA;;SY)"), "malformed");
        assert!(!grants_only_system_and_administrators("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA"), "unterminated");
        assert!(has_explicit_entry_for_others(&format!("{restricted}(A;OICI;0x1200a9;;;BU)")));
        assert!(has_explicit_entry_for_others("D:NO_ACCESS_CONTROL"));
        assert!(!has_explicit_entry_for_others(restricted));
    }

    #[test]
    fn restricting_resets_first_and_names_the_well_known_sids() {
        let path = |text: &str| WinPath::parse(text).unwrap();
        assert_eq!(
            restrict_statements(&[path(r"C:\k\cni")], &[path(r"C:\k"), path(r"C:\var\log\it's")]),
            [
                r"foreach ($p in @('C:\k\cni')) { icacls.exe $p /reset /q; if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE } }",
                r"foreach ($p in @('C:\k', 'C:\var\log\it''s')) { icacls.exe $p /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' /grant:r '*S-1-5-32-544:(OI)(CI)F' /q; if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE } }",
            ]
        );
        assert_eq!(restrict_statements(&[], &[path(r"C:\k")]).len(), 1);
        assert!(restrict_statements(&[], &[]).is_empty());
    }
}
