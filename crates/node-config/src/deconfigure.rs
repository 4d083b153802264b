//! `deconfigure`: take a host out of the cluster — cordon and drain its Node, stop and delete the managed
//! services (dependents first, planned by `plan` with every managed service listed for removal), remove the
//! node's firewall rules, the payload, configuration and log directories and the hybrid-overlay HNS networks, and
//! delete the Node.
//!
//! A Node that is not the record's ([`wmco_cluster_client::node_claim`]: another record's, a Linux Node, a Windows
//! Node at another address) is never cordoned, drained or deleted; the host is cleaned all the same.
//!
//! The Node is deleted only after the host was cleaned, so a host the operator cannot reach keeps its Node (its
//! kubelet may still run) — unless the admin set `windowsmachineconfig.openshift.io/force-remove: "true"` on the
//! `WindowsInstance`, in which case host and drain failures are reported in the outcome and the Node goes anyway.
//! A Machine's record is treated the same way: the machine API drains the Machine and destroys its VM.
//! Releasing the record's finalizer is the controller's job once this returns `Ok`.

use wmco_cluster_client::DrainOptions;
use wmco_cluster_client::names::FORCE_REMOVE_ANNOTATION;
use wmco_cluster_client::types::{InstanceOrigin, InstancePhase, WindowsInstance};
use wmco_payload_manifest::render::destinations::IMPORTED_ROOTS_RECORD;
use wmco_windows_services::{
    FIREWALL_RULES, HostState, LEGACY_DAEMON_SERVICE, NodeProxy, ProbeRequest, SERVICE_LOG_DIRECTORIES, ServiceName,
    TrustedRoots, WinPath, defender_excluded_programs, plan,
};

use crate::error::{FlowError, FlowStep};
use crate::ownership::recorded_node_if_ours;
use crate::pass::ClusterAccess;
use crate::record::Recorder;
use crate::script;
use crate::session::HostSession;

/// Every service the operator may have installed on a host, including the Go operator's daemon.
pub const MANAGED_SERVICES: [&str; 8] = [
    "containerd",
    "kubelet",
    "hybrid-overlay-node",
    "kube-proxy",
    "csi-proxy",
    "windows_exporter",
    "cloud-node-manager",
    LEGACY_DAEMON_SERVICE,
];

/// The directories deconfiguration removes with everything in them: the payload and configuration (`C:\k`), the
/// kubelet's and CNI's state, and the services' logs. `C:\Temp` is the admin's and stays.
pub const REMOVED_DIRECTORIES: [&str; 9] = {
    let state = [r"C:\k", r"C:\var\lib\kubelet", script::CNI_STATE_DIRECTORY];
    let mut all = [""; 9];
    let mut index = 0;
    while index < all.len() {
        all[index] = if index < state.len() { state[index] } else { SERVICE_LOG_DIRECTORIES[index - state.len()] };
        index += 1;
    }
    all
};

/// What a deconfigure pass needs besides the host and the cluster.
#[derive(Clone, Copy)]
pub struct DeconfigureInputs<'a> {
    /// The host's record (its status names the Node; its annotations may carry force-remove).
    pub instance: &'a WindowsInstance,
    /// How to drain the Node.
    pub drain: &'a DrainOptions,
}

/// What a deconfigure pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeconfigureOutcome {
    /// The Node that was deleted (or was already gone), if the record named one.
    pub node_name: Option<String>,
    /// Whether the host's services, files and networks were removed.
    pub host_cleaned: bool,
    /// Failures skipped because force-remove was set, as sentences.
    pub forced_past: Vec<String>,
}

/// Whether the record carries `force-remove: "true"`.
pub fn force_remove_requested(instance: &WindowsInstance) -> bool {
    instance.metadata.annotations.as_ref().and_then(|annotations| annotations.get(FORCE_REMOVE_ANNOTATION))
        == Some(&"true".to_owned())
}

