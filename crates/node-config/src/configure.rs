//! `configure`: turn one host into a Ready node, one resumable pass at a time (design §4, two-phase
//! configuration). Each call observes the host in one probe round trip, applies only what differs, records its
//! progress in the `WindowsInstance` status, and returns where the host stands; the controller calls it again
//! when the Node (watched, not polled) changes.
//!
//! Stages, chosen from what exists rather than from memory, so a crash anywhere resumes correctly:
//!
//! 1. **Bootstrap** (no Node yet): directories, payload and phase-1 files (including the bootstrap kubeconfig),
//!    containerd and kubelet. Outcome [`ConfigureState::WaitingForNode`]. On first contact, before this first join,
//!    the CNI state an earlier configuration left is removed (`leftovers`).
//! 2. **Registered** (the Node exists, no hybrid-overlay subnet yet): phase-1 state without the bootstrap
//!    kubeconfig, which is deleted from the host. Outcome [`ConfigureState::WaitingForSubnet`].
//! 3. **Node** (the Node has its subnet): every service, phase-2 files (CNI, kube-proxy, TLS), labels and
//!    annotations; the version annotation and phase Ready only once every service runs and the Node is Ready.
//!
//! **Upgrade gate.** A host whose Node carries another version annotation than the operator's is configured only
//! while its record is in phase `Upgrading`, which the upgrade executor writes once the Node is marked, cordoned
//! and drained; until then a pass stops at [`ConfigureState::WaitingForUpgrade`] after one Node read, without any
//! SSH round trip or record write. An upgrade keeps the phase `Upgrading` until the host is Ready again.
//!
//! **Restarts as requests.** A pass whose plan stops a service on a Node in service (Ready, schedulable, unmarked,
//! at the operator's version: a cluster setting that restarts containerd and the kubelet, a changed file a service
//! reads at start) records a restart request in `status.disruption` and stops at
//! [`ConfigureState::WaitingForBudget`] after the probe, changing nothing. The fleet executor grants it within the
//! unavailability budget (Node marked, state `Granted`); the next pass applies the steps, and the pass that finds
//! the host Ready again records the restart completed (the fleet executor then unmarks the Node).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Instant;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::names::{
    BYOH_LABEL, HYBRID_OVERLAY_SUBNET_ANNOTATION, PUB_KEY_HASH_ANNOTATION, SSH_HOST_KEY_ANNOTATION,
    SSH_HOST_KEY_TYPE_ANNOTATION, VERSION_ANNOTATION, WORKER_ROLE_LABEL,
};
use wmco_cluster_client::types::{DisruptionState, InstanceOrigin, InstancePhase};
use wmco_cluster_client::{NodeExt, NodeMetadataPatch, WindowsInstanceExt, keep_host_key};
use wmco_payload_manifest::render::destinations::{
    BOOTSTRAP_KUBECONFIG, IMPORTED_ROOTS_RECORD, REGISTRIES_DIR, REGISTRIES_INDEX, TRUSTED_CERTIFICATES_DIR,
    TRUSTED_CERTIFICATES_INDEX,
};
use wmco_payload_manifest::{HostFile, HostFileSet};
use wmco_windows_services::{
    HostState, ObservedHost, ProbeRequest, ServiceStage, ServiceState, Sha256Hex, Step, Thumbprint, TrustedRoots,
    WinPath, node_host_state, plan,
};

use crate::disruption::{self, needs_budget, same_release, stopped_services};
use crate::drift::{self, IdentityChange};
use crate::error::{FlowError, FlowStep};
use crate::facts::{ContainersStep, FeatureState, HostFacts, PreflightCheck, PreflightFailure, containers_to_enable};
use crate::identity::{HostIdentity, NodeNaming};
use crate::leftovers;
use crate::memo::{self, InputsWithNode, PassInputs};
use crate::ownership::read_own_node;
use crate::pass::{
    ClusterAccess, ConfigureInputs, ConfigureOutcome, ConfigureState, FileStage, PassMemo, RebootStep, ServiceSettings,
    StageFiles, WithheldService,
};
use crate::preflight::{preflight, run_identity_command};
use crate::reboot::{self, Progress};
use crate::record::Recorder;
use crate::script;
use crate::session::HostSession;

/// Where a successful pass left the host.
struct PassResult {
    state: ConfigureState,
    node_name: String,
    steps_applied: usize,
    withheld: Vec<WithheldService>,
    /// The pass's inputs as it left them (the Node after its patch), for the session's memory of the pass.
    inputs: Option<InputsWithNode>,
}

impl PassResult {
    fn new(state: ConfigureState, node_name: String, steps_applied: usize) -> Self {
        PassResult { state, node_name, steps_applied, withheld: Vec::new(), inputs: None }
    }
}

/// The configuration stage, decided from the Node.
enum Stage {
    Bootstrap,
    Registered(Box<Node>),
    Node(Box<Node>),
}

impl Stage {
    /// The stage of a host whose Node is `node`: none yet, registered without its hybrid-overlay subnet, or with it.
    fn of(node: Option<Node>) -> Stage {
        match node {
            None => Stage::Bootstrap,
            Some(node) if subnet(&node).is_some() => Stage::Node(Box::new(node)),
            Some(node) => Stage::Registered(Box::new(node)),
        }
    }

