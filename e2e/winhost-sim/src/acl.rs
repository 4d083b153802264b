//! Discretionary access control lists of the simulated drive (docs/testing.md § "Simulated Windows hosts"): `C:\`
//! carries the default ACL of Windows Server 2016–2022 (SYSTEM and Administrators full control; Users read and
//! execute everywhere, create folders in every folder and create files in subfolders; CREATOR OWNER full control
//! of what they create); every other path carries only its own settings — whether its DACL is protected from
//! inheritance (`SE_DACL_PROTECTED`) and its explicit entries — and inherits the rest from its parent, computed at
//! each read. That is what Windows' automatic propagation keeps true after `SetNamedSecurityInfo` changes a
//! directory (icacls and Set-Acl use it): inherited entries follow the parent.
//!
//! Read back as SDDL (`(Get-Acl).Sddl`) and changed by `icacls` (the `native` module) and `Set-Acl`.

use std::fmt::Write as _;

/// `NT AUTHORITY\SYSTEM`.
pub const SYSTEM: &str = "S-1-5-18";
/// `BUILTIN\Administrators`.
pub const ADMINISTRATORS: &str = "S-1-5-32-544";
/// `BUILTIN\Users`.
pub const USERS: &str = "S-1-5-32-545";
/// `CREATOR OWNER`: replaced by the owner of what inherits it.
pub const CREATOR_OWNER: &str = "S-1-3-0";
/// `NT AUTHORITY\Authenticated Users`.
pub const AUTHENTICATED_USERS: &str = "S-1-5-11";
/// `Everyone`.
pub const EVERYONE: &str = "S-1-1-0";
/// `NT SERVICE\TrustedInstaller`, the owner of `C:\`.
pub const TRUSTED_INSTALLER: &str = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464";

/// `FILE_ALL_ACCESS` (icacls `F`, SDDL `FA`).
pub const FULL_CONTROL: u32 = 0x001f_01ff;
/// Read and execute (icacls `RX`).
pub const READ_EXECUTE: u32 = 0x0012_00a9;
/// `FILE_ADD_FILE` on a directory (icacls `WD`, SDDL `DC`).
pub const ADD_FILE: u32 = 0x2;
/// `FILE_ADD_SUBDIRECTORY` on a directory (icacls `AD`, SDDL `LC`).
pub const ADD_SUBDIRECTORY: u32 = 0x4;
/// `GENERIC_ALL` (icacls `GA`, SDDL `GA`).
pub const GENERIC_ALL: u32 = 0x1000_0000;

/// One access control entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ace {
    /// An allow entry (`false`: deny).
    pub allow: bool,
    /// The trustee's SID (`S-1-5-18`).
    pub sid: String,
    /// The access mask.
    pub mask: u32,
    /// `OI`: inherited by files.
    pub object_inherit: bool,
    /// `CI`: inherited by directories.
    pub container_inherit: bool,
    /// `IO`: does not apply to the object itself, only to what inherits it.
    pub inherit_only: bool,
    /// `NP`: inherited by direct children only.
    pub no_propagate: bool,
    /// `ID`: inherited from the parent.
    pub inherited: bool,
}

impl Ace {
    /// An explicit allow entry.
    pub fn allow(sid: &str, mask: u32, object_inherit: bool, container_inherit: bool) -> Ace {
        Ace {
            allow: true,
            sid: sid.to_owned(),
            mask,
            object_inherit,
            container_inherit,
            inherit_only: false,
            no_propagate: false,
            inherited: false,
        }
    }

    /// What a child (a directory when `directory`) inherits from this entry of its parent, owned by `owner`: a
    /// CREATOR OWNER entry applies to the child as its owner and passes on unchanged (inherit-only).
    fn inherited_by(&self, directory: bool, owner: &str) -> Vec<Ace> {
        let reaches = if directory { self.container_inherit || self.object_inherit } else { self.object_inherit };
        if !reaches {
            return Vec::new();
        }
        let mut entries = Vec::new();
        let effective = !directory || self.container_inherit;
        let passes_on = directory && !self.no_propagate;
        let base = Ace { inherited: true, inherit_only: false, no_propagate: false, ..self.clone() };
        if self.sid == CREATOR_OWNER {
            if effective {
                entries.push(Ace {
                    sid: owner.to_owned(),
                    object_inherit: false,
                    container_inherit: false,
                    mask: map_generic(self.mask),
                    ..base.clone()
                });
            }
            if passes_on {
                entries.push(Ace { inherit_only: true, ..base });
            }
            return entries;
        }
        if passes_on {
            entries.push(Ace { inherit_only: !effective, ..base });
        } else if effective {
            entries.push(Ace { object_inherit: false, container_inherit: false, ..base });
        }
        entries
    }

