//! The machine API's and the product's fixed names for Windows Machines: labels, annotations, namespace, Secret.

/// The namespace the machine API keeps Machines and MachineSets in (defined once, in `wmco-cluster-client`).
pub use wmco_cluster_client::names::MACHINE_API_NAMESPACE;
/// The Machine label that marks a Windows Machine (value [`WINDOWS_OS_ID`]; defined once, in `wmco-cluster-client`).
pub use wmco_cluster_client::names::MACHINE_OS_ID_LABEL as OS_ID_LABEL;
/// The value of [`OS_ID_LABEL`] on Windows Machines.
pub const WINDOWS_OS_ID: &str = "Windows";
/// Set to `"true"` (as an annotation, or as a label like the Go operator reads it) to keep the operator away from a
/// Machine.
pub const IGNORE_KEY: &str = "windowsmachineconfig.openshift.io/ignore";
/// The Secret holding the Windows user data every Windows MachineSet references.
pub const USER_DATA_SECRET: &str = "windows-user-data";
/// The label naming the cluster's infrastructure ID on MachineSets and Machines.
pub const CLUSTER_LABEL: &str = "machine.openshift.io/cluster-api-cluster";
/// The label naming the MachineSet a Machine belongs to.
pub const MACHINESET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";
/// The Machine role label.
pub const MACHINE_ROLE_LABEL: &str = "machine.openshift.io/cluster-api-machine-role";
/// The Machine type label.
pub const MACHINE_TYPE_LABEL: &str = "machine.openshift.io/cluster-api-machine-type";
/// The Node label the MachineSet puts on its Nodes (worker role).
pub const WORKER_NODE_ROLE_LABEL: &str = "node-role.kubernetes.io/worker";
/// The role and type of a Windows Machine: Windows Machines are workers.
pub const WORKER_ROLE: &str = "worker";
/// Windows limits computer names to 15 characters; Machine names are the MachineSet name plus `-` and 5 characters.
pub const MAX_WINDOWS_MACHINESET_NAME: usize = 9;