    /// The Node, once registered.
    fn node(&self) -> Option<&Node> {
        match self {
            Stage::Bootstrap => None,
            Stage::Registered(node) | Stage::Node(node) => Some(node),
        }
    }

    /// The files and the services the stage installs.
    fn phases(&self) -> (FileStage<'_>, ServiceStage) {
        match self {
            Stage::Bootstrap | Stage::Registered(_) => (FileStage::Bootstrap, ServiceStage::Bootstrap),
            Stage::Node(node) => (FileStage::Node(node), ServiceStage::Node),
        }
    }
}

/// What the gates at a pass's start let through: the recorded identity with the host's Node as just read (`None`: the
/// host is met for the first time), and the identity command's output a reboot's return already read.
struct Opened {
    recorded: Option<(HostIdentity, Option<Node>)>,
    after_reboot: Option<String>,
}

/// What a pass applied and observed, for [`settle`].
struct Converged {
    node_name: String,
    desired: HostState,
    observed: ObservedHost,
    request: ProbeRequest,
    steps: Vec<Step>,
    withheld: Vec<WithheldService>,
    settings_generation: Option<String>,
}

/// How [`converge`] ended.
enum Convergence {
    /// The steps were applied.
    Applied(Box<Converged>),
    /// The pass ends here (it waits for the budget).
    Ends(PassResult),
    /// The host's identity changed and is recorded: the pass starts again with it.
    IdentityChanged,
}

/// Runs one configure pass for the host of `inputs.instance` over `session`.
///
/// A host that is already converged costs exactly one SSH round trip (the state probe) and no upload; the
/// record is written only when it changes. On failure the error is recorded as `lastError` (and phase `Failed` if
/// it is permanent, e.g. a host key mismatch) before it is returned. A refused login also records the
/// `AuthenticationFailed` condition (its start kept while the refusals go on); a pass that ran a command on the
/// host removes it.
///
/// ```no_run
/// use std::sync::Arc;
/// use wmco_node_config::{ClusterAccess, ConfigureInputs, ConfigureState, HostFilesSource, HostSession, ServiceSettings, configure};
/// # async fn example(
/// #     host: Arc<dyn wmco_ssh_transport::RemoteHost>,
/// #     cluster: ClusterAccess<'_>,
/// #     instance: &wmco_cluster_client::types::WindowsInstance,
/// #     settings: &ServiceSettings,
/// #     files: &dyn HostFilesSource,
/// # ) -> Result<(), wmco_node_config::FlowError> {
/// let session = HostSession::new(host); // keep it per host across reconciles
/// let drain = wmco_cluster_client::DrainOptions::default();
/// let inputs = ConfigureInputs {
///     instance, settings, files, operator_version: "10.17.0", pub_key_hash: "ab12", drain: &drain,
/// };
/// let outcome = configure(&session, cluster, &inputs).await?;
/// match outcome.state {
///     ConfigureState::Ready => {}                 // done; requeue for drift checks
///     ConfigureState::WaitingForNode
///     | ConfigureState::WaitingForSubnet
///     | ConfigureState::WaitingForReady => {}     // the Node watch triggers the next pass
///     ConfigureState::WaitingForServices => {}    // call again shortly: a service is starting
///     ConfigureState::WaitingForUpgrade => {}     // the upgrade executor's phase change triggers the next pass
///     ConfigureState::WaitingForBudget => {}      // the fleet executor's grant (a record write) triggers it
///     ConfigureState::Rebooting => {}             // call again shortly: the host restarts
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`FlowError`] naming the host and step; [`FlowError::is_retryable`] tells the controller whether to back off
/// and retry or to wait for an admin.
pub async fn configure(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
) -> Result<ConfigureOutcome, FlowError> {
    let before = session.counters();
    let reboot_before = inputs.instance.status.as_ref().and_then(|status| status.disruption_in_effect());
    let identity_before = inputs.instance.status.as_ref().and_then(HostIdentity::from_status);
    let pinned_before = inputs.instance.pinned_host_key().is_some();
    let mut recorder = Recorder::new(cluster.records, inputs.instance, session.label())?;
    let result = configure_pass(session, cluster, inputs, &mut recorder, IdentityCheck::Probe).await;
    let logged_in = session.counters().commands > before.commands;
    match result {
        Ok(PassResult { state, node_name, steps_applied, withheld, inputs }) => {
            if logged_in && recorder.note_logged_in() {
                recorder.save().await?;
            }
            if let (Some(inputs), Some(window)) = (inputs, PassMemo::window(state, session.settings())) {
                let fingerprint = inputs.with_status(Some(&recorder.status));
                let memo = PassMemo { fingerprint, state, withheld: withheld.clone(), at: Instant::now(), window };
                session.remember_pass(Some(memo));
            } else if logged_in {
                session.remember_pass(None);
            }
            let after = session.counters();
            tracing::debug!(host = session.label(), state = ?state, steps = steps_applied,
                commands = after.commands - before.commands, "configure pass done");
            Ok(ConfigureOutcome {
                state,
                node_name,
                steps_applied,
                commands: after.commands - before.commands,
                uploads: after.uploads - before.uploads,
                bytes_uploaded: after.bytes_uploaded - before.bytes_uploaded,
                withheld,
                reboot: RebootStep::between(reboot_before.as_ref(), recorder.status.disruption.as_ref()),
                identity_change: IdentityChange::between(identity_before, HostIdentity::from_status(&recorder.status))
                    .map(Box::new),
                host_key_first_use: recorder.status.pinned_host_key.clone().filter(|_| !pinned_before),
            })
        }
        Err(error) => {
            session.remember_pass(None);
            if error.is_authentication_failure() {
                recorder.note_authentication_refused(error.to_string(), Timestamp::now());
            } else if logged_in && !error.is_host_key_mismatch() {
                // A changed host key ends the connection before any login: it proves nothing about the key.
                recorder.note_logged_in();
            }
            recorder.save_error(&error).await;
            Err(error)
        }
    }
}

