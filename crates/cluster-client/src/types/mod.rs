//! Typed API objects: the product's own `WindowsInstance` and the OpenShift objects it reads, each with only the
//! fields the operator uses and every other field preserved on a round trip.
//!
//! ```
//! use wmco_cluster_client::types::{InstanceOrigin, WindowsInstance, WindowsInstanceSpec};
//!
//! let spec = WindowsInstanceSpec {
//!     address: "10.0.0.5".into(),
//!     username: "Administrator".into(),
//!     origin: InstanceOrigin::Byoh,
//!     machine_name: None,
//!     expected_node_name: None,
//! };
//! let instance = WindowsInstance::new("byoh-10-0-0-5", spec);
//! assert_eq!(instance.spec.address, "10.0.0.5");
//! ```

mod instance_conditions;
mod machine;
mod machineconfiguration;
mod openshift_config;
mod operator_network;
mod windows_instance;

pub use instance_conditions::{
    AUTHENTICATION_FAILED_CONDITION, ConditionState, DEGRADED_CONDITION, HOST_KEY_MISMATCH_CONDITION,
    HOSTNAME_CHANGED_CONDITION, NODE_NAME_CONFLICT_CONDITION, PREFLIGHT_FAILED_CONDITION, PROGRESSING_CONDITION,
    READY_CONDITION, REBOOT_REQUIRED_CONDITION, UPGRADING_CONDITION,
};
pub use machine::{
    Machine, MachineAddress, MachineSet, MachineSetSpec, MachineSetStatus, MachineSpec, MachineStatus, NodeRef,
};
pub use machineconfiguration::{
    ControllerConfig, ControllerConfigSpec, ImageRegistryBundle, MachineConfig, MachineConfigSpec,
};
pub use openshift_config::{
    ApiServer, ApiServerSpec, ImageDigestMirrorSet, ImageDigestMirrorSetSpec, ImageDigestMirrors, ImageTagMirrorSet,
    ImageTagMirrorSetSpec, ImageTagMirrors, Infrastructure, InfrastructureSpec, InfrastructureStatus, Network,
    NetworkSpec, PlatformStatus, Proxy, ProxySpec, ProxyStatus,
};
pub use operator_network::{
    DefaultNetwork, HybridOverlayConfig, OperatorNetwork, OperatorNetworkSpec, OvnKubernetesConfig,
};
pub use windows_instance::{
    DisruptionState, HostDisruption, HostReboot, RebootState, WindowsInstance, WindowsInstanceSpec,
    WindowsInstanceStatus,
};
pub use wmco_vocabulary::{InstanceOrigin, InstancePhase};

/// Fields of an object the operator does not use, kept so that a read-modify-write loses nothing.
pub type OtherFields = std::collections::BTreeMap<String, serde_json::Value>;
