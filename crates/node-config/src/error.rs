//! The flow's error type: which host, which step, which file or service, and why; with a stable metric label and
//! the retryable / permanent classification the controller's backoff reads.

use std::fmt;
use std::time::Duration;

use wmco_ssh_transport::TransportError;
use wmco_windows_services::{ChainReadError, CommandError, NodeError, PlanError, ProbeError, WinPath};

use crate::facts::PreflightFailure;
use crate::identity::IdentityError;

/// The step of the configure or deconfigure flow an error happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowStep {
    /// Reading the host key to pin it.
    PinHostKey,
    /// Reading hostname, FQDN and node IP.
    Identify,
    /// Computing the desired state (service set and files).
    DesiredState,
    /// The batched state probe.
    Probe,
    /// Uploading a content-addressed script file.
    UploadScript,
    /// Creating directories, firewall rules, Defender exclusions and other host prerequisites.
    Prerequisites,
    /// Uploading payload and rendered files.
    UploadFiles,
    /// Importing the trusted root certificates and removing those no longer trusted.
    TrustCertificates,
    /// Stopping, creating, reconfiguring, starting or deleting services.
    Services,
    /// Deleting the bootstrap kubeconfig once the Node exists.
    RemoveBootstrapKubeconfig,
    /// Checking that every desired service runs.
    VerifyServices,
    /// Reading the Node.
    ReadNode,
    /// Installing a Windows feature (`Containers`).
    InstallFeature,
    /// Restarting the host and waiting for it to come back.
    Reboot,
    /// Labelling and annotating the Node.
    LabelNode,
    /// Writing the record's UID on the host's Node, or finding the Node is another's.
    ClaimNode,
    /// Writing the `WindowsInstance` status.
    Record,
    /// Cordoning the Node.
    Cordon,
    /// Draining the Node.
    Drain,
    /// Removing payload, configuration and log directories (deconfiguration), or what an earlier configuration left
    /// (the CNI state before the first join, the Go operator's daemon kubeconfig).
    RemoveFiles,
    /// Removing the hybrid-overlay HNS networks.
    RemoveNetworks,
    /// Deleting the Node.
    DeleteNode,
}

impl FlowStep {
    /// A stable snake-case name for logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            FlowStep::PinHostKey => "pin_host_key",
            FlowStep::Identify => "identify",
            FlowStep::DesiredState => "desired_state",
            FlowStep::Probe => "probe",
            FlowStep::UploadScript => "upload_script",
            FlowStep::Prerequisites => "prerequisites",
            FlowStep::UploadFiles => "upload_files",
            FlowStep::TrustCertificates => "trust_certificates",
            FlowStep::Services => "services",
            FlowStep::RemoveBootstrapKubeconfig => "remove_bootstrap_kubeconfig",
            FlowStep::VerifyServices => "verify_services",
            FlowStep::ReadNode => "read_node",
            FlowStep::InstallFeature => "install_feature",
            FlowStep::Reboot => "reboot",
            FlowStep::LabelNode => "label_node",
            FlowStep::ClaimNode => "claim_node",
            FlowStep::Record => "record",
            FlowStep::Cordon => "cordon",
            FlowStep::Drain => "drain",
            FlowStep::RemoveFiles => "remove_files",
            FlowStep::RemoveNetworks => "remove_networks",
            FlowStep::DeleteNode => "delete_node",
        }
    }
}