/// Whether a pass reads the host's identity again in its probe ([`drift`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum IdentityCheck {
    /// Read it and follow a change (a pass of a host whose identity is recorded).
    Probe,
    /// Not again: this pass plans with the identity a probe of the same pass just read.
    Done,
}

/// One pass: the gates at its start ([`gate`]), the host's identity and Node ([`identify`]), the stage they give and
/// its files (a pass with the inputs of the last one is answered from the session's memory), the host converged to
/// them ([`converge`]) and where that leaves it ([`settle`]).
async fn configure_pass(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    identity_check: IdentityCheck,
) -> Result<PassResult, FlowError> {
    let opened = match gate(session, cluster, inputs, recorder).await? {
        ControlFlow::Break(result) => return Ok(result),
        ControlFlow::Continue(opened) => opened,
    };
    let identity_check = if opened.recorded.is_some() { identity_check } else { IdentityCheck::Done };
    let (identity, node) = match identify(session, cluster, inputs, recorder, opened).await? {
        ControlFlow::Break(result) => return Ok(result),
        ControlFlow::Continue(identified) => identified,
    };
    let stage = Stage::of(node);
    let (file_stage, _) = stage.phases();
    let stage_files = inputs.files.files(&identity, file_stage).map_err(|source| FlowError::DesiredFiles {
        host: session.label().to_owned(),
        stage: file_stage.name(),
        source,
    })?;
    let pass_inputs =
        PassInputs::new(inputs.instance, &stage_files, inputs.settings, [inputs.operator_version, inputs.pub_key_hash]);
    let fingerprint = pass_inputs.with_node(stage.node()).with_status(inputs.instance.status.as_ref());
    if let Some(memo) = session.unchanged_pass(fingerprint) {
        tracing::debug!(host = session.label(), state = ?memo.state, "nothing changed since the last pass");
        let mut result = PassResult::new(memo.state, identity.expected_node_name, 0);
        result.withheld = memo.withheld;
        return Ok(result);
    }
    match converge(session, inputs, recorder, &identity, &stage, stage_files, identity_check).await? {
        Convergence::Applied(converged) => {
            settle(session, cluster, inputs, recorder, stage, *converged, &pass_inputs).await
        }
        Convergence::Ends(result) => Ok(result),
        Convergence::IdentityChanged => {
            Box::pin(configure_pass(session, cluster, inputs, recorder, IdentityCheck::Done)).await
        }
    }
}

/// The gates at a pass's start: the upgrade gate of a host whose identity is recorded (after one Node read), phase
/// `Configuring` for a new attempt, a reboot under way advanced by one step, and the host key pinned on first use.
async fn gate(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
) -> Result<ControlFlow<PassResult, Opened>, FlowError> {
    let recorded = match HostIdentity::from_status(&recorder.status) {
        Some(identity) => {
            let node = read_own_node(session, cluster, inputs.instance, &identity).await?;
            Some((identity, node))
        }
        None => None,
    };
    if let Some((identity, Some(node))) = &recorded
        && awaits_upgrade(node, recorder.status.phase, inputs.operator_version)
    {
        let name = identity.expected_node_name.clone();
        return Ok(ControlFlow::Break(PassResult::new(ConfigureState::WaitingForUpgrade, name, 0)));
    }
    // A Failed record keeps its phase until a pass gets further: writing Configuring first and Failed again at the
    // end would change the record on every attempt, and each change triggers the next reconcile (a hot loop).
    if !matches!(
        recorder.status.phase,
        Some(InstancePhase::Ready | InstancePhase::WaitingForNode | InstancePhase::Upgrading | InstancePhase::Failed)
    ) {
        recorder.set_phase(InstancePhase::Configuring);
    }
    let mut after_reboot = None;
    if reboot::under_way(&recorder.status.disruption).is_some() {
        match reboot::advance(session, cluster, inputs, recorder).await? {
            Progress::Waiting(state) => {
                return Ok(ControlFlow::Break(PassResult::new(state, waiting_node_name(inputs, recorder), 0)));
            }
            Progress::Back(stdout) => after_reboot = Some(stdout),
        }
    }
    if recorder.status.pinned_host_key.is_none() {
        let key =
            session.host().host_key().await.map_err(|source| session.transport_error(FlowStep::PinHostKey, source))?;
        // Kept where a recreated record finds it before the status says so: a record lost after this pass never
        // trusts another key on first use.
        keep_host_key(cluster.config_maps, inputs.instance, &key.to_openssh()).await.map_err(|source| {
            FlowError::Cluster { host: session.label().to_owned(), step: FlowStep::PinHostKey, source }
        })?;
        recorder.status.pinned_host_key = Some(key.to_openssh());
    }
    Ok(ControlFlow::Continue(Opened { recorded, after_reboot }))
}

