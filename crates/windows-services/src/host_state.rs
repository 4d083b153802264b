//! The desired state of a whole host ([`HostState`]): services, directories, files (by hash), machine environment
//! variables, firewall rules, registry values, trusted root certificates, Defender exclusions and rotated files.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::host::{EnvVarName, FirewallRule, RegistryValue, RotatedFiles, Sha256Hex};
use crate::path::WinPath;
use crate::service::{ServiceName, ServiceSpec};
use crate::trust::TrustedRoots;

/// Everything that should hold on a host: the input of `plan` and of the state probe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostState {
    /// Services to create, configure and keep running.
    pub services: Vec<ServiceSpec>,
    /// Managed services that must not exist (e.g. left by an earlier version); stopped and deleted if present.
    pub removed_services: BTreeSet<ServiceName>,
    /// Directories that must exist.
    pub directories: BTreeSet<WinPath>,
    /// Directories that must exist and grant only SYSTEM and Administrators (full control, inherited by everything
    /// below; nothing inherited from above), like the directories of desired files within them
    /// ([`crate::grants_only_system_and_administrators`]).
    #[serde(default)]
    pub private_directories: BTreeSet<WinPath>,
    /// Files that must hold the given content; the caller uploads those whose observed hash differs.
    pub files: BTreeMap<WinPath, Sha256Hex>,
    /// Directories the desired state owns entirely, each with its index file (one of [`HostState::files`]): when
    /// the host holds an index that differs from the desired one, the directory is emptied before the files are
    /// replaced, so files that are no longer desired go. A host without the index is left alone (a fresh host has
    /// nothing there).
    pub owned_directories: BTreeMap<WinPath, WinPath>,
    /// Machine environment variables: `Some(value)` to set, `None` (or an empty value) to remove.
    pub machine_env: BTreeMap<EnvVarName, Option<String>>,
    /// Firewall rules that must exist.
    pub firewall_rules: BTreeSet<FirewallRule>,
    /// Names of firewall rules that must not exist (the product's, on deconfiguration); removed if present.
    pub removed_firewall_rules: BTreeSet<String>,
    /// Registry values that must hold.
    pub registry_values: BTreeSet<RegistryValue>,
    /// The machine's trusted root certificates, when the desired state manages them.
    pub trusted_roots: Option<TrustedRoots>,
    /// Programs Windows Defender must not scan (process exclusions), added while Defender runs (its `MsMpEng`
    /// process exists); a host without Defender needs none.
    #[serde(default)]
    pub defender_exclusions: BTreeSet<WinPath>,
    /// Process exclusions that must not exist (the product's, on deconfiguration); removed while Defender runs.
    #[serde(default)]
    pub removed_defender_exclusions: BTreeSet<WinPath>,
    /// Files another program rotates, pruned to the newest few.
    #[serde(default)]
    pub rotated_files: BTreeSet<RotatedFiles>,
}
