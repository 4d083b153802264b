//! [`RebootMarker`]: the places Windows records that a restart is needed to finish an operation, as the state probe
//! reads them (`wmco-windows-services`), the `RebootRequired` condition names them and the reboot policy
//! (`wmco-reboot-policy`) weighs them. docs/testing.md § "Simulated Windows hosts" gives their sources.

use std::fmt;
use std::str::FromStr;

/// One place where Windows records that a restart is needed.
///
/// ```
/// use wmco_vocabulary::RebootMarker;
/// assert_eq!(RebootMarker::WindowsUpdate.to_string(), "WindowsUpdate");
/// assert_eq!("PendingFileRenameOperations".parse(), Ok(RebootMarker::PendingFileRenameOperations));
/// assert!("RebootPending".parse::<RebootMarker>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RebootMarker {
    /// The key `HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired` exists:
    /// Windows Update installed an update that completes at the next restart.
    WindowsUpdate,
    /// The key `HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending` exists:
    /// servicing (a cumulative update, a feature, DISM) staged changes that complete at the next restart.
    ComponentBasedServicing,
    /// `HKLM\SYSTEM\CurrentControlSet\Control\Session Manager` `PendingFileRenameOperations` (REG_MULTI_SZ) holds
    /// entries: files Session Manager renames or deletes at the next boot (`MoveFileEx` with
    /// `MOVEFILE_DELAY_UNTIL_REBOOT`). Installers and anti-virus updates leave such entries too, for their own
    /// clean-up, so this marker alone may not mean the system needs a restart.
    PendingFileRenameOperations,
}

impl RebootMarker {
    /// Every marker, in the order the probe reads them and reasons list them.
    pub const ALL: [RebootMarker; 3] =
        [RebootMarker::WindowsUpdate, RebootMarker::ComponentBasedServicing, RebootMarker::PendingFileRenameOperations];

    /// The marker's name as conditions, Events and logs show it.
    pub fn name(self) -> &'static str {
        match self {
            RebootMarker::WindowsUpdate => "WindowsUpdate",
            RebootMarker::ComponentBasedServicing => "ComponentBasedServicing",
            RebootMarker::PendingFileRenameOperations => "PendingFileRenameOperations",
        }
    }
}

impl fmt::Display for RebootMarker {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for RebootMarker {
    type Err = String;

    /// The marker [`name`](Self::name) names; the error is the unknown name.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|marker| marker.name() == name).ok_or_else(|| name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marker_reads_back_its_name() {
        for marker in RebootMarker::ALL {
            assert_eq!(marker.to_string().parse(), Ok(marker));
        }
    }
}
