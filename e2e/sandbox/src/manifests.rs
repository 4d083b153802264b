//! Installs the operator's manifests the way an admin does: `kubectl apply -k manifests/`, and on a cluster that
//! does not serve `config.openshift.io` (plain Kubernetes) also `kubectl apply -k manifests/plain-kubernetes/`.
//! The e2e control plane installs OpenShift's config CRDs as fixtures, so there the extras are not needed (its
//! fixtures already hold the node-bootstrapper identity).

use std::path::{Path, PathBuf};

use wmco_e2e_harness::ControlPlane;

use crate::SandboxError;
use crate::payload::workspace_root;

/// The API group whose presence makes a cluster OpenShift-like.
const OPENSHIFT_CONFIG_GROUP: &str = "config.openshift.io";

/// Which kustomizations were applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedManifests {
    /// The kustomization directories, in the order applied.
    pub directories: Vec<PathBuf>,
    /// Whether the cluster serves `config.openshift.io`.
    pub openshift_like: bool,
}

/// The workspace's `manifests/` directory.
pub fn manifests_dir() -> PathBuf {
    workspace_root().join("manifests")
}

/// Applies `manifests/` and, on plain Kubernetes, `manifests/plain-kubernetes/`.
///
/// # Errors
/// [`SandboxError::Manifests`] with kubectl's output if an apply fails; [`SandboxError::Kube`] if API discovery
/// fails.
pub async fn install(control_plane: &ControlPlane) -> Result<AppliedManifests, SandboxError> {
    let openshift_like = serves_group(&control_plane.admin_client(), OPENSHIFT_CONFIG_GROUP).await?;
    let base = manifests_dir();
    let mut directories = vec![base.clone()];
    if !openshift_like {
        directories.push(base.join("plain-kubernetes"));
    }
    for directory in &directories {
        kubectl_apply(control_plane, directory).await?;
    }
    Ok(AppliedManifests { directories, openshift_like })
}

async fn serves_group(client: &kube::Client, group: &str) -> Result<bool, SandboxError> {
    let groups = client.list_api_groups().await.map_err(SandboxError::kube("list API groups"))?;
    Ok(groups.groups.iter().any(|candidate| candidate.name == group))
}

async fn kubectl_apply(control_plane: &ControlPlane, directory: &Path) -> Result<(), SandboxError> {
    let output = control_plane
        .kubectl()
        .arg("apply")
        .arg("-k")
        .arg(directory)
        .output()
        .await
        .map_err(SandboxError::io("run kubectl apply -k", directory))?;
    if output.status.success() {
        return Ok(());
    }
    Err(SandboxError::Manifests {
        dir: directory.to_path_buf(),
        output: format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    })
}
