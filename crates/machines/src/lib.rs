//! Pure decisions about Windows Machines of the OpenShift machine API; no cluster or SSH IO.
//!
//! - [`desired_instance`]: what the operator does about one Machine on the cluster's platform — configure it
//!   (address, SSH user, expected Node name: the platform rules of the Go operator), deconfigure it (being
//!   deleted), or leave it alone, with a typed [`SkipReason`]. [`record_name`] names its `WindowsInstance`.
//! - [`generate`]: a Windows MachineSet for AWS, Azure, GCP, vSphere or Nutanix from [`MachineSetOptions`], whose
//!   missing fields [`ClusterDefaults`] can fill from the cluster's `Infrastructure cluster`.
//! - [`names`]: the fixed label, annotation, namespace and Secret names.

mod decision;
mod machineset;
pub mod names;
mod node_name;

pub use decision::{
    ConfigurablePhase, MachineDecision, MachineInstance, SkipReason, desired_instance, is_windows, ssh_user,
};
pub use machineset::{
    ClusterDefaults, Field, MachineSetDocument, MachineSetError, MachineSetOptions, MachineSetPlatform, NoMachineSets,
    generate, machineset_name,
};
pub use node_name::record_name;