    /// Whether the entry grants access to the object it is on (not only to what inherits it).
    pub fn applies(&self) -> bool {
        self.allow && !self.inherit_only
    }

    /// The entry in SDDL form, `(A;OICI;FA;;;SY)`.
    pub fn sddl(&self) -> String {
        let mut flags = String::new();
        for (set, text) in [
            (self.object_inherit, "OI"),
            (self.container_inherit, "CI"),
            (self.no_propagate, "NP"),
            (self.inherit_only, "IO"),
            (self.inherited, "ID"),
        ] {
            if set {
                flags.push_str(text);
            }
        }
        format!("({};{flags};{};;;{})", if self.allow { "A" } else { "D" }, sddl_rights(self.mask), sddl_sid(&self.sid))
    }
}

/// `GENERIC_ALL` as it applies to a file or directory.
fn map_generic(mask: u32) -> u32 {
    if mask & GENERIC_ALL != 0 { (mask & !GENERIC_ALL) | FULL_CONTROL } else { mask }
}

/// A path's own settings: whether its DACL is protected from inheritance, and its explicit entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AclSettings {
    /// `SE_DACL_PROTECTED`: nothing is inherited from the parent.
    pub protected: bool,
    /// The explicit entries, in order.
    pub explicit: Vec<Ace>,
}

impl AclSettings {
    /// The default ACL of `C:\` on Windows Server 2016–2022 (DISA STIG WN16-00-000160 / WN19-00-000140; docs/testing.md
    /// § "Simulated Windows hosts").
    pub fn drive_root() -> AclSettings {
        let users_ace =
            |mask, object_inherit, inherit_only| Ace { inherit_only, ..Ace::allow(USERS, mask, object_inherit, true) };
        AclSettings {
            protected: true,
            explicit: vec![
                Ace { inherit_only: true, ..Ace::allow(CREATOR_OWNER, GENERIC_ALL, true, true) },
                Ace::allow(SYSTEM, FULL_CONTROL, true, true),
                Ace::allow(ADMINISTRATORS, FULL_CONTROL, true, true),
                users_ace(ADD_SUBDIRECTORY, false, false),
                users_ace(ADD_FILE, false, true),
                users_ace(READ_EXECUTE, true, false),
            ],
        }
    }

    /// Only SYSTEM and Administrators, with full control inherited by everything below, nothing inherited from
    /// above: what `icacls <path> /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F /grant:r *S-1-5-32-544:(OI)(CI)F`
    /// leaves on a path without other explicit entries.
    pub fn system_and_administrators() -> AclSettings {
        AclSettings {
            protected: true,
            explicit: vec![
                Ace::allow(SYSTEM, FULL_CONTROL, true, true),
                Ace::allow(ADMINISTRATORS, FULL_CONTROL, true, true),
            ],
        }
    }
}

/// The DACL a path has: its explicit entries, then those it inherits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dacl {
    /// Whether inheritance is off.
    pub protected: bool,
    /// Explicit entries first, inherited ones after them.
    pub entries: Vec<Ace>,
}

impl Dacl {
    /// The DACL of a path with `settings` whose parent has `parent` (`None` for `C:\`), owned by `owner`.
    pub fn compose(settings: &AclSettings, parent: Option<&Dacl>, directory: bool, owner: &str) -> Dacl {
        let mut entries = settings.explicit.clone();
        if !settings.protected
            && let Some(parent) = parent
        {
            entries.extend(parent.entries.iter().flat_map(|entry| entry.inherited_by(directory, owner)));
        }
        Dacl { protected: settings.protected, entries }
    }

