//! The e2e control plane of wmco-rs: a real etcd, kube-apiserver and kube-controller-manager (built from pinned
//! Go modules by `e2e/controlplane/build.sh`) started as child processes on 127.0.0.1, with certificates generated
//! at start, an admin kubeconfig, the OpenShift CRDs and singletons the product reads, and clients for any
//! identity (admin, a ServiceAccount token, a client certificate).
//!
//! Start here: [`ControlPlane::start`]. The binaries must be built first (`cargo xtask controlplane build`);
//! without them `start` fails with [`Error::BinaryMissing`], which says so. See `docs/testing.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wmco_e2e_harness::Error> {
//! let control_plane = wmco_e2e_harness::ControlPlane::start(Default::default()).await?;
//! let node = control_plane.issue_client_certificate("system:node:win-a", &["system:nodes"])?;
//! let node_client = control_plane.client_for_certificate("system:node:win-a", &node).await?;
//! # let _ = node_client;
//! # Ok(()) }
//! ```

mod binaries;
mod controlplane;
mod error;
mod eventually;
mod fixtures;
mod kubeconfig;
mod pki;
mod process;

pub use binaries::{ControlPlaneBinaries, binary_directory, kubernetes_version, promtool, promtool_version};
pub use controlplane::{CONTROLLERS, ControlPlane, ControlPlaneOptions, SERVICE_CIDR};
pub use error::Error;
pub use eventually::{RETRY_INTERVAL, eventually, eventually_some, eventually_true};
pub use pki::ClientCertificate;
