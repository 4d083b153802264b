//! The machine API played by a test: a simulated host that starts unprovisioned (no authorized key, as a new cloud
//! instance before its user data ran), the operator's `windows-user-data` read back, user data run through the
//! simulator's PowerShell as first boot would, and a Windows `Machine` pointing at the host (phase, addresses and
//! providerID set as machine-api would); and the Cluster API side: namespace `openshift-cluster-api`, the operator's
//! cluster-api kustomize component applied there as an admin would, and the mirrored `windows-user-data` read back.
//!
//! The harness fixtures already serve `machine.openshift.io` and hold the `openshift-machine-api` namespace.

use std::net::Ipv4Addr;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use winhost_sim::fleet::{HostInfo, NewHost};
use winhost_sim::ps::{ErrorStream, run_script};
use wmco_cluster_client::types::Machine;

use crate::{Sandbox, SandboxError, manifests_dir};

/// The machine API's namespace.
pub const MACHINE_API_NAMESPACE: &str = "openshift-machine-api";
/// Where the operator mirrors `windows-user-data` when the namespace exists.
pub const CLUSTER_API_NAMESPACE: &str = "openshift-cluster-api";
/// The Secret the operator renders for new Windows Machines.
pub const USER_DATA_SECRET: &str = "windows-user-data";
/// Its field holding the user data.
pub const USER_DATA_FIELD: &str = "userData";
/// The label that makes a Machine a Windows Machine.
pub const OS_ID_LABEL: &str = "machine.openshift.io/os-id";

/// What running user data on a host printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvisionOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The script's exit code.
    pub code: u32,
}

/// Adds a simulated host named `name` on the sandbox's SSH port, listening on `address`, with no authorized key:
/// nobody can log in until its user data ran ([`provision`]).
///
/// # Errors
/// [`SandboxError::Fleet`] if the name is taken or the host cannot start.
pub async fn add_unprovisioned_host(
    sandbox: &Sandbox,
    name: &str,
    address: Ipv4Addr,
) -> Result<HostInfo, SandboxError> {
    let request =
        NewHost { name: Some(name.to_owned()), authorized_key: None, address: Some(address), ..NewHost::default() };
    Ok(sandbox.fleet().lock().await.add(request).await?)
}

/// Runs `script` (PowerShell, without the platform's `<powershell>` wrapper) on host `name` as its first boot would.
///
/// # Errors
/// [`SandboxError::Fleet`] for an unknown host.
pub async fn provision(sandbox: &Sandbox, name: &str, script: &str) -> Result<ProvisionOutput, SandboxError> {
    let host = std::sync::Arc::clone(&sandbox.server(name).await?.host);
    let script = script.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        let mut host = host.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        run_script(&mut host, &script, ErrorStream::Text)
    })
    .await
    .map_err(|error| SandboxError::Io {
        action: "run user data on host",
        path: name.into(),
        source: std::io::Error::other(error.to_string()),
    })?;
    Ok(ProvisionOutput { stdout: output.stdout, stderr: output.stderr, code: output.code })
}

/// The `userData` of Secret `openshift-machine-api/windows-user-data`, once the operator rendered it.
///
/// # Errors
/// [`SandboxError::Kube`] if the Secret cannot be read.
pub async fn user_data(client: &kube::Client) -> Result<Option<String>, SandboxError> {
    user_data_in(client, MACHINE_API_NAMESPACE).await
}

/// The `userData` of the mirror `openshift-cluster-api/windows-user-data`, once the operator wrote it.
///
/// # Errors
/// [`SandboxError::Kube`] if the Secret cannot be read.
pub async fn mirrored_user_data(client: &kube::Client) -> Result<Option<String>, SandboxError> {
    user_data_in(client, CLUSTER_API_NAMESPACE).await
}

async fn user_data_in(client: &kube::Client, namespace: &str) -> Result<Option<String>, SandboxError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = secrets
        .get_opt(USER_DATA_SECRET)
        .await
        .map_err(SandboxError::kube(format!("read Secret {namespace}/{USER_DATA_SECRET}")))?;
    Ok(secret
        .and_then(|secret| secret.data)
        .and_then(|data| data.get(USER_DATA_FIELD).map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())))
}

/// Creates namespace `openshift-cluster-api`, as installing the Cluster API does.
///
/// # Errors
/// [`SandboxError::Kube`] if the create is refused.
pub async fn create_cluster_api_namespace(client: &kube::Client) -> Result<(), SandboxError> {
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(CLUSTER_API_NAMESPACE.to_owned()), ..Default::default() },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(SandboxError::kube(format!("create Namespace {CLUSTER_API_NAMESPACE}")))?;
    Ok(())
}

/// Applies `manifests/components/cluster-api` (the operator's Role in `openshift-cluster-api`) with `kubectl apply
/// -k`, through a kustomization in the sandbox directory that names only the component, as an admin would include
/// it.
///
/// # Errors
/// [`SandboxError::Io`] if the kustomization cannot be written or kubectl not run, [`SandboxError::Manifests`] with
/// kubectl's output if the apply fails.
pub async fn apply_cluster_api_component(sandbox: &Sandbox) -> Result<(), SandboxError> {
    let directory = sandbox.directory().join("cluster-api-component");
    std::fs::create_dir_all(&directory).map_err(SandboxError::io("create directory", &directory))?;
    let component = relative_to(&directory, &manifests_dir().join("components").join("cluster-api"));
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n  - {}\n",
        component.display()
    );
    let file = directory.join("kustomization.yaml");
    std::fs::write(&file, kustomization).map_err(SandboxError::io("write", &file))?;
    let output = sandbox
        .control_plane()
        .kubectl()
        .arg("apply")
        .arg("-k")
        .arg(&directory)
        .output()
        .await
        .map_err(SandboxError::io("run kubectl apply -k", &directory))?;
    if output.status.success() {
        return Ok(());
    }
    Err(SandboxError::Manifests {
        dir: directory,
        output: format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    })
}