    /// The SIDs granted any access to the object itself, each once, in order.
    pub fn grantees(&self) -> Vec<String> {
        let mut sids: Vec<String> = Vec::new();
        for entry in self.entries.iter().filter(|entry| entry.applies()) {
            if !sids.contains(&entry.sid) {
                sids.push(entry.sid.clone());
            }
        }
        sids
    }

    /// Whether only SYSTEM and Administrators are granted anything (what sshd's StrictModes and the product's
    /// host directories want).
    pub fn only_system_and_administrators(&self) -> bool {
        self.grantees().iter().all(|sid| sid == SYSTEM || sid == ADMINISTRATORS)
    }

    /// The security descriptor in SDDL (`O:BAG:SYD:PAI(A;OICI;FA;;;SY)...`), as `(Get-Acl).Sddl` prints it.
    pub fn sddl(&self, owner: &str) -> String {
        let mut text = format!("O:{}G:SYD:{}AI", sddl_sid(owner), if self.protected { "P" } else { "" });
        for entry in &self.entries {
            let _ = write!(text, "{}", entry.sddl());
        }
        text
    }

    /// The entries as `Get-Acl`'s `Access` lists them, one text per entry (`BUILTIN\Users:(OI)(CI)(RX)`, an
    /// inherited one ending in `(I)`); inherit-only entries are listed too.
    pub fn access_texts(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| {
                let mut text = format!("{}:{}", account_name(&entry.sid), icacls_flags(entry));
                let _ = write!(text, "({})", icacls_rights(entry.mask));
                if entry.inherited {
                    text.push_str("(I)");
                }
                text
            })
            .collect()
    }
}

/// The SDDL alias of a well-known SID, or the SID itself.
fn sddl_sid(sid: &str) -> &str {
    match sid {
        SYSTEM => "SY",
        ADMINISTRATORS => "BA",
        USERS => "BU",
        CREATOR_OWNER => "CO",
        AUTHENTICATED_USERS => "AU",
        EVERYONE => "WD",
        other => other,
    }
}

/// The account name Windows shows for a SID (`NT AUTHORITY\SYSTEM`), or the SID.
pub fn account_name(sid: &str) -> String {
    match sid {
        SYSTEM => r"NT AUTHORITY\SYSTEM".to_owned(),
        ADMINISTRATORS => r"BUILTIN\Administrators".to_owned(),
        USERS => r"BUILTIN\Users".to_owned(),
        CREATOR_OWNER => "CREATOR OWNER".to_owned(),
        AUTHENTICATED_USERS => r"NT AUTHORITY\Authenticated Users".to_owned(),
        EVERYONE => "Everyone".to_owned(),
        other => other.to_owned(),
    }
}

/// The SID an icacls or Set-Acl principal names: `*S-1-5-18`, or an English account name. `None`: no such account
/// ("No mapping between account names and security IDs was done").
pub fn principal_sid(principal: &str) -> Option<String> {
    if let Some(sid) = principal.strip_prefix('*') {
        return sid.to_ascii_uppercase().starts_with("S-1-").then(|| sid.to_ascii_uppercase());
    }
    let lowered = principal.to_ascii_lowercase();
    let name = lowered.rsplit('\\').next().unwrap_or_default();
    Some(
        match name {
            "system" => SYSTEM,
            "administrators" => ADMINISTRATORS,
            "users" => USERS,
            "creator owner" => CREATOR_OWNER,
            "authenticated users" => AUTHENTICATED_USERS,
            "everyone" => EVERYONE,
            _ => return None,
        }
        .to_owned(),
    )
}

/// SDDL access rights: `FA`, `GA`, a run of object-right aliases when they cover the mask (`DCLC`), else hex.
fn sddl_rights(mask: u32) -> String {
    const ALIASES: [(u32, &str); 8] =
        [(0x1, "CC"), (0x2, "DC"), (0x4, "LC"), (0x8, "SW"), (0x10, "RP"), (0x20, "WP"), (0x40, "DT"), (0x80, "LO")];
    match mask {
        FULL_CONTROL => return "FA".to_owned(),
        GENERIC_ALL => return "GA".to_owned(),
        _ => {}
    }
    let covered: u32 = ALIASES.iter().filter(|(bit, _)| mask & bit != 0).map(|(bit, _)| bit).sum();
    if covered == mask && mask != 0 {
        ALIASES.iter().filter(|(bit, _)| mask & bit != 0).map(|(_, alias)| *alias).collect()
    } else {
        format!("0x{mask:x}")
    }
}