/// Whether failures may be skipped when deconfiguring `instance`: force-remove is set, or the record belongs to a
/// Machine. A Machine's record is deleted because the Machine is being deleted; the machine API drains it and
/// destroys its VM, so an unreachable host or a blocked drain must not keep the record (and its finalizer) forever.
fn failures_skippable(instance: &WindowsInstance) -> bool {
    force_remove_requested(instance) || instance.spec.origin == InstanceOrigin::Machine
}

/// Deconfigures the host of `inputs.instance` over `session`.
///
/// ```no_run
/// use std::sync::Arc;
/// use wmco_cluster_client::DrainOptions;
/// use wmco_node_config::{ClusterAccess, DeconfigureInputs, HostSession, deconfigure};
/// # async fn example(
/// #     host: Arc<dyn wmco_ssh_transport::RemoteHost>,
/// #     cluster: ClusterAccess<'_>,
/// #     instance: &wmco_cluster_client::types::WindowsInstance,
/// # ) -> Result<(), wmco_node_config::FlowError> {
/// let session = HostSession::new(host);
/// let drain = DrainOptions::default();
/// let outcome = deconfigure(&session, cluster, &DeconfigureInputs { instance, drain: &drain }).await?;
/// assert!(outcome.host_cleaned || !outcome.forced_past.is_empty());
/// // now release the record's finalizer
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`FlowError`] naming the host and step. Without force-remove, an unreachable host is a retryable
/// [`FlowError::Transport`] and the Node is left in place.
pub async fn deconfigure(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &DeconfigureInputs<'_>,
) -> Result<DeconfigureOutcome, FlowError> {
    let mut recorder = Recorder::new(cluster.records, inputs.instance, session.label())?;
    session.remember_pass(None);
    match deconfigure_pass(session, cluster, inputs, &mut recorder).await {
        Ok(outcome) => Ok(outcome),
        Err(error) => {
            recorder.save_error(&error).await;
            Err(error)
        }
    }
}

async fn deconfigure_pass(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &DeconfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
) -> Result<DeconfigureOutcome, FlowError> {
    let force = failures_skippable(inputs.instance);
    recorder.set_phase(InstancePhase::Deconfiguring);
    recorder.save().await?;
    let cluster_error = |step, source| FlowError::Cluster { host: session.label().to_owned(), step, source };
    let mut forced_past = Vec::new();

    let node_name = recorder.status.expected_node_name.clone();
    let node = match &node_name {
        Some(name) => recorded_node_if_ours(session, cluster, inputs.instance, name).await?,
        None => None,
    };
    if let (Some(name), Some(_)) = (&node_name, &node) {
        cluster.nodes.cordon(name).await.map_err(|source| cluster_error(FlowStep::Cordon, source))?;
        if let Err(source) = cluster.drainer.drain(name, inputs.drain).await {
            let error = cluster_error(FlowStep::Drain, source);
            if !force {
                return Err(error);
            }
            forced_past.push(error.to_string());
        }
    }

    let host_cleaned = match clean_host(session).await {
        Ok(()) => true,
        Err(error) if force => {
            forced_past.push(error.to_string());
            false
        }
        Err(error) => return Err(error),
    };

    if let (Some(name), Some(_)) = (&node_name, &node) {
        cluster.nodes.delete(name).await.map_err(|source| cluster_error(FlowStep::DeleteNode, source))?;
    }
    recorder.status.last_error = forced_past.last().cloned();
    recorder.save().await?;
    Ok(DeconfigureOutcome { node_name: node.and(node_name), host_cleaned, forced_past })
}

