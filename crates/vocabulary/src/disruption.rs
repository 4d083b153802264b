//! [`DisruptionKind`]: what a host pass or an admin asks the fleet's unavailability budget for, shared by the
//! upgrade planner (its requests and its `Disrupt` action) and the `WindowsInstance` record.
//!
//! ```
//! use wmco_vocabulary::DisruptionKind;
//!
//! assert_eq!(serde_json::to_string(&DisruptionKind::Reboot)?, "\"Reboot\"");
//! assert_eq!(DisruptionKind::Restart.to_string(), "Restart");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

// The type and variant documentation below is the CRD schema's description (schemars feature): changing it changes
// the generated `WindowsInstance` CRD.

/// What a disruption of a Windows host does to it; each kind takes one unit of the `--max-unavailable` budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum DisruptionKind {
    /// The node services are restarted in place for changed cluster settings or files; the Node is not drained.
    Restart,
    /// The host is restarted (Windows reboots); the Node is cordoned and drained first.
    Reboot,
}

impl DisruptionKind {
    /// Every kind.
    pub const ALL: [DisruptionKind; 2] = [DisruptionKind::Restart, DisruptionKind::Reboot];

    /// The kind's name as the record spells it.
    ///
    /// ```
    /// assert_eq!(wmco_vocabulary::DisruptionKind::Reboot.as_str(), "Reboot");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            DisruptionKind::Restart => "Restart",
            DisruptionKind::Reboot => "Reboot",
        }
    }
}

impl fmt::Display for DisruptionKind {
    /// The [`DisruptionKind::as_str`] name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_serde_name_for_every_kind() {
        for kind in DisruptionKind::ALL {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<DisruptionKind>(&format!("\"{kind}\"")).unwrap(), kind);
        }
    }
}
