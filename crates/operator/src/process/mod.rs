//! The composition root: the operator process after its flags are parsed and its payload verified. [`run`] decides
//! one [`OperatorConfig`] (flags, cluster facts, payload versions; every controller's settings are derived from it)
//! and builds one set of [`Seams`] (every cluster capability, once), takes part in leader election, and starts and
//! stops the controllers of each leadership term. Nothing else in the crate imports this module.

mod config;
mod election;
mod leader;
mod log_rotation;
mod metrics_endpoint;
mod run;
mod supervisor;

pub use config::{CONTROLLER_NAME, ClusterShape, ConfigError, OperatorConfig, OperatorFlags};
pub use election::ElectionTimings;
pub use leader::LeaseSettings;
pub use log_rotation::{parse_log_duration, parse_log_file_size};
pub use metrics_endpoint::{METRICS_SERVICE, MetricsEndpointOptions};
pub use run::{BuildInfo, PlainKubernetesFlags, RunError, RunOptions, run};
pub use supervisor::{KEY_RESYNC, SSH_IDLE_TIMEOUT, max_ssh_connections};
#[doc(no_inline)]
pub use wmco_cluster_client::Seams;
