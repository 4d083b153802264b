//! What one configure pass takes and gives, and what the session keeps of it: the host-independent
//! [`ServiceSettings`], the desired files by stage ([`HostFilesSource`], [`FileStage`], [`StageFiles`],
//! [`WithheldService`]), the cluster capabilities ([`ClusterAccess`]), the pass's inputs ([`ConfigureInputs`]) and
//! result ([`ConfigureState`], [`ConfigureOutcome`], [`RebootStep`]), the session's time limits and memory windows
//! ([`SessionSettings`]) and its memory of the last pass ([`PassMemo`]).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::types::{DisruptionState, HostDisruption, WindowsInstance};
use wmco_cluster_client::{ConfigMaps, DrainOptions, Drainer, InstanceRecords, Nodes};
use wmco_payload_manifest::HostFileSet;
use wmco_vocabulary::DisruptionKind;
use wmco_windows_services::{LogRotation, NodeInputs, NodeProxy, Platform, Verbosity, WinPath};

use crate::drift::IdentityChange;
use crate::error::SourceError;
use crate::identity::{HostIdentity, NodeNaming};

/// The node service settings that do not depend on the host (the host's name and IP come from its identity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceSettings {
    /// The API server URL the node reaches, `https://...`.
    pub api_server_url: String,
    /// The cluster's platform.
    pub platform: Platform,
    /// Log verbosity.
    pub verbosity: Verbosity,
    /// kubelet / kube-proxy log rotation.
    pub log_rotation: LogRotation,
    /// Non-default VXLAN port of the hybrid overlay.
    pub hybrid_overlay_vxlan_port: Option<u16>,
    /// kubelet `--cloud-provider`.
    pub cloud_provider: Option<String>,
    /// kubelet `--cloud-config` file on the host.
    pub cloud_config: Option<WinPath>,
    /// The cluster-wide egress proxy: machine variables and the own environment of containerd and the kubelet.
    pub proxy: NodeProxy,
}

impl ServiceSettings {
    /// The inputs of the node's service set for the host `identity`.
    pub fn node_inputs(&self, identity: &HostIdentity) -> NodeInputs {
        NodeInputs {
            node_ip: identity.node_ip,
            node_name: identity.expected_node_name.clone(),
            api_server_url: self.api_server_url.clone(),
            platform: self.platform,
            verbosity: self.verbosity,
            log_rotation: self.log_rotation,
            hybrid_overlay_vxlan_port: self.hybrid_overlay_vxlan_port,
            cloud_provider: self.cloud_provider.clone(),
            cloud_config: self.cloud_config.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

/// Which files the flow asks its [`HostFilesSource`] for.
#[derive(Clone, Copy, Debug)]
pub enum FileStage<'a> {
    /// Before the Node has its hybrid-overlay subnet: the payload and the phase-1 files (kubelet and containerd
    /// configuration, CA files, bootstrap kubeconfig with a fresh node-bootstrapper token).
    Bootstrap,
    /// The Node exists with its subnet: the payload, phase-1 files and the phase-2 files (CNI and kube-proxy
    /// configuration for the Node's subnet, windows_exporter TLS files).
    Node(&'a Node),
}

impl FileStage<'_> {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FileStage::Bootstrap => "bootstrap",
            FileStage::Node(_) => "node",
        }
    }
}