/// icacls' inheritance flags of an entry, `(OI)(CI)(IO)`.
fn icacls_flags(entry: &Ace) -> String {
    [
        (entry.object_inherit, "(OI)"),
        (entry.container_inherit, "(CI)"),
        (entry.inherit_only, "(IO)"),
        (entry.no_propagate, "(NP)"),
    ]
    .iter()
    .filter(|(set, _)| *set)
    .map(|(_, text)| *text)
    .collect()
}

/// icacls' simple rights (`F`, `M`, `RX`, `R`, `W`) or its list of specific rights.
fn icacls_rights(mask: u32) -> String {
    if let Some((_, name)) = SIMPLE_RIGHTS.iter().find(|(bits, _)| *bits == mask) {
        return (*name).to_owned();
    }
    SPECIFIC_RIGHTS.iter().filter(|(bits, _)| mask & bits != 0).map(|(_, name)| *name).collect::<Vec<_>>().join(",")
}

/// icacls' simple rights.
const SIMPLE_RIGHTS: [(u32, &str); 5] =
    [(FULL_CONTROL, "F"), (0x0013_01bf, "M"), (READ_EXECUTE, "RX"), (0x0012_0089, "R"), (0x0010_0116, "W")];

/// icacls' specific rights.
const SPECIFIC_RIGHTS: [(u32, &str); 19] = [
    (0x0001_0000, "D"),
    (0x0002_0000, "RC"),
    (0x0004_0000, "WDAC"),
    (0x0008_0000, "WO"),
    (0x0010_0000, "S"),
    (0x0100_0000, "AS"),
    (0x0200_0000, "MA"),
    (0x8000_0000, "GR"),
    (0x4000_0000, "GW"),
    (0x2000_0000, "GE"),
    (GENERIC_ALL, "GA"),
    (0x1, "RD"),
    (ADD_FILE, "WD"),
    (ADD_SUBDIRECTORY, "AD"),
    (0x8, "REA"),
    (0x10, "WEA"),
    (0x20, "X"),
    (0x40, "DC"),
    (0x80, "RA"),
];

/// Parses an icacls permission, `(OI)(CI)F`, `(OI)(CI)(F)` or `(D,WDAC)`, into an explicit entry for `sid`.
/// `None` for a permission icacls refuses.
pub fn parse_icacls_grant(sid: &str, permission: &str) -> Option<Ace> {
    let mut entry = Ace::allow(sid, 0, false, false);
    let mut rest = permission;
    while let Some(group) = rest.strip_prefix('(') {
        let (inner, after) = group.split_once(')')?;
        rest = after;
        match inner.to_ascii_uppercase().as_str() {
            "OI" => entry.object_inherit = true,
            "CI" => entry.container_inherit = true,
            "IO" => entry.inherit_only = true,
            "NP" => entry.no_propagate = true,
            rights => entry.mask |= rights_mask(rights)?,
        }
    }
    if !rest.is_empty() {
        entry.mask |= rights_mask(&rest.to_ascii_uppercase())?;
    }
    (entry.mask != 0).then_some(entry)
}

/// The mask of a simple right or of a comma-separated list of specific rights.
fn rights_mask(text: &str) -> Option<u32> {
    if let Some((bits, _)) = SIMPLE_RIGHTS.iter().find(|(_, name)| *name == text) {
        return Some(*bits);
    }
    text.split(',')
        .map(|name| SPECIFIC_RIGHTS.iter().find(|(_, known)| *known == name.trim()).map(|(bits, _)| *bits))
        .sum()
}

