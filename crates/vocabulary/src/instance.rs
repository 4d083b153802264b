//! A host record's [`InstancePhase`] (where the host is in its life cycle) and [`InstanceOrigin`] (which admin
//! input it comes from), as the `WindowsInstance` custom resource spells them.
//!
//! ```
//! use wmco_vocabulary::{InstanceOrigin, InstancePhase};
//!
//! let phase: InstancePhase = serde_json::from_str("\"WaitingForNode\"")?;
//! assert_eq!(phase, InstancePhase::WaitingForNode);
//! assert_eq!(InstancePhase::default(), InstancePhase::Pending);
//! assert_eq!(serde_json::to_string(&InstanceOrigin::Byoh)?, "\"Byoh\"");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

// The type and variant documentation below is the CRD schema's description (schemars feature): changing it changes
// the generated `WindowsInstance` CRD.

/// Which admin input a `WindowsInstance` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum InstanceOrigin {
    /// An entry of the `windows-instances` ConfigMap (bring your own host).
    Byoh,
    /// A Windows `Machine` of the machine API.
    Machine,
}

impl InstanceOrigin {
    /// The origin as people write it: `BYOH` or `Machine` (the record serializes `Byoh`).
    ///
    /// ```
    /// use wmco_vocabulary::InstanceOrigin;
    /// assert_eq!(InstanceOrigin::Byoh.label(), "BYOH");
    /// assert_eq!(InstanceOrigin::Machine.to_string(), "Machine");
    /// ```
    pub fn label(self) -> &'static str {
        match self {
            InstanceOrigin::Byoh => "BYOH",
            InstanceOrigin::Machine => "Machine",
        }
    }
}

impl fmt::Display for InstanceOrigin {
    /// The [`InstanceOrigin::label`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Where a host is in its life cycle; every step resumes from the recorded phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum InstancePhase {
    /// Known, not yet touched.
    #[default]
    Pending,
    /// Files, containerd and kubelet are being set up over SSH.
    Configuring,
    /// The kubelet runs; its Node and certificates are awaited.
    WaitingForNode,
    /// The Node is Ready and every service is configured.
    Ready,
    /// Being moved to the operator's version.
    Upgrading,
    /// Services and files are being removed before the record goes.
    Deconfiguring,
    /// The last attempt failed; `lastError` says why.
    Failed,
}

/// How long after a configuration attempt opened its bootstrap window (the record's `configuringSince`) the CSR
/// approver still takes the kubelet's first client request (rule F1). The flow opens the window again when a pass
/// writes a fresh bootstrap kubeconfig or starts the kubelet of a host without a Node and the window is
/// [`BOOTSTRAP_WINDOW_REOPEN_AFTER`] old, so a kubelet that retries (a new request every 15 minutes) always lands in
/// an open window while the operator keeps configuring its host.
pub const BOOTSTRAP_WINDOW: Duration = Duration::from_secs(2 * 60 * 60);

/// The age at which a pass that writes bootstrap files opens the bootstrap window again: half of
/// [`BOOTSTRAP_WINDOW`], more than the node-bootstrapper token's refresh (30 minutes) plus a kubelet retry (15).
pub const BOOTSTRAP_WINDOW_REOPEN_AFTER: Duration = Duration::from_secs(60 * 60);

impl InstancePhase {
    /// Every phase, in life-cycle order.
    pub const ALL: [InstancePhase; 7] = [
        InstancePhase::Pending,
        InstancePhase::Configuring,
        InstancePhase::WaitingForNode,
        InstancePhase::Ready,
        InstancePhase::Upgrading,
        InstancePhase::Deconfiguring,
        InstancePhase::Failed,
    ];

    /// The phase's name as the record spells it.
    ///
    /// ```
    /// assert_eq!(wmco_vocabulary::InstancePhase::Deconfiguring.as_str(), "Deconfiguring");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            InstancePhase::Pending => "Pending",
            InstancePhase::Configuring => "Configuring",
            InstancePhase::WaitingForNode => "WaitingForNode",
            InstancePhase::Ready => "Ready",
            InstancePhase::Upgrading => "Upgrading",
            InstancePhase::Deconfiguring => "Deconfiguring",
            InstancePhase::Failed => "Failed",
        }
    }
}

impl fmt::Display for InstancePhase {
    /// The [`InstancePhase::as_str`] name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_serde_name_for_every_phase() {
        for phase in InstancePhase::ALL {
            assert_eq!(serde_json::to_string(&phase).unwrap(), format!("\"{phase}\""));
        }
    }
}