/// The host's identity and Node: the recorded ones (the Node read by [`gate`]), else those its first contact found
/// (which may end the pass). The identity is saved with the record before anything else happens.
async fn identify(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    opened: Opened,
) -> Result<ControlFlow<PassResult, (HostIdentity, Option<Node>)>, FlowError> {
    let first = opened.recorded.is_none();
    let (identity, node) = match opened.recorded {
        Some(recorded) => recorded,
        None => match first_contact(session, cluster, inputs, recorder, opened.after_reboot).await? {
            ControlFlow::Break(result) => return Ok(ControlFlow::Break(result)),
            ControlFlow::Continue(identified) => identified,
        },
    };
    recorder.save().await?;
    // A host met for the first time whose Node another configuration left at another version (the Go operator's,
    // before a takeover) is in service: it goes through the upgrade executor (mark, cordon, drain, within the budget)
    // like any Node at another version, never reconfigured in place.
    let node_name = identity.expected_node_name.clone();
    if first && node.as_ref().is_some_and(|node| awaits_upgrade(node, recorder.status.phase, inputs.operator_version)) {
        tracing::info!(host = session.label(), node = %node_name,
            "the host's Node is configured at another version: waiting for the upgrade executor");
        return Ok(ControlFlow::Break(PassResult::new(ConfigureState::WaitingForUpgrade, node_name, 0)));
    }
    if recorder.note_node_name_free() {
        recorder.save().await?;
    }
    Ok(ControlFlow::Continue((identity, node)))
}

/// Converges the host to the stage's desired state: one probe (which reads the identity again: a change is followed
/// when `identity_check` asks), the plan, the budget a disruption of a Node in service claims first, the bootstrap
/// window, the steps, and the leftovers found removed.
async fn converge(
    session: &HostSession,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    identity: &HostIdentity,
    stage: &Stage,
    stage_files: StageFiles,
    identity_check: IdentityCheck,
) -> Result<Convergence, FlowError> {
    let node_name = identity.expected_node_name.clone();
    let StageFiles { files, withheld, settings_generation } = stage_files;
    let bootstrap_kubeconfig = parse_fixed(session, BOOTSTRAP_KUBECONFIG)?;
    let node_exists = stage.node().is_some();
    let wanted_files: BTreeMap<WinPath, &HostFile> = files
        .files()
        .iter()
        .filter(|file| !(node_exists && file.destination.same_location(&bootstrap_kubeconfig)))
        .map(|file| (file.destination.clone(), file))
        .collect();
    let (mut desired, withheld) =
        desired_state(session, inputs.settings, identity, stage.phases().1, &wanted_files, &files, withheld)?;
    restart_on_changed_start_files(&mut desired, &bootstrap_kubeconfig);

    let mut removed_files = vec![(leftovers::go_daemon_kubeconfig(session)?, FlowStep::RemoveFiles)];
    if node_exists {
        removed_files.push((bootstrap_kubeconfig.clone(), FlowStep::RemoveBootstrapKubeconfig));
    }
    let mut request = ProbeRequest::for_state(&desired);
    request.files.extend(removed_files.iter().map(|(path, _)| path.clone()));
    // Every probe reads the identity (the script stays the same file on the host); a pass checks it only when the
    // identity was recorded before it.
    request.identity = true;
    let observed = session.probe(&request).await?;
    recorder.note_pending_reboot(&observed.pending_reboot);
    if identity_check == IdentityCheck::Probe && follow_drift(session, inputs, recorder, identity, &observed).await? {
        return Ok(Convergence::IdentityChanged);
    }
    let steps =
        plan(&desired, &observed).map_err(|source| FlowError::Plan { host: session.label().to_owned(), source })?;
    if let Stage::Node(node) = stage
        && needs_budget(&steps, node, recorder.status.phase, inputs.operator_version)
        && !disruption::restart_granted(&recorder.status)
    {
        let services = stopped_services(&steps);
        if disruption::request_restart(&mut recorder.status, &node_name, services.clone()) {
            tracing::info!(host = session.label(), node = %node_name, services = ?services,
                "restart requested: waiting for the fleet executor to grant it within the budget");
            recorder.save().await?;
        }
        return Ok(Convergence::Ends(PassResult::new(ConfigureState::WaitingForBudget, node_name, 0)));
    }
    if matches!(stage, Stage::Bootstrap)
        && starts_a_bootstrap(&steps, &bootstrap_kubeconfig)
        && recorder.open_bootstrap_window(Timestamp::now())
    {
        tracing::info!(host = session.label(), node = %node_name, "bootstrap window opened");
        recorder.save().await?;
    }
    for step in &steps {
        tracing::info!(host = session.label(), step = %step, "applying");
    }
    if !steps.is_empty() && disruption::note_restarting(&mut recorder.status) {
        recorder.save().await?;
    }
    session.apply(&steps, &wanted_files, &observed).await?;
    leftovers::remove_found(session, &removed_files, &observed).await?;
    let converged = Converged { node_name, desired, observed, request, steps, withheld, settings_generation };
    Ok(Convergence::Applied(Box::new(converged)))
}