/// Parses an entry as [`Dacl::access_texts`] prints it (for `Set-Acl`): `BUILTIN\Users:(OI)(CI)(RX)`, `(I)` at the
/// end of an inherited one.
pub fn parse_access_text(text: &str) -> Option<Ace> {
    let (principal, permission) = text.rsplit_once(':')?;
    let (permission, inherited) = permission.strip_suffix("(I)").map_or((permission, false), |rest| (rest, true));
    let sid = principal_sid(principal).or_else(|| principal_sid(&format!("*{principal}")))?;
    parse_icacls_grant(&sid, permission).map(|entry| Ace { inherited, ..entry })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child_of(parent: &Dacl, settings: &AclSettings, directory: bool) -> Dacl {
        Dacl::compose(settings, Some(parent), directory, ADMINISTRATORS)
    }

    #[test]
    fn a_directory_under_the_drive_root_lets_users_read_and_create() {
        let root = Dacl::compose(&AclSettings::drive_root(), None, true, TRUSTED_INSTALLER);
        assert_eq!(
            root.sddl(TRUSTED_INSTALLER),
            format!(
                "O:{TRUSTED_INSTALLER}G:SYD:PAI(A;OICIIO;GA;;;CO)(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;CI;LC;;;BU)\
                 (A;CIIO;DC;;;BU)(A;OICI;0x1200a9;;;BU)"
            )
        );
        let k = child_of(&root, &AclSettings::default(), true);
        assert_eq!(
            k.sddl(ADMINISTRATORS),
            "O:BAG:SYD:AI(A;ID;FA;;;BA)(A;OICIIOID;GA;;;CO)(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;CIID;LC;;;BU)\
             (A;CIID;DC;;;BU)(A;OICIID;0x1200a9;;;BU)"
        );
        assert_eq!(k.grantees(), [ADMINISTRATORS, SYSTEM, USERS]);
        let file = child_of(&k, &AclSettings::default(), false);
        assert_eq!(file.grantees(), [ADMINISTRATORS, SYSTEM, USERS], "Users read the files below too");
        assert!(!file.only_system_and_administrators());
    }

    #[test]
    fn a_protected_directory_passes_only_its_own_entries_on() {
        let root = Dacl::compose(&AclSettings::drive_root(), None, true, TRUSTED_INSTALLER);
        let k = child_of(&root, &AclSettings::system_and_administrators(), true);
        assert_eq!(k.sddl(ADMINISTRATORS), "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
        let cni = child_of(&k, &AclSettings::default(), true);
        assert_eq!(cni.sddl(ADMINISTRATORS), "O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)");
        let token = child_of(&cni, &AclSettings::default(), false);
        assert_eq!(token.sddl(ADMINISTRATORS), "O:BAG:SYD:AI(A;ID;FA;;;SY)(A;ID;FA;;;BA)");
        assert!(token.only_system_and_administrators());
    }

    #[test]
    fn icacls_permissions_parse_in_both_forms() {
        let full = parse_icacls_grant(SYSTEM, "(OI)(CI)F").unwrap();
        assert_eq!(full, Ace::allow(SYSTEM, FULL_CONTROL, true, true));
        assert_eq!(parse_icacls_grant(SYSTEM, "(OI)(CI)(F)"), Some(full));
        assert_eq!(parse_icacls_grant(USERS, "(D,WDAC)").map(|entry| entry.mask), Some(0x0005_0000));
        assert_eq!(parse_icacls_grant(USERS, "(OI)"), None);
        assert_eq!(parse_icacls_grant(USERS, "Q"), None);
        assert_eq!(principal_sid("*s-1-5-32-544").as_deref(), Some(ADMINISTRATORS));
        assert_eq!(principal_sid(r"NT AUTHORITY\SYSTEM").as_deref(), Some(SYSTEM));
        assert_eq!(principal_sid("nobody"), None);
        let texts = Dacl { protected: false, entries: vec![Ace { inherited: true, ..full_users() }] }.access_texts();
        assert_eq!(texts, [r"BUILTIN\Users:(OI)(CI)(RX)(I)"]);
        assert_eq!(parse_access_text(&texts[0]), Some(Ace { inherited: true, ..full_users() }));
    }

    fn full_users() -> Ace {
        Ace::allow(USERS, READ_EXECUTE, true, true)
    }
}