impl fmt::Display for FlowStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Boxed error of a caller-supplied source (the desired files).
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// Why a configure or deconfigure run stopped. Every variant names the host (`user@address:port`) and the step.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The transport failed (unreachable, timed out, authentication, host key mismatch, ...).
    #[error("host {host}: {step} failed: {source}")]
    Transport {
        /// The host.
        host: String,
        /// The step.
        step: FlowStep,
        /// What the transport said.
        #[source]
        source: Box<TransportError>,
    },
    /// A file could not be placed on the host.
    #[error("host {host}: upload of {path} failed at step {step}: {source}")]
    Upload {
        /// The host.
        host: String,
        /// The step.
        step: FlowStep,
        /// The file's destination.
        path: WinPath,
        /// What the transport said.
        #[source]
        source: Box<TransportError>,
    },
    /// A command ran and reported a failure the flow does not tolerate.
    #[error("host {host}: {step}: `{command}` failed with code {code}: {message}")]
    Command {
        /// The host.
        host: String,
        /// The step.
        step: FlowStep,
        /// What was run (sc.exe verb and service, or the script's purpose).
        command: String,
        /// The sc.exe error code or the exit code.
        code: u32,
        /// The message the host printed.
        message: String,
    },
    /// A chain of commands printed output that contradicts itself (markers out of order, an exit code that does
    /// not match them).
    #[error("host {host}: {step}: the output of `{command}` is unreadable: {source}")]
    ChainOutput {
        /// The host.
        host: String,
        /// The step of the chain's first command.
        step: FlowStep,
        /// The chain's first step.
        command: String,
        /// Why.
        #[source]
        source: ChainReadError,
    },
    /// The state probe's output could not be read.
    #[error("host {host}: the state probe's output is unreadable: {source}")]
    Probe {
        /// The host.
        host: String,
        /// Why.
        #[source]
        source: ProbeError,
    },
    /// No plan can be made for the host (inconsistent desired state, a service marked for deletion, ...).
    #[error("host {host}: cannot plan the host's services: {source}")]
    Plan {
        /// The host.
        host: String,
        /// Why.
        #[source]
        source: PlanError,
    },
    /// A command line could not be rendered safely.
    #[error("host {host}: {step}: cannot render a command: {source}")]
    Render {
        /// The host.
        host: String,
        /// The step.
        step: FlowStep,
        /// Why.
        #[source]
        source: CommandError,
    },
    /// The node's service set cannot be built from the recorded identity and the settings.
    #[error("host {host}: cannot build the node's services: {source}")]
    NodeServices {
        /// The host.
        host: String,
        /// Why.
        #[source]
        source: NodeError,
    },
    /// The host's identity is unusable (hostname not a valid node name, no IPv4 default route, ...).
    #[error("host {host}: {source}")]
    Identity {
        /// The host.
        host: String,
        /// Why.
        #[source]
        source: IdentityError,
    },
    /// The caller's file source failed.
    #[error("host {host}: the desired files for the {stage} stage cannot be built: {source}")]
    DesiredFiles {
        /// The host.
        host: String,
        /// `bootstrap` or `node`.
        stage: &'static str,
        /// Why.
        #[source]
        source: SourceError,
    },
    /// A Kubernetes call failed.
    #[error("host {host}: {step} failed: {source}")]
    Cluster {
        /// The host.
        host: String,
        /// The step.
        step: FlowStep,
        /// What the cluster client said.
        #[source]
        source: wmco_cluster_client::Error,
    },
    /// A service did not reach STOPPED in time, so its binary cannot be replaced or it cannot be deleted.
    #[error("host {host}: service {service} did not stop within {after:?}; it is retried on the next reconcile")]
    StopTimedOut {
        /// The host.
        host: String,
        /// The service.
        service: String,
        /// The time waited.
        after: Duration,
    },
    /// The host failed preflight checks before anything was installed on it.
    #[error("host {host}: preflight failed: {}", failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Preflight {
        /// The host.
        host: String,
        /// Every failing check (at least one).
        failures: Vec<PreflightFailure>,
    },
    /// A reboot of the host did not go as it must (it did not come back in time, or the host cannot tell its
    /// boot time).
    #[error("host {host}: reboot: {message}")]
    Reboot {
        /// The host.
        host: String,
        /// What happened and what to do.
        message: String,
    },
    /// The Node named after the host is not the record's (another record's, a Linux Node, a Windows Node at another
    /// address), or another record already expects that name: the host is refused, that Node never touched.
    #[error(
        "host {host}: Node name {node} is taken: {reason}; the operator leaves that Node alone and configures \
         nothing until the host is renamed or the other is removed"
    )]
    NodeNameConflict {
        /// The host.
        host: String,
        /// The Node name the host would take.
        node: String,
        /// Whose the name is, or why the Node is not the host's.
        reason: String,
    },
    /// The host's name changed since it was recorded, and the new one gives another Node name: its kubelet would
    /// register a second Node beside the first.
    #[error(
        "host {host}: its host name changed from {recorded} to {observed}, which would make it Node {new_node} \
         beside its Node {recorded_node}; rename it back to {recorded}, or remove the host and add it again"
    )]
    HostnameChanged {
        /// The host.
        host: String,
        /// The recorded host name.
        recorded: String,
        /// The host name it reports now.
        observed: String,
        /// The host's Node.
        recorded_node: String,
        /// The Node name the new host name gives.
        new_node: String,
    },
    /// The `WindowsInstance` lacks what the flow needs (namespace, name, or a recorded identity).
    #[error("WindowsInstance {instance}: {what} is missing")]
    Record {
        /// `namespace/name` as far as known.
        instance: String,
        /// What is missing.
        what: &'static str,
    },
}