/// Follows a change of the host's identity that the probe read again ([`drift`]): records it and says `true` (the
/// pass is planned again with it); a host name back as recorded is saved.
async fn follow_drift(
    session: &HostSession,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    identity: &HostIdentity,
    observed: &ObservedHost,
) -> Result<bool, FlowError> {
    let naming = inputs.node_naming();
    let now = drift::drifted(session.label(), naming, &inputs.instance.spec, identity, observed.identity.as_ref())?;
    let hostname_back = recorder.note_hostname_as_recorded();
    if let Some(now) = now {
        tracing::info!(host = session.label(), node = %identity.expected_node_name, node_ip = %now.node_ip,
            hostname = %now.hostname, "the host's identity changed: recorded, and the pass planned again with it");
        now.record_in(&mut recorder.status);
        recorder.save().await?;
        return Ok(true);
    }
    if hostname_back {
        recorder.save().await?;
    }
    Ok(false)
}

/// Where the applied steps leave the host: without a Node, or without its subnet, waiting for the cluster; in the
/// node stage, its Node labelled and annotated, and Ready (version annotation, phase and configured version
/// recorded) once every service runs and the Node is Ready.
async fn settle(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    stage: Stage,
    converged: Converged,
    pass_inputs: &PassInputs,
) -> Result<PassResult, FlowError> {
    let Converged { node_name, desired, observed, request, steps, withheld, settings_generation } = converged;
    let (state, node) = match stage {
        Stage::Bootstrap => (ConfigureState::WaitingForNode, None),
        Stage::Registered(node) => (ConfigureState::WaitingForSubnet, Some(node)),
        Stage::Node(node) => {
            let node = *node;
            // After a successful chain every service it started is at least START_PENDING. Whether they all run is
            // asked only when the Node is Ready, i.e. when the answer can make the host Ready in this pass; otherwise
            // the Node's Ready condition triggers the next pass, which probes. Steps that touch no service (a pruned
            // file, a changed setting file no service reads at start) leave the probe's answer about the services
            // true.
            let running = match (steps.iter().any(touches_a_service), node.is_ready()) {
                (false, _) => Some(all_running(&desired, &observed)),
                (true, true) => Some(all_running(&desired, &session.probe(&request).await?)),
                (true, false) => None,
            };
            let ready = running == Some(true) && node.is_ready();
            let patch = node_patch(&node, inputs, recorder.status.pinned_host_key.as_deref(), ready);
            if patch != NodeMetadataPatch::default() {
                cluster.nodes.patch_metadata(&node_name, &patch).await.map_err(|source| FlowError::Cluster {
                    host: session.label().to_owned(),
                    step: FlowStep::LabelNode,
                    source,
                })?;
            }
            let inputs_after = Some(pass_inputs.with_node(Some(&memo::patched(&node, &patch))));
            let state = record_outcome(recorder, inputs, running, ready, settings_generation);
            recorder.save().await?;
            return Ok(PassResult { state, node_name, steps_applied: steps.len(), withheld, inputs: inputs_after });
        }
    };
    set_waiting(recorder);
    recorder.save().await?;
    let mut result = PassResult::new(state, node_name, steps.len());
    result.inputs = Some(pass_inputs.with_node(node.as_deref()));
    Ok(result)
}

/// Records a node-stage pass's outcome: Ready (with the configured version and settings generation) when `ready`,
/// else waiting for the services that do not all run yet, or for the Node's Ready condition.
fn record_outcome(
    recorder: &mut Recorder<'_>,
    inputs: &ConfigureInputs<'_>,
    running: Option<bool>,
    ready: bool,
    settings_generation: Option<String>,
) -> ConfigureState {
    disruption::settle_restart(&mut recorder.status, ready);
    if ready {
        recorder.set_phase(InstancePhase::Ready);
        recorder.status.configured_version = Some(inputs.operator_version.to_owned());
        recorder.status.settings_generation = settings_generation;
        recorder.status.configuring_since = None;
        recorder.status.last_error = None;
        return ConfigureState::Ready;
    }
    set_waiting(recorder);
    if running == Some(false) { ConfigureState::WaitingForServices } else { ConfigureState::WaitingForReady }
}