/// `target` as a path relative to `base` (both absolute): kustomize refuses absolute paths.
fn relative_to(base: &Path, target: &Path) -> PathBuf {
    let base: Vec<Component<'_>> = base.components().collect();
    let target: Vec<Component<'_>> = target.components().collect();
    let common = base.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut relative: PathBuf = std::iter::repeat_n(Component::ParentDir, base.len() - common).collect();
    relative.extend(&target[common..]);
    relative
}

/// Replaces the `userData` of `windows-user-data` with `text`, as an admin editing it by hand.
///
/// # Errors
/// [`SandboxError::Kube`] if the patch is refused.
pub async fn edit_user_data(client: &kube::Client, text: &str) -> Result<(), SandboxError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), MACHINE_API_NAMESPACE);
    secrets
        .patch(USER_DATA_SECRET, &PatchParams::default(), &Patch::Merge(json!({"stringData": {USER_DATA_FIELD: text}})))
        .await
        .map_err(SandboxError::kube(format!("edit Secret {MACHINE_API_NAMESPACE}/{USER_DATA_SECRET}")))?;
    Ok(())
}

/// A Windows Machine as machine-api leaves it once the instance exists: labelled Windows, providerID set, then
/// status phase Provisioned with the host's SSH address as InternalIP and `internal_dns` as InternalDNS.
///
/// ```
/// let machine = wmco_sandbox::machine_api::windows_machine("win-a", "sim:///win-a");
/// assert_eq!(machine.metadata.labels.unwrap()["machine.openshift.io/os-id"], "Windows");
/// ```
pub fn windows_machine(name: &str, provider_id: &str) -> Machine {
    let mut machine = Machine::new(name, Default::default());
    machine.metadata.namespace = Some(MACHINE_API_NAMESPACE.to_owned());
    machine.metadata.labels = Some([(OS_ID_LABEL.to_owned(), "Windows".to_owned())].into());
    machine.spec.provider_id = Some(provider_id.to_owned());
    machine
}

/// The status machine-api writes once the instance runs: phase Provisioned, InternalIP and InternalDNS.
pub fn provisioned_status(internal_ip: Ipv4Addr, internal_dns: &str) -> serde_json::Value {
    json!({"status": {"phase": "Provisioned", "addresses": [
        {"type": "InternalIP", "address": internal_ip.to_string()},
        {"type": "InternalDNS", "address": internal_dns},
    ]}})
}

/// Creates Machine `name` for `host` ([`windows_machine`]), then sets its status ([`provisioned_status`]) through
/// the status subresource, as machine-api does.
///
/// # Errors
/// [`SandboxError::Kube`] if the create or the status patch is refused.
pub async fn create_provisioned_machine(
    client: &kube::Client,
    name: &str,
    host: &HostInfo,
    internal_dns: &str,
) -> Result<Machine, SandboxError> {
    let machines: Api<Machine> = Api::namespaced(client.clone(), MACHINE_API_NAMESPACE);
    let machine = windows_machine(name, &format!("winhost-sim:///{}", host.name));
    machines
        .create(&PostParams::default(), &machine)
        .await
        .map_err(SandboxError::kube(format!("create Machine {MACHINE_API_NAMESPACE}/{name}")))?;
    let std::net::IpAddr::V4(internal_ip) = host.ssh_address.ip() else {
        return Err(SandboxError::Io {
            action: "use the IPv4 SSH address of host",
            path: host.name.clone().into(),
            source: std::io::Error::other(format!("{} is not IPv4", host.ssh_address)),
        });
    };
    machines
        .patch_status(name, &PatchParams::default(), &Patch::Merge(provisioned_status(internal_ip, internal_dns)))
        .await
        .map_err(SandboxError::kube(format!("set the status of Machine {MACHINE_API_NAMESPACE}/{name}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_names_the_address_and_the_dns_name() {
        let status = provisioned_status(Ipv4Addr::new(127, 0, 0, 20), "win-a.sim.test");
        assert_eq!(
            status,
            json!({"status": {"phase": "Provisioned", "addresses": [
                {"type": "InternalIP", "address": "127.0.0.20"},
                {"type": "InternalDNS", "address": "win-a.sim.test"},
            ]}})
        );
    }

    #[test]
    fn kustomize_gets_a_relative_path_to_the_component() {
        assert_eq!(
            relative_to(Path::new("/tmp/sandbox-1/cluster-api-component"), Path::new("/work/main/manifests/x")),
            Path::new("../../../work/main/manifests/x")
        );
        assert_eq!(relative_to(Path::new("/a/b"), Path::new("/a/b/c")), Path::new("c"));
    }

    #[test]
    fn the_machine_is_a_windows_machine_in_the_machine_api_namespace() {
        let machine = windows_machine("win-a", "winhost-sim:///winhost-9");
        assert_eq!(machine.metadata.namespace.as_deref(), Some("openshift-machine-api"));
        assert_eq!(machine.spec.provider_id.as_deref(), Some("winhost-sim:///winhost-9"));
        assert_eq!(
            machine.metadata.labels,
            Some([("machine.openshift.io/os-id".to_owned(), "Windows".to_owned())].into())
        );
    }
}
