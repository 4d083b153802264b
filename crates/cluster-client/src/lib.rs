//! Typed access to every Kubernetes and OpenShift object the wmco operator touches.
//!
//! - [`types`]: the `WindowsInstance` custom resource and the OpenShift objects the operator reads.
//! - [`crd`]: the `WindowsInstance` CustomResourceDefinition as YAML (`wmco crd`, `manifests/base/crds/`).
//! - [`names`]: the finalizer, annotations, labels and field manager of the cluster-facing contract.
//! - Accessors in the style of [`kube::ResourceExt`] (re-exported here): [`NodeExt`] (readiness, annotations,
//!   marks) and [`WindowsInstanceExt`] (the record's `namespace/name` key, recorded Node name, pinned host key);
//!   [`node_claim`]: whether a Node is a record's (the owner annotation, or evidence it is the record's host).
//! - Capability traits, each with a real implementation over [`kube`] and an in-memory fake in `fake` (feature `testing`):
//!   [`Nodes`], [`Drainer`], [`Csrs`], [`EventPublisher`], [`Secrets`], [`ConfigMaps`], [`Namespaces`],
//!   [`ServiceAccountTokens`], [`InstanceRecords`], [`Machines`], [`WindowsMachines`], [`ClusterFactsSource`], [`ClusterVersion`], [`ControllerConfigs`],
//!   [`AccessReviews`] (TokenReview and SubjectAccessReview, for the metrics endpoint), [`GoDaemonObjects`] (deletes
//!   the Go operator's daemon identity, [`GoDaemonObject::all`], by exact name), and the read-only
//!   [`EventHistory`] and [`PodLogs`] (the Events about an object, the operator's pods and logs: `wmco status` and
//!   `wmco diagnose`).
//! - [`Seams`]: all of them as trait objects built once, from a client ([`Seams::for_client`]) or, in tests, from
//!   one `fake::FakeCluster`.
//!
//! This crate decides nothing: it reads and writes what the controller and flow layers tell it to.

mod controller_configs;
pub mod crd;
mod csrs;
mod drain;
mod error;
mod event_history;
mod events;
mod ext;
mod facts;
#[cfg(feature = "testing")]
pub mod fake;
mod go_daemon;
mod host_key_store;
mod ignition;
mod instances;
mod machines;
pub mod names;
mod nodes;
mod objects;
mod ownership;
mod pod_logs;
mod reviews;
mod seams;
mod tokens;
pub mod types;
mod version;

#[cfg(test)]
mod test_support;

pub use controller_configs::{ControllerConfigs, KubeControllerConfigs};
pub use csrs::{CsrDecision, Csrs, KubeCsrs, is_pending};
pub use drain::{DrainOptions, DrainReport, Drainer, KubeDrainer, SkipReason, SkippedPod};
pub use error::{BlockReason, BlockedPod, Error, Result, Verb};
pub use event_history::{EventHistory, KubeEventHistory, last_seen};
pub use events::{EventPublisher, KubeEvents, NewEvent, Severity};
pub use ext::{NodeExt, WindowsInstanceExt};
pub use facts::{
    ClusterFacts, ClusterFactsSource, MirrorSet, OpenShiftFacts, PlainKubernetesConfig, PlainKubernetesFacts,
    PodNetworking, ProxySettings, serves_openshift_config,
};
pub use go_daemon::{
    GO_DAEMON_CERTIFICATE_RBAC, GO_DAEMON_NAME, GoDaemonKind, GoDaemonObject, GoDaemonObjects, KubeGoDaemonObjects,
};
pub use host_key_store::{HOST_KEYS_CONFIG_MAP, forget_host_key, keep_host_key, kept_host_key};
pub use ignition::{IgnitionError, KubeletCloud, RENDERED_WORKER_PREFIX, kubelet_cloud};
pub use instances::{InstanceRecords, KubeInstanceRecords};
pub use kube::ResourceExt;
pub use machines::{KubeMachines, Machines, NoWindowsMachines, WindowsMachines, serves_machine_api};
pub use nodes::{KubeNodes, NodeMetadataPatch, Nodes, reports_address};
pub use objects::{ConfigMapEntry, ConfigMaps, KubeConfigMaps, KubeNamespaces, KubeSecrets, Namespaces, Secrets};
pub use ownership::{ForeignNode, NodeClaim, is_records_node, node_claim};
pub use pod_logs::{KubePodLogs, PodLogs};
pub use reviews::{AccessReviews, KubeAccessReviews, ReviewedUser};
pub use seams::Seams;
pub use tokens::{KubeServiceAccountTokens, ServiceAccountTokens, ShortLivedToken, TokenRequestSpec};
pub use version::{ClusterVersion, KubeClusterVersion};
pub use wmco_vocabulary::{MirrorKind, Platform, PlatformName};