/// Removes the proxy's machine variables, the imported root certificates and the node's firewall rules, stops and
/// deletes the managed services, then removes the directories and the HNS networks.
async fn clean_host(session: &HostSession) -> Result<(), FlowError> {
    let render_error = |step, source| FlowError::Render { host: session.label().to_owned(), step, source };
    let removed =
        MANAGED_SERVICES.iter().map(|name| ServiceName::new(name)).collect::<Result<_, _>>().map_err(|_| {
            FlowError::Record { instance: session.label().to_owned(), what: "a valid managed service name" }
        })?;
    // The proxy's machine variables go too (the operator set them; `None` removes each), and so do the root
    // certificates the operator imported.
    let record = WinPath::parse(IMPORTED_ROOTS_RECORD).map_err(|source| {
        render_error(FlowStep::TrustCertificates, wmco_windows_services::CommandError::ScriptPath { source })
    })?;
    let desired = HostState {
        removed_services: removed,
        machine_env: NodeProxy::default().variables(),
        trusted_roots: Some(TrustedRoots::none(record)),
        removed_firewall_rules: FIREWALL_RULES.iter().map(|name| (*name).to_owned()).collect(),
        removed_defender_exclusions: defender_excluded_programs().map_err(|source| {
            render_error(FlowStep::RemoveFiles, wmco_windows_services::CommandError::ScriptPath { source })
        })?,
        ..HostState::default()
    };
    let request = ProbeRequest::for_state(&desired);
    let observed = session.probe(&request).await?;
    let steps =
        plan(&desired, &observed).map_err(|source| FlowError::Plan { host: session.label().to_owned(), source })?;
    session.apply(&steps, &Default::default(), &observed).await?;

    let directories =
        REMOVED_DIRECTORIES.iter().map(|text| WinPath::parse(text)).collect::<Result<Vec<_>, _>>().map_err(
            |source| render_error(FlowStep::RemoveFiles, wmco_windows_services::CommandError::ScriptPath { source }),
        )?;
    let remove_files =
        script::remove_directories(&directories).map_err(|source| render_error(FlowStep::RemoveFiles, source))?;
    session.run_powershell(FlowStep::RemoveFiles, "remove directories", &remove_files).await?;
    session.forget_scripts();
    let remove_networks =
        script::remove_hns_networks().map_err(|source| render_error(FlowStep::RemoveNetworks, source))?;
    session.run_powershell(FlowStep::RemoveNetworks, "remove HNS networks", &remove_networks).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use wmco_windows_services::{
        LogRotation, NodeInputs, Platform, ServiceStage, Verbosity, node_host_state, node_services,
    };

    use super::*;

    fn inputs(platform: Platform) -> NodeInputs {
        NodeInputs {
            node_ip: Ipv4Addr::new(203, 0, 113, 7),
            node_name: "win-a".into(),
            api_server_url: "https://api.example:6443".into(),
            platform,
            verbosity: Verbosity::Normal,
            log_rotation: LogRotation::default(),
            hybrid_overlay_vxlan_port: None,
            cloud_provider: None,
            cloud_config: None,
            proxy: Default::default(),
        }
    }

    #[test]
    fn managed_services_cover_every_node_service_on_every_platform() {
        let mut names: Vec<String> =
            node_services(&inputs(Platform::Azure)).unwrap().into_iter().map(|s| s.spec.name.to_string()).collect();
        names.push(LEGACY_DAEMON_SERVICE.to_owned());
        names.sort();
        let mut managed: Vec<String> = MANAGED_SERVICES.iter().map(|name| (*name).to_owned()).collect();
        managed.sort();
        assert_eq!(managed, names);
    }

    #[test]
    fn removed_directories_cover_every_node_directory_but_temp() {
        let state = node_host_state(&inputs(Platform::None), ServiceStage::Node).unwrap();
        for directory in state.directories {
            let covered = REMOVED_DIRECTORIES.iter().any(|removed| {
                let removed = WinPath::parse(removed).unwrap();
                let mut current = Some(directory.clone());
                while let Some(path) = current {
                    if path.same_location(&removed) {
                        return true;
                    }
                    current = path.parent();
                }
                false
            });
            assert_eq!(covered, directory.as_str() != r"C:\Temp", "{directory}");
        }
    }
}
