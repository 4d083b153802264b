//! The desired BYOH fleet from the admin's `windows-instances` ConfigMap.
//!
//! Each ConfigMap entry names one Windows host: the key is an IPv4 address or a DNS name, the value is exactly one
//! field `username=<name>`. [`build_inventory`] validates every entry on its own and returns an [`Inventory`]: the
//! valid hosts as [`DesiredInstance`]s and one [`EntryProblem`] per refused or dropped entry, so a bad entry never
//! blocks a good one. [`instance_name`] maps a key to the name of its `WindowsInstance` object, and
//! [`parse_config_map`] reads the ConfigMap manifest as `kubectl get cm windows-instances -o yaml` prints it.
//!
//! Name resolution goes through the [`Resolver`] trait: [`SystemResolver`] asks the operating system,
//! [`StaticResolver`] answers from a fixed table (tests, offline tools).

mod address;
mod entry;
mod inventory;
mod manifest;
mod name;
mod resolve;
mod username;

pub use address::{Address, AddressError, DnsNameError, parse_address};
pub use entry::{ValueError, parse_value};
pub use inventory::{DesiredInstance, EntryProblem, Inventory, ProblemReason, Severity, build_inventory};
pub use manifest::{InstancesConfigMap, ManifestError, load_config_map, parse_config_map};
pub use name::instance_name;
pub use resolve::{ResolveError, Resolver, StaticResolver, SystemResolver};
pub use username::{UsernameError, validate_username};