impl FlowError {
    /// Whether trying again later may succeed. Authentication failures, host key mismatches, unusable identities
    /// (a hostname that makes no node name, no IPv4 default route) and inconsistent desired states are permanent:
    /// they need an admin. Output that cannot be read (a probe printing no or malformed JSON) is retried: a host
    /// may print garbage once (a profile message, a reboot under way) and be fine the next time. A failed
    /// preflight is retried with backoff, since the admin fixes the host, not the record (the record is Failed
    /// meanwhile, see [`FlowError::fails_the_record`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            FlowError::Transport { source, .. } | FlowError::Upload { source, .. } => match source.as_ref() {
                TransportError::CommandFailed { .. } => true,
                other => other.is_retryable(),
            },
            FlowError::Command { .. }
            | FlowError::DesiredFiles { .. }
            | FlowError::Cluster { .. }
            | FlowError::StopTimedOut { .. }
            | FlowError::Probe { .. }
            | FlowError::ChainOutput { .. }
            | FlowError::Identity { source: IdentityError::Output { .. } | IdentityError::CloudName { .. }, .. }
            | FlowError::Preflight { .. }
            | FlowError::NodeNameConflict { .. }
            | FlowError::HostnameChanged { .. }
            | FlowError::Reboot { .. } => true,
            FlowError::Plan { .. }
            | FlowError::Render { .. }
            | FlowError::NodeServices { .. }
            | FlowError::Identity { .. }
            | FlowError::Record { .. } => false,
        }
    }

    /// A stable snake-case kind for the errors-by-kind metric; transport errors use the transport's class.
    pub fn metric_label(&self) -> &'static str {
        match self {
            FlowError::Transport { source, .. } | FlowError::Upload { source, .. } => source.class().label(),
            FlowError::Command { .. } => "command",
            FlowError::Probe { .. } => "probe_output",
            FlowError::ChainOutput { .. } => "chain_output",
            FlowError::Plan { .. } => "plan",
            FlowError::Render { .. } => "render",
            FlowError::NodeServices { .. } => "node_services",
            FlowError::Identity { .. } => "identity",
            FlowError::DesiredFiles { .. } => "desired_files",
            FlowError::Cluster { .. } => "cluster",
            FlowError::StopTimedOut { .. } => "stop_timed_out",
            FlowError::Record { .. } => "record",
            FlowError::Preflight { .. } => "preflight",
            FlowError::NodeNameConflict { .. } => "node_name_conflict",
            FlowError::HostnameChanged { .. } => "hostname_changed",
            FlowError::Reboot { .. } => "reboot",
        }
    }

    /// Whether the record goes to phase `Failed`: permanent errors, a failed preflight and a taken Node name
    /// (retried, but nothing changes until the admin fixes the host or the other one).
    pub fn fails_the_record(&self) -> bool {
        !self.is_retryable()
            || matches!(
                self,
                FlowError::Preflight { .. } | FlowError::NodeNameConflict { .. } | FlowError::HostnameChanged { .. }
            )
    }

    /// The failing preflight checks, if this is a failed preflight.
    pub fn preflight_failures(&self) -> &[PreflightFailure] {
        match self {
            FlowError::Preflight { failures, .. } => failures,
            _ => &[],
        }
    }

    /// The step the error happened in, when it is tied to one.
    pub fn step(&self) -> Option<FlowStep> {
        match self {
            FlowError::Transport { step, .. }
            | FlowError::Upload { step, .. }
            | FlowError::Command { step, .. }
            | FlowError::Render { step, .. }
            | FlowError::ChainOutput { step, .. }
            | FlowError::Cluster { step, .. } => Some(*step),
            FlowError::Probe { .. } => Some(FlowStep::Probe),
            FlowError::Plan { .. } | FlowError::NodeServices { .. } | FlowError::DesiredFiles { .. } => {
                Some(FlowStep::DesiredState)
            }
            FlowError::Identity { .. } | FlowError::Preflight { .. } => Some(FlowStep::Identify),
            FlowError::Reboot { .. } => Some(FlowStep::Reboot),
            FlowError::NodeNameConflict { .. } => Some(FlowStep::ClaimNode),
            FlowError::HostnameChanged { .. } => Some(FlowStep::Probe),
            FlowError::StopTimedOut { .. } => Some(FlowStep::Services),
            FlowError::Record { .. } => Some(FlowStep::Record),
        }
    }

    /// Whether the host refused the operator's key (the flow then records the
    /// [`AUTHENTICATION_FAILED_CONDITION`](wmco_cluster_client::types::AUTHENTICATION_FAILED_CONDITION) with when the
    /// refusals began).
    pub fn is_authentication_failure(&self) -> bool {
        match self {
            FlowError::Transport { source, .. } | FlowError::Upload { source, .. } => {
                matches!(source.as_ref(), TransportError::Authentication { .. })
            }
            _ => false,
        }
    }

    /// Whether the host presented a different key than the pinned one (the controller then sets phase Failed and
    /// publishes a Warning Event; nothing else is sent to the host).
    pub fn is_host_key_mismatch(&self) -> bool {
        match self {
            FlowError::Transport { source, .. } | FlowError::Upload { source, .. } => {
                matches!(source.as_ref(), TransportError::HostKeyMismatch { .. })
            }
            _ => false,
        }
    }

    /// Whether the host's Node name is taken ([`FlowError::NodeNameConflict`]): the flow records the
    /// `NodeNameConflict` condition and the controller a Warning Event of that reason.
    pub fn is_node_name_conflict(&self) -> bool {
        matches!(self, FlowError::NodeNameConflict { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(source: TransportError) -> FlowError {
        FlowError::Transport { host: "admin@10.0.0.5:22".into(), step: FlowStep::Probe, source: Box::new(source) }
    }

    #[test]
    fn unreachable_is_retryable_while_authentication_is_permanent() {
        let unreachable = transport(TransportError::Unreachable {
            host: "admin@10.0.0.5:22".into(),
            during: "connecting".into(),
            reason: "connection refused".into(),
        });
        assert!(unreachable.is_retryable());
        assert_eq!(unreachable.metric_label(), "unreachable");
        assert_eq!(
            unreachable.to_string(),
            "host admin@10.0.0.5:22: probe failed: host admin@10.0.0.5:22: unreachable while connecting: connection refused"
        );
        let authentication = transport(TransportError::Authentication {
            host: "admin@10.0.0.5:22".into(),
            user: "admin".into(),
            reason: "denied".into(),
        });
        assert!(!authentication.is_retryable());
        assert!(authentication.is_authentication_failure());
        assert!(!unreachable.is_authentication_failure());
        assert_eq!(authentication.metric_label(), "authentication");
        assert_eq!(authentication.step(), Some(FlowStep::Probe));
    }

    #[test]
    fn identity_and_record_errors_are_permanent() {
        let error = FlowError::Record { instance: "wmco/win-a".into(), what: "metadata.namespace" };
        assert!(!error.is_retryable());
        assert_eq!(error.metric_label(), "record");
        assert_eq!(error.to_string(), "WindowsInstance wmco/win-a: metadata.namespace is missing");
        let stop =
            FlowError::StopTimedOut { host: "h".into(), service: "kubelet".into(), after: Duration::from_secs(60) };
        assert!(stop.is_retryable());
        assert_eq!(stop.step(), Some(FlowStep::Services));
    }
}
