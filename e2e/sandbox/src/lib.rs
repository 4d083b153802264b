//! The wmco sandbox: the product's main job on one machine, for `cargo xtask sandbox` and the BYOH e2e scenarios.
//!
//! [`Sandbox::start`] starts, in order: the e2e control plane (`wmco-e2e-harness`) with the operator's
//! `manifests/overlays/openshift` applied by kubectl; the admin's inputs (Secret `cloud-private-key` with a fresh
//! Ed25519 key, Secret `windows-machine-config-operator-tls` unless told not to, Secret
//! `windows-machine-config-operator-metrics-tls` issued by a sandbox CA, ConfigMap `kube-root-ca.crt`, a
//! ServiceAccount allowed to scrape `/metrics`); simulated Windows hosts (`winhost-sim`, in this process) authorizing that key on one shared SSH port; an OVN stand-in annotating each
//! Windows Node's hybrid-overlay subnet; and the operator as its own process (`wmco run`, found through `WMCO_BIN`)
//! with its ServiceAccount's token — the RBAC of `manifests/`, never admin — logging to the sandbox directory.
//! The `small` synthetic payload is cached under `~/.cache/wmco-rs/payload/`; the operator gets
//! `--allow-synthetic-payload` because (and only while) its payload is synthetic.
//!
//! Then the helpers: write or patch the `windows-instances` ConfigMap, list `WindowsInstance`s and Nodes, read
//! each host's command log, services and file hashes, kill and restart the operator, read its `/metrics` over TLS with the
//! scraper's token, and
//! wait ([`Sandbox::wait_until_ready`], [`Sandbox::wait_for`]) with errors that quote the operator's log. Every
//! e2e test ends with [`Sandbox::assert_no_secret_leaked`] ([`secret_scan`]). [`campaign`] breaks each step of
//! the flows in turn on hosts it adds (the fault campaign of `wmco-fault-campaign`); [`soak`] churns a fleet for a
//! bounded time (`wmco-soak`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), wmco_sandbox::SandboxError> {
//! use std::time::Duration;
//! let sandbox = wmco_sandbox::Sandbox::start(wmco_sandbox::SandboxOptions::default()).await?;
//! sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
//! for ready in sandbox.wait_until_ready(3, Duration::from_secs(600)).await? {
//!     println!("{:?} is node {:?}", ready.instance.metadata.name, ready.node.metadata.name);
//! }
//! # Ok(()) }
//! ```

pub mod campaign;
pub mod cluster_settings;
pub mod credentials;
pub mod csr;
pub mod disruption;
mod error;
mod hosts;
pub mod machine_api;
mod manifests;
pub mod operator;
pub mod ovn;
mod payload;
pub mod pod;
pub mod program;
pub mod replicas;
mod sandbox;
pub mod secret_scan;
pub mod soak;
mod stall_report;
pub mod tcp_proxy;
pub mod workload;

pub use credentials::{
    AdminKey, METRICS_TLS_SECRET, MetricsServingCertificate, PRIVATE_KEY_FIELD, PRIVATE_KEY_SECRET, ROOT_CA_CONFIG_MAP,
    TLS_SECRET,
};
pub use error::SandboxError;
pub use hosts::SandboxHost;
pub use manifests::{AppliedManifests, manifests_dir, overlay_dir};
pub use payload::{
    ALLOW_SYNTHETIC_PAYLOAD_FLAG, REAL_PAYLOAD_ENV, cache_root, cached_synthetic_payload, is_synthetic_payload,
    operator_payload_args, payload_key, real_payload_from_env, workspace_root,
};
pub use sandbox::{
    HOST_USER, INSTANCES_CONFIG_MAP, InstanceRow, OPERATOR_IDENTITY, ReadyInstance, Sandbox, SandboxOptions,
    node_is_ready,
};
pub use secret_scan::SecretScan;

/// The operator's namespace.
pub const OPERATOR_NAMESPACE: &str = "openshift-windows-machine-config-operator";
/// The operator's ServiceAccount (its RBAC comes from `manifests/`).
pub const OPERATOR_SERVICE_ACCOUNT: &str = "windows-machine-config-operator";
