//! What Windows keeps while a restart is needed to finish an operation (issue 37), and what a boot does with it: the
//! key `...\WindowsUpdate\Auto Update\RebootRequired` (Windows Update installed an update that completes at the
//! next restart), the key `...\Component Based Servicing\RebootPending` (servicing staged changes) and Session
//! Manager's `PendingFileRenameOperations` (REG_MULTI_SZ: pairs of a source and a target, `\??\`-prefixed, an empty
//! target meaning delete and a `!` before the target replace-existing; what `MoveFileEx` with
//! `MOVEFILE_DELAY_UNTIL_REBOOT` writes). A boot carries out the file operations in order and removes the value, and
//! the servicing stacks finish and remove their keys. Sources in docs/testing.md § "Simulated Windows hosts".
//!
//! A fresh host has none of them, like a freshly patched one; tests add them with [`Host::mark_pending_reboot`],
//! [`Host::schedule_file_operation_at_boot`], `NewHost.pending_reboot` or the control interface's
//! `POST /hosts/<name>/pending-reboot`.

use crate::disk::WinPath;
use crate::host::{Host, RegValue};

/// Windows Update's marker key.
pub const WINDOWS_UPDATE_REBOOT_REQUIRED_KEY: &str =
    r"HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired";
/// Component Based Servicing's marker key.
pub const CBS_REBOOT_PENDING_KEY: &str =
    r"HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending";
/// The key holding `PendingFileRenameOperations`.
pub const SESSION_MANAGER_KEY: &str = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager";
/// The value Session Manager reads at boot.
pub const PENDING_FILE_RENAME_OPERATIONS: &str = "PendingFileRenameOperations";
/// The file an installer's leftover deletion names (an MSI rollback file, as in Sysinternals' PendMoves example).
pub const INSTALLER_LEFTOVER: &str = r"C:\Config.Msi\3ec7bbbf.rbf";

/// One pending-reboot marker, as tests ask for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
pub enum PendingRebootMarker {
    /// Windows Update's `RebootRequired` key.
    WindowsUpdate,
    /// Component Based Servicing's `RebootPending` key.
    ComponentBasedServicing,
    /// An entry in `PendingFileRenameOperations`.
    PendingFileRenameOperations,
}

impl Host {
    /// The parent keys every Windows Server host has (the marker keys themselves exist only while a restart is
    /// pending).
    pub(crate) fn create_servicing_keys(&mut self) {
        for key in [WINDOWS_UPDATE_REBOOT_REQUIRED_KEY, CBS_REBOOT_PENDING_KEY] {
            let parent = key.rsplit_once('\\').map_or(key, |(parent, _)| parent);
            self.ensure_registry_key(parent);
        }
        self.ensure_registry_key(SESSION_MANAGER_KEY);
    }

    /// Leaves `marker` as its writer would: Windows Update's or servicing's key is created; a file operation is a
    /// deletion of [`INSTALLER_LEFTOVER`] (written to the disk), as an installer leaves one behind.
    ///
    /// # Errors
    /// [`crate::disk::DiskError`] if the leftover file cannot be written.
    pub fn mark_pending_reboot(&mut self, marker: PendingRebootMarker) -> Result<(), crate::disk::DiskError> {
        match marker {
            PendingRebootMarker::WindowsUpdate => {
                self.ensure_registry_key(WINDOWS_UPDATE_REBOOT_REQUIRED_KEY);
            }
            PendingRebootMarker::ComponentBasedServicing => {
                self.ensure_registry_key(CBS_REBOOT_PENDING_KEY);
            }
            PendingRebootMarker::PendingFileRenameOperations => {
                let leftover = WinPath::parse(INSTALLER_LEFTOVER)?;
                if let Some(directory) = leftover.parent() {
                    self.disk.create_dir_all(&directory)?;
                }
                self.disk.write(&leftover, b"rollback")?;
                self.schedule_file_operation_at_boot(&leftover, None);
            }
        }
        Ok(())
    }

    /// What `MoveFileEx(source, target, MOVEFILE_DELAY_UNTIL_REBOOT | MOVEFILE_REPLACE_EXISTING)` records: one pair
    /// appended to `PendingFileRenameOperations` (`target` `None`: delete `source`).
    pub fn schedule_file_operation_at_boot(&mut self, source: &WinPath, target: Option<&WinPath>) {
        let mut entries = self.pending_file_rename_operations();
        entries.push(format!(r"\??\{source}"));
        entries.push(target.map(|target| format!(r"!\??\{target}")).unwrap_or_default());
        self.set_registry_value(SESSION_MANAGER_KEY, PENDING_FILE_RENAME_OPERATIONS, RegValue::MultiString(entries));
    }