/// Where the flow gets the files a host must hold. The operator renders them from cluster facts and the payload
/// ([`wmco_payload_manifest::render`], [`HostFileSet::new`]); tests hand in fixed sets. The bootstrap kubeconfig
/// is dropped by the flow once the Node exists, whatever the source returns.
pub trait HostFilesSource: Send + Sync {
    /// The files `identity`'s host must hold at `stage`, and the services whose files cannot be given yet.
    ///
    /// # Errors
    /// Whatever stops the source (a missing Secret, an unrenderable value); the flow reports it as
    /// [`FlowError::DesiredFiles`](crate::FlowError::DesiredFiles), retryable.
    fn files(&self, identity: &HostIdentity, stage: FileStage<'_>) -> Result<StageFiles, SourceError>;
}

/// What a [`HostFilesSource`] hands the flow for one stage: the files, and the services it withholds because an
/// input only they need is missing (windows_exporter without its TLS Secret). The flow leaves a withheld service
/// (and any service depending on it) out of the host's desired state, so everything else goes ahead; the pass
/// after the input appears installs and starts it.
///
/// ```
/// use wmco_node_config::{StageFiles, WithheldService};
/// # fn example(files: wmco_payload_manifest::HostFileSet) {
/// let complete = StageFiles::from(files);
/// assert!(complete.withheld.is_empty());
/// let waiting = StageFiles {
///     withheld: vec![WithheldService::new("windows_exporter", "Secret ns/tls does not exist")],
///     ..complete
/// };
/// assert_eq!(waiting.withheld[0].service, "windows_exporter");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct StageFiles {
    /// The files the host must hold.
    pub files: HostFileSet,
    /// The services left out of this stage, each with the reason naming the missing input.
    pub withheld: Vec<WithheldService>,
    /// The settings generation the files were rendered from, recorded on the host's record once it is Ready
    /// (`None` when the source has none).
    pub settings_generation: Option<String>,
}

impl From<HostFileSet> for StageFiles {
    /// Every service's files are there: nothing withheld.
    fn from(files: HostFileSet) -> Self {
        StageFiles { files, withheld: Vec::new(), settings_generation: None }
    }
}

/// A node service a configure pass leaves out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WithheldService {
    /// The Windows service name (`windows_exporter`).
    pub service: String,
    /// What is missing, naming the object to create or fix.
    pub reason: String,
}

impl WithheldService {
    /// `service` is withheld because of `reason`.
    pub fn new(service: impl Into<String>, reason: impl Into<String>) -> Self {
        WithheldService { service: service.into(), reason: reason.into() }
    }
}

/// The cluster capabilities the flows use.
#[derive(Clone, Copy)]
pub struct ClusterAccess<'a> {
    /// Nodes: read, label, cordon, delete.
    pub nodes: &'a dyn Nodes,
    /// `WindowsInstance` status writes.
    pub records: &'a dyn InstanceRecords,
    /// Draining (deconfiguration, and a Node's host before it reboots).
    pub drainer: &'a dyn Drainer,
    /// The operator's copy of each host's pinned key (ConfigMap `windows-instance-host-keys`), written before the
    /// record's status on first use and removed on release.
    pub config_maps: &'a dyn ConfigMaps,
}

/// What one configure pass needs besides the host and the cluster.
#[derive(Clone, Copy)]
pub struct ConfigureInputs<'a> {
    /// The host's record as last read (spec, status with the pinned key and identity, namespace and name).
    pub instance: &'a WindowsInstance,
    /// Host-independent service settings.
    pub settings: &'a ServiceSettings,
    /// The desired files.
    pub files: &'a dyn HostFilesSource,
    /// The operator version, written to the version annotation and `configuredVersion` once Ready.
    pub operator_version: &'a str,
    /// SHA-256 of the public key the operator configures with (the `pub-key-hash` annotation).
    pub pub_key_hash: &'a str,
    /// How a Node is drained before its host reboots.
    pub drain: &'a DrainOptions,
}

impl ConfigureInputs<'_> {
    /// How the host's Node name is decided: the record's own name, else the platform's rule.
    pub(crate) fn node_naming(&self) -> NodeNaming {
        NodeNaming::for_record(self.settings.platform, &self.instance.spec)
    }
}

