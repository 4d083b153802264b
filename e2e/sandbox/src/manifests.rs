//! Installs the operator's manifests the way an admin does: `kubectl apply -k manifests/overlays/openshift` on a
//! cluster that serves `config.openshift.io` (the e2e control plane does, through its fixtures, which also hold
//! the node-bootstrapper identity and the monitoring CRDs), `kubectl apply -k manifests/overlays/kubernetes`
//! elsewhere.

use std::path::{Path, PathBuf};

use wmco_e2e_harness::ControlPlane;

use crate::SandboxError;
use crate::payload::workspace_root;

/// The API group whose presence makes a cluster OpenShift-like.
const OPENSHIFT_CONFIG_GROUP: &str = "config.openshift.io";

/// Which overlay was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedManifests {
    /// The overlay directory.
    pub overlay: PathBuf,
    /// Whether the cluster serves `config.openshift.io`.
    pub openshift_like: bool,
}

/// The workspace's `manifests/` directory.
pub fn manifests_dir() -> PathBuf {
    workspace_root().join("manifests")
}

/// The overlay for a cluster: `manifests/overlays/openshift` or `manifests/overlays/kubernetes`.
pub fn overlay_dir(openshift_like: bool) -> PathBuf {
    manifests_dir().join("overlays").join(if openshift_like { "openshift" } else { "kubernetes" })
}

/// Applies the overlay that fits the cluster.
///
/// # Errors
/// [`SandboxError::Manifests`] with kubectl's output if the apply fails; [`SandboxError::Kube`] if API discovery
/// fails.
pub async fn install(control_plane: &ControlPlane) -> Result<AppliedManifests, SandboxError> {
    let openshift_like = serves_group(&control_plane.admin_client(), OPENSHIFT_CONFIG_GROUP).await?;
    let overlay = overlay_dir(openshift_like);
    kubectl_apply(control_plane, &overlay).await?;
    Ok(AppliedManifests { overlay, openshift_like })
}

/// The operator's Deployment as `overlay` renders it (`kubectl kustomize`), as JSON.
///
/// # Errors
/// [`SandboxError::Manifests`] if kubectl fails or renders no Deployment.
pub async fn render_deployment(
    control_plane: &ControlPlane,
    overlay: &Path,
) -> Result<serde_json::Value, SandboxError> {
    let output = control_plane
        .kubectl()
        .arg("kustomize")
        .arg(overlay)
        .output()
        .await
        .map_err(SandboxError::io("run kubectl kustomize", overlay))?;
    let failed = |output: String| SandboxError::Manifests { dir: overlay.to_path_buf(), output };
    if !output.status.success() {
        return Err(failed(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&String::from_utf8_lossy(&output.stdout))
        .map_err(|error| failed(format!("kubectl kustomize printed no YAML: {error}")))?;
    documents
        .into_iter()
        .find(|document| document["kind"] == "Deployment")
        .ok_or_else(|| failed("no Deployment rendered".to_owned()))
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