/// Whether `step` stops, starts, creates, reconfigures or deletes a service.
fn touches_a_service(step: &Step) -> bool {
    matches!(
        step,
        Step::StopService(_)
            | Step::StartService(_)
            | Step::CreateService(_)
            | Step::ReconfigureService(_)
            | Step::DeleteService(_)
    )
}

/// The first contact with a host whose record holds no identity yet: reads its identity and facts (`after_reboot`:
/// the identity command's output a reboot's return already read), runs the preflight, enables the `Containers`
/// feature if needed, and before its first join (no Node yet) clears the CNI state an earlier configuration left.
/// The clearing happens before the identity is recorded, so a crash in between clears again on the next pass.
/// Passed, the identity is in the recorder (saved by the caller), with the host's Node if one exists; the pass ends
/// here while the host gets its `Containers` feature (installed, then a reboot).
async fn first_contact(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    after_reboot: Option<String>,
) -> Result<ControlFlow<PassResult, (HostIdentity, Option<Node>)>, FlowError> {
    let stdout = match after_reboot {
        Some(stdout) => stdout,
        None => run_identity_command(session, inputs.node_naming()).await?,
    };
    let (identity, facts) = parse_identity(session, &stdout, inputs.node_naming())?;
    let identity = identity
        .named_by(&inputs.instance.spec)
        .map_err(|source| FlowError::Identity { host: session.label().to_owned(), source })?;
    check_preflight(session, inputs, &identity, &facts)?;
    let node = read_own_node(session, cluster, inputs.instance, &identity).await?;
    if let Some(step) = containers_to_enable(&facts) {
        let node_name = node.as_ref().map(|_| identity.expected_node_name.as_str());
        let state = enable_containers(session, recorder, &facts, step, node_name).await?;
        return Ok(ControlFlow::Break(PassResult::new(state, identity.expected_node_name, 0)));
    }
    if node.is_none() && facts.cni_state == Some(true) {
        leftovers::clear_cni_state(session).await?;
    }
    recorder.note_preflight_passed();
    identity.record_in(&mut recorder.status);
    Ok(ControlFlow::Continue((identity, node)))
}

/// Whether the upgrade gate holds the pass back: the Node is configured at another version than the operator's
/// (build metadata ignored) and the record is not in phase `Upgrading`.
fn awaits_upgrade(node: &Node, phase: Option<InstancePhase>, operator_version: &str) -> bool {
    let configured = node.annotation(VERSION_ANNOTATION);
    phase != Some(InstancePhase::Upgrading)
        && configured.is_some_and(|configured| !same_release(configured, operator_version))
}

/// Enters the waiting phase `WaitingForNode`, except during an upgrade, which stays `Upgrading` until Ready (the
/// phase is the executor's permission, and counts against the unavailability budget).
fn set_waiting(recorder: &mut Recorder<'_>) {
    if recorder.status.phase != Some(InstancePhase::Upgrading) {
        recorder.set_phase(InstancePhase::WaitingForNode);
    }
}

/// The kubelet's service name (`windows_services::node_services`).
const KUBELET_SERVICE: &str = "kubelet";

/// Whether `steps` give the kubelet of a host without a Node a reason to ask for its first client certificate: they
/// write the bootstrap kubeconfig (a first one or a fresh token) or start the kubelet.
fn starts_a_bootstrap(steps: &[Step], bootstrap_kubeconfig: &WinPath) -> bool {
    steps.iter().any(|step| match step {
        Step::ReplaceFiles(paths) => paths.iter().any(|path| path.same_location(bootstrap_kubeconfig)),
        Step::StartService(service) => service.as_str() == KUBELET_SERVICE,
        _ => false,
    })
}

/// The host's identity (its Node name decided by `naming`) and preflight facts from the identity command's output.
fn parse_identity(
    session: &HostSession,
    stdout: &str,
    naming: NodeNaming,
) -> Result<(HostIdentity, HostFacts), FlowError> {
    let identity = HostIdentity::parse_with(stdout, naming)
        .map_err(|source| FlowError::Identity { host: session.label().to_owned(), source })?;
    Ok((identity, HostFacts::parse(stdout)))
}

/// The Node name a pass reports while the host reboots: the recorded one, else the admin's, else none yet.
fn waiting_node_name(inputs: &ConfigureInputs<'_>, recorder: &Recorder<'_>) -> String {
    recorder
        .status
        .expected_node_name
        .clone()
        .or_else(|| inputs.instance.spec.expected_node_name.clone())
        .unwrap_or_default()
}