/// Where a host stands after a configure pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigureState {
    /// containerd and kubelet run; the Node has not registered yet. Call again when the Node appears.
    WaitingForNode,
    /// The Node exists without its hybrid-overlay subnet annotation. Call again when it is set.
    WaitingForSubnet,
    /// Every service is installed, but not every one runs yet (starting, or exited and to be started again). Call
    /// again after a short delay: nothing the cluster holds changes when a service reaches RUNNING.
    WaitingForServices,
    /// The services were started (or run) and the Node is not Ready yet. Call again when the Node changes (its
    /// kubelet reports Ready), or after a while: passes with unchanged inputs are answered from memory for
    /// [`crate::SessionSettings::node_wait_window`].
    WaitingForReady,
    /// Every service runs, the Node is Ready and carries the version annotation; the record says Ready.
    Ready,
    /// The Node is configured at another version and the upgrade executor has not yet marked, cordoned and
    /// drained it (the record is not in phase `Upgrading`): nothing was done. Call again when the record changes.
    WaitingForUpgrade,
    /// The pass would stop services on a Node in service (a changed cluster setting or file), or reboot the host: it
    /// recorded the request in `status.disruption` and changed nothing on the host. The fleet executor grants it
    /// within the unavailability budget by writing the record; call again when the record changes.
    WaitingForBudget,
    /// The operator restarts the host (the record's `status.disruption` says why and how far): it is down, or up
    /// with its old boot time. Call again after a short delay; the pass that sees it back goes on configuring.
    Rebooting,
}

/// The result of a configure pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigureOutcome {
    /// Where the host stands.
    pub state: ConfigureState,
    /// The Node name the host registers as.
    pub node_name: String,
    /// Plan steps applied in this pass (0 on a converged host).
    pub steps_applied: usize,
    /// Commands run in this pass (SSH round trips).
    pub commands: u64,
    /// Files uploaded in this pass.
    pub uploads: u64,
    /// Bytes uploaded in this pass.
    pub bytes_uploaded: u64,
    /// The services this pass left out for a missing input (see [`StageFiles`]); a Ready host may lack them.
    pub withheld: Vec<WithheldService>,
    /// A reboot this pass started or saw completed (the record's `status.disruption` has the details).
    pub reboot: Option<RebootStep>,
    /// The host's recorded identity changed in this pass (a new DHCP address or DNS name).
    pub identity_change: Option<Box<IdentityChange>>,
    /// The host key this pass pinned on first use (no key was stored for the host), as an OpenSSH line.
    pub host_key_first_use: Option<String>,
}

/// What a configure pass did about a reboot of the host, for the controller's Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RebootStep {
    /// The restart was sent: the host reboots, for this reason.
    Started(String),
    /// The host came back from the reboot made for this reason.
    Completed(String),
}

impl RebootStep {
    /// The step between the record's reboot before a pass and after it, if any: the restart sent (state
    /// `Restarting` reached), or the host back (`Completed` reached from under way).
    pub(crate) fn between(before: Option<&HostDisruption>, after: Option<&HostDisruption>) -> Option<RebootStep> {
        let after = after.filter(|after| after.kind == DisruptionKind::Reboot)?;
        let state_before = before.map(|before| before.state);
        match (state_before, after.state) {
            (Some(DisruptionState::Restarting), DisruptionState::Restarting) => None,
            (_, DisruptionState::Restarting) => Some(RebootStep::Started(after.reason.clone())),
            (Some(DisruptionState::Granted | DisruptionState::Restarting), DisruptionState::Completed) => {
                Some(RebootStep::Completed(after.reason.clone()))
            }
            _ => None,
        }
    }
}

/// What the last successful pass of a session saw and concluded.
///
/// Waiting for the cluster (`WaitingForNode`, `WaitingForSubnet`) and `Ready` are remembered for the unchanged-pass
/// window, so the periodic drift check of a Ready host comes after it. Waiting for the Node's Ready condition
/// (`WaitingForReady`) is remembered for the shorter node-wait window: the Node turning Ready changes the
/// fingerprint and is probed at once, a Node that stays not Ready is looked at again after the window. Waiting for
/// services to run (`WaitingForServices`) is remembered for a moment only, shorter than the controller's recheck,
/// so the watch events of the pass's own writes cost nothing and the recheck probes. A host waiting for the budget
/// or the upgrade executor is probed on every pass.
#[derive(Clone, Debug)]
pub(crate) struct PassMemo {
    /// The fingerprint of the pass's inputs as it left them.
    pub(crate) fingerprint: u64,
    /// Its state.
    pub(crate) state: ConfigureState,
    /// The services it withheld.
    pub(crate) withheld: Vec<WithheldService>,
    /// When it ended.
    pub(crate) at: Instant,
    /// How long after `at` it answers passes with the same fingerprint.
    pub(crate) window: Duration,
}