    /// The markers present, read from the registry as Windows keeps them.
    pub fn pending_reboot_markers(&self) -> Vec<PendingRebootMarker> {
        let key_exists = |key: &str| self.registry.contains_key(&key.to_lowercase());
        let mut markers = Vec::new();
        if key_exists(WINDOWS_UPDATE_REBOOT_REQUIRED_KEY) {
            markers.push(PendingRebootMarker::WindowsUpdate);
        }
        if key_exists(CBS_REBOOT_PENDING_KEY) {
            markers.push(PendingRebootMarker::ComponentBasedServicing);
        }
        if self.pending_file_rename_operations().iter().any(|entry| !entry.is_empty()) {
            markers.push(PendingRebootMarker::PendingFileRenameOperations);
        }
        markers
    }

    /// At boot: Session Manager carries out the pending file operations in order (one that fails is skipped) and
    /// removes the value; servicing and Windows Update finish and remove their keys.
    pub(crate) fn complete_pending_operations(&mut self) {
        let entries = self.pending_file_rename_operations();
        for pair in entries.chunks(2) {
            let Some(source) = pair.first().and_then(|source| boot_path(source)) else { continue };
            // Each operation that fails (a missing source, say) is skipped; the others still run.
            match pair.get(1).map_or("", String::as_str) {
                "" => {
                    let _ = self.disk.remove(&source);
                }
                target => {
                    let replace = target.starts_with('!');
                    let Some(target) = boot_path(target.trim_start_matches('!')) else { continue };
                    if replace {
                        let _ = self.disk.remove(&target);
                    }
                    let _ = self.disk.rename(&source, &target);
                }
            }
        }
        if let Some(key) = self.registry.get_mut(&SESSION_MANAGER_KEY.to_lowercase()) {
            key.values.remove(&PENDING_FILE_RENAME_OPERATIONS.to_lowercase());
        }
        for key in [WINDOWS_UPDATE_REBOOT_REQUIRED_KEY, CBS_REBOOT_PENDING_KEY] {
            let lowered = key.to_lowercase();
            self.registry.retain(|stored, _| *stored != lowered && !stored.starts_with(&format!("{lowered}\\")));
        }
    }

    /// The entries of `PendingFileRenameOperations` (none when the value is absent or of another type).
    fn pending_file_rename_operations(&self) -> Vec<String> {
        let value = self
            .registry
            .get(&SESSION_MANAGER_KEY.to_lowercase())
            .and_then(|key| key.values.get(&PENDING_FILE_RENAME_OPERATIONS.to_lowercase()));
        match value {
            Some((_, RegValue::MultiString(entries))) => entries.clone(),
            _ => Vec::new(),
        }
    }
}

/// A `\??\C:\...` path of a file operation, as a drive path.
fn boot_path(entry: &str) -> Option<WinPath> {
    WinPath::parse(entry.strip_prefix(r"\??\").unwrap_or(entry)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::test_host;

    #[test]
    fn a_fresh_host_has_no_marker_and_each_one_is_kept_where_windows_keeps_it() {
        let (_root, mut host) = test_host();
        assert!(host.pending_reboot_markers().is_empty());
        host.mark_pending_reboot(PendingRebootMarker::WindowsUpdate).unwrap();
        host.mark_pending_reboot(PendingRebootMarker::PendingFileRenameOperations).unwrap();
        assert_eq!(
            host.pending_reboot_markers(),
            [PendingRebootMarker::WindowsUpdate, PendingRebootMarker::PendingFileRenameOperations]
        );
        let operations = host.pending_file_rename_operations();
        assert_eq!(operations, [r"\??\C:\Config.Msi\3ec7bbbf.rbf", ""], "a pair: source, empty target (delete)");
        host.mark_pending_reboot(PendingRebootMarker::ComponentBasedServicing).unwrap();
        assert_eq!(host.pending_reboot_markers().len(), 3);
    }

    #[test]
    fn a_boot_carries_out_the_file_operations_and_clears_every_marker() {
        let (_root, mut host) = test_host();
        for marker in [
            PendingRebootMarker::WindowsUpdate,
            PendingRebootMarker::ComponentBasedServicing,
            PendingRebootMarker::PendingFileRenameOperations,
        ] {
            host.mark_pending_reboot(marker).unwrap();
        }
        let staged = WinPath::parse(r"C:\Windows\Temp\new.dll").unwrap();
        let target = WinPath::parse(r"C:\Windows\System32\in-use.dll").unwrap();
        host.disk.write(&staged, b"new").unwrap();
        host.disk.write(&target, b"old").unwrap();
        host.schedule_file_operation_at_boot(&staged, Some(&target));
        host.reboot();
        assert!(host.pending_reboot_markers().is_empty());
        assert!(host.disk.entry(&WinPath::parse(INSTALLER_LEFTOVER).unwrap()).is_none(), "deleted at boot");
        assert_eq!(host.disk.read(&target).unwrap(), b"new", "replaced at boot");
        assert!(host.registry.contains_key(&SESSION_MANAGER_KEY.to_lowercase()), "the key stays, the value goes");
    }

    #[test]
    fn empty_entries_alone_are_no_marker() {
        let (_root, mut host) = test_host();
        let empty = RegValue::MultiString(vec![String::new()]);
        host.set_registry_value(SESSION_MANAGER_KEY, PENDING_FILE_RENAME_OPERATIONS, empty);
        assert!(host.pending_reboot_markers().is_empty());
    }
}
