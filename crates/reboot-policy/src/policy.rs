//! The admin's reboot settings: [`RebootPolicy`] (`--reboot-policy`) and the [`MaintenanceWindow`].

use std::fmt;
use std::str::FromStr;

use crate::{MaintenanceWindow, RebootSettingsError};

/// Whether the host's own pending-reboot markers lead to a reboot (`--reboot-policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RebootPolicy {
    /// Only explicit requests reboot a host (the admin's token, the Node's `reboot-required`): the default.
    #[default]
    Never,
    /// A host whose markers say Windows needs a reboot is rebooted too, inside the maintenance window.
    WhenRequired,
}

impl RebootPolicy {
    /// The flag value: `never` or `when-required`.
    pub fn as_str(self) -> &'static str {
        match self {
            RebootPolicy::Never => "never",
            RebootPolicy::WhenRequired => "when-required",
        }
    }
}

impl fmt::Display for RebootPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RebootPolicy {
    type Err = RebootSettingsError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [RebootPolicy::Never, RebootPolicy::WhenRequired]
            .into_iter()
            .find(|policy| policy.as_str() == text)
            .ok_or_else(|| RebootSettingsError::UnknownPolicy(text.to_owned()))
    }
}

/// What the admin decided about reboots at start: the policy and the window host-asked reboots wait for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebootSettings {
    /// Whether the host's markers count.
    pub policy: RebootPolicy,
    /// When a reboot the host asked for may start.
    pub window: MaintenanceWindow,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_reads_and_writes_its_flag_values() {
        for policy in [RebootPolicy::Never, RebootPolicy::WhenRequired] {
            assert_eq!(policy.to_string().parse(), Ok(policy));
        }
        assert_eq!(RebootPolicy::default(), RebootPolicy::Never);
        assert_eq!(RebootSettings::default().policy, RebootPolicy::Never);
        assert!(RebootSettings::default().window.is_always_open());
    }

    #[test]
    fn an_unknown_policy_is_named_in_the_error() {
        for bad in ["always", "Never", "when_required", ""] {
            let error = bad.parse::<RebootPolicy>().expect_err(bad);
            assert_eq!(error.to_string(), format!("unknown reboot policy {bad:?} (expected never or when-required)"));
        }
    }
}