/// Installs the `Containers` feature of a host met for the first time (when `step` says so) and requests the reboot
/// that activates it (`node_name`: the host's Node, when one exists — a host configured before, by this operator
/// or the Go one). A host whose feature is still not enabled after the operator's reboot for it is refused by
/// the `ContainersFeature` preflight check instead of being rebooted again.
async fn enable_containers(
    session: &HostSession,
    recorder: &mut Recorder<'_>,
    facts: &HostFacts,
    step: ContainersStep,
    node_name: Option<&str>,
) -> Result<ConfigureState, FlowError> {
    // The pinned host key and the phase are recorded whatever the budget says.
    recorder.save().await?;
    let state = facts.containers.as_ref().map_or("unknown", FeatureState::as_str);
    // A reboot for the feature that completed and left it pending fails; a requested one waits (below) for its grant.
    let done = recorder.status.disruption.as_ref().filter(|reboot| {
        reboot.reason == reboot::CONTAINERS_REBOOT_REASON && reboot.state == DisruptionState::Completed
    });
    if let Some(done) = done {
        let at = done.completed_at.as_ref().map_or_else(|| "earlier".to_owned(), |time| time.0.to_string());
        let failure = PreflightFailure {
            check: PreflightCheck::ContainersFeature,
            message: format!(
                "the Windows feature Containers is still {state} after the operator restarted the host for it ({at}): \
                 check `Get-WindowsOptionalFeature -Online -FeatureName Containers` and the host's CBS log; the \
                 operator does not restart it again"
            ),
        };
        tracing::warn!(host = session.label(), check = %failure.check, reason = %failure.message, "preflight check failed");
        return Err(FlowError::Preflight { host: session.label().to_owned(), failures: vec![failure] });
    }
    let boot = reboot::boot_time(session, facts)?;
    if step == ContainersStep::Install {
        tracing::info!(host = session.label(), state, "installing the Windows feature Containers");
        let command = script::install_containers_feature().map_err(|source| FlowError::Render {
            host: session.label().to_owned(),
            step: FlowStep::InstallFeature,
            source,
        })?;
        session.run_powershell(FlowStep::InstallFeature, "Install-WindowsFeature -Name Containers", &command).await?;
    }
    reboot::request(session, recorder, reboot::CONTAINERS_REBOOT_REASON, boot, node_name).await
}

/// The preflight of a host met for the first time, against the bytes of its bootstrap stage's files (containerd
/// and the kubelet: most of the payload; the headroom covers the node stage's).
fn check_preflight(
    session: &HostSession,
    inputs: &ConfigureInputs<'_>,
    identity: &HostIdentity,
    facts: &HostFacts,
) -> Result<(), FlowError> {
    let files = inputs.files.files(identity, FileStage::Bootstrap).map_err(|source| FlowError::DesiredFiles {
        host: session.label().to_owned(),
        stage: FileStage::Bootstrap.name(),
        source,
    })?;
    let payload_bytes = files.files.files().iter().map(|file| file.size).sum();
    let failures = preflight(facts, payload_bytes, inputs.settings.hybrid_overlay_vxlan_port);
    if failures.is_empty() {
        return Ok(());
    }
    for failure in &failures {
        tracing::warn!(host = session.label(), check = %failure.check, reason = %failure.message, "preflight check failed");
    }
    Err(FlowError::Preflight { host: session.label().to_owned(), failures })
}

fn parse_fixed(session: &HostSession, text: &str) -> Result<WinPath, FlowError> {
    WinPath::parse(text).map_err(|source| FlowError::Render {
        host: session.label().to_owned(),
        step: FlowStep::DesiredState,
        source: wmco_windows_services::CommandError::ScriptPath { source },
    })
}

/// The host state to converge to: the node's services for `phase`, its directories plus those of the files, the
/// files' hashes, containerd's registry directory and the trusted certificates' directory as owned ones (indexed by
/// `wmco-registries.txt` and `wmco-certs.txt`), and the root store trusting each certificate of that directory;
/// without the `withheld` services and their dependents ([`withhold`]), returned with them.
fn desired_state(
    session: &HostSession,
    settings: &ServiceSettings,
    identity: &HostIdentity,
    phase: ServiceStage,
    wanted_files: &BTreeMap<WinPath, &HostFile>,
    files: &HostFileSet,
    withheld: Vec<WithheldService>,
) -> Result<(HostState, Vec<WithheldService>), FlowError> {
    let mut desired = node_host_state(&settings.node_inputs(identity), phase)
        .map_err(|source| FlowError::NodeServices { host: session.label().to_owned(), source })?;
    desired.directories.extend(files.directories());
    for (path, file) in wanted_files {
        let digest = Sha256Hex::new(&file.sha256.to_string())
            .map_err(|_| FlowError::Record { instance: session.label().to_owned(), what: "a file digest in hex" })?;
        desired.files.insert(path.clone(), digest);
    }
    // containerd's registry directory is the operator's: a registry whose mirror rules are gone loses its hosts.toml.
    let index = parse_fixed(session, REGISTRIES_INDEX)?;
    if desired.files.contains_key(&index) {
        desired.owned_directories.insert(parse_fixed(session, REGISTRIES_DIR)?, index);
    }
    let certificates_index = parse_fixed(session, TRUSTED_CERTIFICATES_INDEX)?;
    if desired.files.contains_key(&certificates_index) {
        let directory = parse_fixed(session, TRUSTED_CERTIFICATES_DIR)?;
        desired.trusted_roots = Some(TrustedRoots {
            certificates: trusted_certificates(&desired, &directory),
            record: parse_fixed(session, IMPORTED_ROOTS_RECORD)?,
        });
        desired.owned_directories.insert(directory, certificates_index);
    }
    let withheld = withhold(&mut desired, withheld);
    for service in &withheld {
        tracing::debug!(host = session.label(), service = %service.service, reason = %service.reason, "service withheld");
    }
    Ok((desired, withheld))
}