impl PassMemo {
    /// How long a pass ending in `state` is remembered under `settings`; `None`: not at all.
    pub(crate) fn window(state: ConfigureState, settings: &SessionSettings) -> Option<Duration> {
        match state {
            ConfigureState::Ready | ConfigureState::WaitingForNode | ConfigureState::WaitingForSubnet => {
                Some(settings.unchanged_pass_window)
            }
            ConfigureState::WaitingForReady => Some(settings.node_wait_window),
            ConfigureState::WaitingForServices => Some(settings.services_wait_window),
            ConfigureState::WaitingForUpgrade | ConfigureState::WaitingForBudget | ConfigureState::Rebooting => None,
        }
    }

    /// Whether the memo still answers a pass with `fingerprint`.
    pub(crate) fn answers(&self, fingerprint: u64) -> bool {
        self.fingerprint == fingerprint && self.at.elapsed() < self.window
    }
}

/// Time limits of the commands a session runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSettings {
    /// How long one command may run.
    pub command_timeout: Duration,
    /// How long to wait for a stopped service to reach STOPPED.
    pub stop_timeout: Duration,
    /// Pause between `sc.exe query` calls while waiting for STOPPED.
    pub stop_poll_interval: Duration,
    /// How long after a pass that ended Ready or waiting for its Node a pass with the same inputs (record, Node,
    /// desired files, settings) returns the same state without a command; zero probes on every pass.
    pub unchanged_pass_window: Duration,
    /// How long after a pass that left the host waiting for its Node to become Ready (`WaitingForReady`) a pass
    /// with the same inputs returns that state without a command. The Node turning Ready changes the inputs.
    pub node_wait_window: Duration,
    /// How long after a pass that left the host waiting for its services to run (`WaitingForServices`) a pass with
    /// the same inputs returns that state without a command: keep it below the controller's recheck (3 s), which
    /// is the pass that probes.
    pub services_wait_window: Duration,
}

impl Default for SessionSettings {
    /// Two minutes per command; one minute for a stop, polled every second; unchanged passes answered from memory
    /// for five minutes (half the operator's ten-minute drift check of a Ready host), a wait for the Node's Ready
    /// condition for thirty seconds (three of the kubelet's ten-second status updates), a wait for services to run
    /// for two seconds.
    fn default() -> Self {
        SessionSettings {
            command_timeout: Duration::from_secs(120),
            stop_timeout: Duration::from_secs(60),
            stop_poll_interval: Duration::from_secs(1),
            unchanged_pass_window: Duration::from_secs(300),
            node_wait_window: Duration::from_secs(30),
            services_wait_window: Duration::from_secs(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_is_remembered_briefly_for_the_node_a_moment_for_services_never_for_the_budget() {
        let settings = SessionSettings::default();
        assert_eq!(PassMemo::window(ConfigureState::Ready, &settings), Some(settings.unchanged_pass_window));
        assert_eq!(PassMemo::window(ConfigureState::WaitingForReady, &settings), Some(settings.node_wait_window));
        assert!(settings.node_wait_window < settings.unchanged_pass_window);
        assert_eq!(
            PassMemo::window(ConfigureState::WaitingForServices, &settings),
            Some(settings.services_wait_window)
        );
        for state in [ConfigureState::WaitingForBudget, ConfigureState::WaitingForUpgrade] {
            assert_eq!(PassMemo::window(state, &settings), None, "{state:?}");
        }
        let memo = PassMemo {
            fingerprint: 7,
            state: ConfigureState::WaitingForReady,
            withheld: Vec::new(),
            at: Instant::now(),
            window: Duration::from_secs(30),
        };
        assert!(memo.answers(7));
        assert!(!memo.answers(8));
        assert!(!PassMemo { window: Duration::ZERO, ..memo }.answers(7));
    }
}