/// The certificates among the desired files: `<thumbprint>.crt` directly in `directory`.
fn trusted_certificates(desired: &HostState, directory: &WinPath) -> BTreeMap<Thumbprint, WinPath> {
    desired
        .files
        .keys()
        .filter(|path| path.parent().is_some_and(|parent| parent.same_location(directory)))
        .filter_map(|path| {
            let stem = path.file_name()?.strip_suffix(".crt")?;
            Some((Thumbprint::new(stem).ok()?, path.clone()))
        })
        .collect()
}

/// Leaves the `withheld` services out of `desired`, and with them every service that depends on one (it could not
/// start); returns them all, the dependents with the reason of the service they wait for.
fn withhold(desired: &mut HostState, mut withheld: Vec<WithheldService>) -> Vec<WithheldService> {
    loop {
        let dependent = desired.services.iter().find_map(|spec| {
            let waits_for = withheld
                .iter()
                .find(|service| spec.dependencies.iter().any(|dependency| dependency.as_str() == service.service))?;
            let already = withheld.iter().any(|service| service.service == spec.name.as_str());
            (!already).then(|| {
                WithheldService::new(
                    spec.name.as_str(),
                    format!("depends on {}, withheld: {}", waits_for.service, waits_for.reason),
                )
            })
        });
        match dependent {
            Some(service) => withheld.push(service),
            None => break,
        }
    }
    desired.services.retain(|spec| !withheld.iter().any(|service| service.service == spec.name.as_str()));
    withheld
}

/// Makes each desired file named on a service's command line (`--config=C:\k\kubelet.conf`, `--config
/// C:\k\containerd\containerd_conf.toml`) a restart trigger of that service: a service reads such files at start,
/// so `plan` must stop it before the file is replaced and start it afterwards, as for its binaries. The bootstrap
/// kubeconfig is exempt: a fresh token must not restart a kubelet that is bootstrapping.
fn restart_on_changed_start_files(desired: &mut HostState, bootstrap_kubeconfig: &WinPath) {
    let files: Vec<WinPath> =
        desired.files.keys().filter(|path| !path.same_location(bootstrap_kubeconfig)).cloned().collect();
    for spec in &mut desired.services {
        for path in &files {
            let named = spec.command.arguments.iter().any(|argument| {
                let value = argument.rsplit_once('=').map_or(argument.as_str(), |(_, value)| value);
                WinPath::parse(value).is_ok_and(|argument_path| argument_path.same_location(path))
            });
            if named && !spec.binaries().any(|binary| binary.same_location(path)) {
                spec.extra_binaries.push(path.clone());
            }
        }
    }
}

/// Whether every desired service is RUNNING (a service still in START_PENDING is not: the version annotation and
/// phase Ready wait for it).
fn all_running(desired: &HostState, observed: &ObservedHost) -> bool {
    desired.services.iter().filter(|spec| spec.should_run()).all(|spec| {
        observed.services.get(&spec.name).is_some_and(|service| service.state == Some(ServiceState::Running))
    })
}

/// The Node's hybrid-overlay subnet annotation.
fn subnet(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()?
        .get(HYBRID_OVERLAY_SUBNET_ANNOTATION)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

/// The labels and annotations the Node lacks: BYOH and worker role (BYOH hosts), the public key hash, the pinned
/// host key (in the Go operator's annotations, so its tooling and a rollback to it keep the pin), and the version
/// once `ready`.
fn node_patch(node: &Node, inputs: &ConfigureInputs<'_>, pinned: Option<&str>, ready: bool) -> NodeMetadataPatch {
    let label = |key: &str| node.metadata.labels.as_ref().and_then(|labels| labels.get(key)).map(String::as_str);
    let mut patch = NodeMetadataPatch::default();
    if inputs.instance.spec.origin == InstanceOrigin::Byoh {
        if label(BYOH_LABEL) != Some("true") {
            patch = patch.set_label(BYOH_LABEL, "true");
        }
        if label(WORKER_ROLE_LABEL) != Some("") {
            patch = patch.set_label(WORKER_ROLE_LABEL, "");
        }
    }
    if node.annotation(PUB_KEY_HASH_ANNOTATION) != Some(inputs.pub_key_hash) {
        patch = patch.set_annotation(PUB_KEY_HASH_ANNOTATION, inputs.pub_key_hash);
    }
    if let Some((algorithm, blob)) = pinned.and_then(|line| line.split_once(' ')) {
        for (annotation, value) in [(SSH_HOST_KEY_TYPE_ANNOTATION, algorithm), (SSH_HOST_KEY_ANNOTATION, blob)] {
            if node.annotation(annotation) != Some(value) {
                patch = patch.set_annotation(annotation, value);
            }
        }
    }
    if ready && node.annotation(VERSION_ANNOTATION) != Some(inputs.operator_version) {
        patch = patch.set_annotation(VERSION_ANNOTATION, inputs.operator_version);
    }
    patch
}
