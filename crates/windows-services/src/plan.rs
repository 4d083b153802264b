//! `plan(desired, observed)`: the minimal, ordered, deterministic list of [`Step`]s that converges a host from
//! what the state probe observed to a [`HostState`].
//!
//! Order of the plan: missing directories (the uploads go into them); the ACLs of private directories that are new or
//! grant anyone but SYSTEM and Administrators (before anything secret is uploaded into them); stops, dependents before their dependencies
//! (the SCM refuses to stop a service with running dependents, error 1051); deletions of removed services,
//! dependents first; the emptying of owned directories whose index changed; the file replacements the caller
//! performs ([`Step::ReplaceFiles`], after the services that hold those binaries stopped); the trusted roots; the
//! host settings (machine environment, registry values, firewall rules, Defender exclusions); creations and reconfigurations in
//! dependency order; starts in dependency order. Ties are broken by service name, so equal inputs give equal
//! plans. The host settings come just before the service steps so that everything after the file replacement is
//! a run of steps a caller can send as one command line (`CommandChain`): no service reads them before its next
//! start, and the machine environment only reaches services at the next boot.
//!
//! A service is stopped (and started again afterwards) when a binary it holds open is replaced, or when its
//! command line, dependencies or own `Environment` value change, which only take effect at the next start.
//! Changes of description, display name, start type or recovery settings are applied without a restart. Machine
//! environment changes do not restart services: the service control manager hands services the machine
//! environment it read at boot (windows-commands.md §4.1), so only a service's own `Environment` value reaches it
//! without a reboot.
//!
//! The executor runs the steps in order and waits for STOPPED after each [`Step::StopService`] (sc.exe returns at
//! STOP_PENDING). A service observed in STOP_PENDING gets no stop step (sc.exe would fail with 1061); if its binary
//! is to be replaced, the executor should probe again once it has stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::access::{grants_only_system_and_administrators, has_explicit_entry_for_others};
use crate::command::{CommandError, RenderedCommand};
use crate::host::{Direction, EnvVarName, FirewallRule, RegistryValue};
use crate::host_state::HostState;
use crate::path::WinPath;
use crate::powershell::PowerShellScript;
use crate::probe::{ObservedFirewallRule, ObservedHost, ObservedService};
use crate::sc::{ConfigChanges, ScCommand};
use crate::service::{FailureActions, ServiceName, ServiceSpec};
use crate::trust::RootSync;

/// `Enabled` value of an enabled firewall rule.
const FIREWALL_ENABLED: u32 = 1;
/// `Action` value of an allow rule.
const FIREWALL_ALLOW: u32 = 2;

/// The changes to apply to an existing service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconfiguration {
    /// The service.
    pub name: ServiceName,
    /// Options for `sc.exe config`.
    pub config: ConfigChanges,
    /// New description, if it differs.
    pub description: Option<String>,
    /// New recovery settings, if they differ.
    pub recovery: Option<FailureActions>,
    /// New failure flag, if it differs.
    pub failure_flag: Option<bool>,
    /// New `Environment` entries (`NAME=value`; empty removes the value), if they differ. They take effect at the
    /// service's next start, so the plan restarts a running service.
    pub environment: Option<Vec<String>>,
}

/// One action of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create missing directories.
    EnsureDirectories(Vec<WinPath>),
    /// Let only SYSTEM and Administrators into private directories (module `access`).
    RestrictDirectories {
        /// Directories that lose their explicit entries and inherit again first (`icacls /reset`): those within a
        /// private directory that grant others, and private ones with explicit entries for others.
        reset: Vec<WinPath>,
        /// Private directories that are new or grant others: inheritance off, SYSTEM and Administrators full
        /// control inherited below.
        protect: Vec<WinPath>,
    },
    /// Set or remove machine environment variables.
    SetMachineEnv(BTreeMap<EnvVarName, Option<String>>),
    /// Write a registry value.
    SetRegistryValue(RegistryValue),
    /// Empty an owned directory whose index changed and create it again with its desired subdirectories (the
    /// desired files under it follow in [`Step::ReplaceFiles`]).
    ResetDirectory {
        /// The owned directory.
        directory: WinPath,
        /// Its desired subdirectories.
        subdirectories: Vec<WinPath>,
    },
    /// Remove a firewall rule whose settings differ (it is created again by a following step), or one that must
    /// not exist.
    RemoveFirewallRule(String),
    /// Create a firewall rule.
    CreateFirewallRule(FirewallRule),
    /// Exclude a program from Windows Defender's scanning.
    AddDefenderExclusion(WinPath),
    /// Remove a program's Defender exclusion.
    RemoveDefenderExclusion(WinPath),
    /// Remove rotated files beyond the newest few (absent ones are skipped).
    PruneFiles(Vec<WinPath>),
    /// Stop a service (the executor waits for STOPPED before the next step).
    StopService(ServiceName),
    /// Delete a service that must no longer exist.
    DeleteService(ServiceName),
    /// The caller uploads these files (over SFTP, hash-verified); no command line.
    ReplaceFiles(Vec<WinPath>),
    /// Import the missing trusted root certificates (from files uploaded by [`Step::ReplaceFiles`]) and remove those
    /// the operator imported that are no longer trusted.
    SyncRootCertificates(Box<RootSync>),
    /// Create a missing service with its description and recovery settings.
    CreateService(Box<ServiceSpec>),
    /// Change an existing service.
    ReconfigureService(Box<Reconfiguration>),
    /// Start a service.
    StartService(ServiceName),
}

impl Step {
    /// The command lines that perform the step, in order (none for [`Step::ReplaceFiles`]).
    ///
    /// ```
    /// use wmco_windows_services::{ServiceName, Step};
    /// let step = Step::StartService(ServiceName::new("kubelet")?);
    /// let lines: Vec<String> = step.commands()?.into_iter().map(|command| command.line).collect();
    /// assert_eq!(lines, ["sc.exe start kubelet"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CommandError`] when a value cannot be rendered safely.
    pub fn commands(&self) -> Result<Vec<RenderedCommand>, CommandError> {
        match self {
            Step::EnsureDirectories(directories) => {
                Ok(vec![PowerShellScript::ensure_directories(directories)?.render()?])
            }
            Step::RestrictDirectories { reset, protect } => {
                Ok(vec![PowerShellScript::restrict_directories(reset, protect).render()?])
            }
            Step::SetMachineEnv(variables) => Ok(vec![PowerShellScript::set_machine_env(variables).render()?]),
            Step::SetRegistryValue(value) => Ok(vec![PowerShellScript::set_registry_value(value).render()?]),
            Step::RemoveFirewallRule(name) => Ok(vec![PowerShellScript::remove_firewall_rule(name).render()?]),
            Step::ResetDirectory { directory, subdirectories } => {
                Ok(vec![PowerShellScript::reset_directory(directory, subdirectories)?.render()?])
            }
            Step::CreateFirewallRule(rule) => Ok(vec![PowerShellScript::new_firewall_rule(rule).render()?]),
            Step::AddDefenderExclusion(program) => {
                Ok(vec![PowerShellScript::add_defender_exclusion(program).render()?])
            }
            Step::RemoveDefenderExclusion(program) => {
                Ok(vec![PowerShellScript::remove_defender_exclusion(program).render()?])
            }
            Step::PruneFiles(files) => Ok(vec![PowerShellScript::remove_files(files).render()?]),
            Step::StopService(name) => Ok(vec![ScCommand::Stop(name.clone()).render()?]),
            Step::DeleteService(name) => Ok(vec![ScCommand::Delete(name.clone()).render()?]),
            Step::ReplaceFiles(_) => Ok(Vec::new()),
            Step::SyncRootCertificates(sync) => Ok(vec![sync.script()?.render()?]),
            Step::CreateService(spec) => create_commands(spec),
            Step::ReconfigureService(change) => reconfigure_commands(change),
            Step::StartService(name) => Ok(vec![ScCommand::Start(name.clone()).render()?]),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::EnsureDirectories(directories) => write!(f, "create {} directories", directories.len()),
            Step::RestrictDirectories { reset, protect } => {
                write!(f, "restrict {} directories to SYSTEM and Administrators", reset.len().max(protect.len()))
            }
            Step::SetMachineEnv(variables) => write!(f, "set {} machine environment variables", variables.len()),
            Step::SetRegistryValue(value) => write!(f, r"set registry value {}\{}", value.key, value.name),
            Step::RemoveFirewallRule(name) => write!(f, "remove firewall rule {name}"),
            Step::ResetDirectory { directory, .. } => write!(f, "empty directory {directory}"),
            Step::CreateFirewallRule(rule) => write!(f, "create firewall rule {}", rule.name),
            Step::AddDefenderExclusion(program) => write!(f, "exclude {program} from Defender scanning"),
            Step::RemoveDefenderExclusion(program) => write!(f, "remove the Defender exclusion of {program}"),
            Step::PruneFiles(files) => write!(f, "remove {} rotated files", files.len()),
            Step::StopService(name) => write!(f, "stop service {name}"),
            Step::DeleteService(name) => write!(f, "delete service {name}"),
            Step::ReplaceFiles(files) => write!(f, "replace {} files", files.len()),
            Step::SyncRootCertificates(sync) => sync.fmt(f),
            Step::CreateService(spec) => write!(f, "create service {}", spec.name),
            Step::ReconfigureService(change) => write!(f, "reconfigure service {}", change.name),
            Step::StartService(name) => write!(f, "start service {name}"),
        }
    }
}

/// `sc.exe create`, then description, recovery and failure flag when they are not the defaults.
fn create_commands(spec: &ServiceSpec) -> Result<Vec<RenderedCommand>, CommandError> {
    let name = spec.name.clone();
    let mut commands = vec![ScCommand::Create(Box::new(spec.clone()))];
    if !spec.description.is_empty() {
        commands.push(ScCommand::Description { name: name.clone(), text: spec.description.clone() });
    }
    if !spec.recovery.actions.is_empty() {
        commands.push(ScCommand::Failure { name: name.clone(), actions: spec.recovery.clone() });
    }
    if spec.failure_flag {
        commands.push(ScCommand::FailureFlag { name: name.clone(), enabled: true });
    }
    let mut rendered = commands.iter().map(ScCommand::render).collect::<Result<Vec<_>, _>>()?;
    if !spec.environment.is_empty() {
        rendered.push(PowerShellScript::set_service_environment(&name, &spec.environment_entries()).render()?);
    }
    Ok(rendered)
}

/// `sc.exe config` for the changed options, then whichever of description, recovery and failure flag changed.
fn reconfigure_commands(change: &Reconfiguration) -> Result<Vec<RenderedCommand>, CommandError> {
    let name = &change.name;
    let mut commands = Vec::new();
    if !change.config.is_empty() {
        commands.push(ScCommand::Config { name: name.clone(), changes: change.config.clone() });
    }
    if let Some(text) = &change.description {
        commands.push(ScCommand::Description { name: name.clone(), text: text.clone() });
    }
    if let Some(actions) = &change.recovery {
        commands.push(ScCommand::Failure { name: name.clone(), actions: actions.clone() });
    }
    if let Some(enabled) = change.failure_flag {
        commands.push(ScCommand::FailureFlag { name: name.clone(), enabled });
    }
    let mut rendered = commands.iter().map(ScCommand::render).collect::<Result<Vec<_>, _>>()?;
    if let Some(entries) = &change.environment {
        rendered.push(PowerShellScript::set_service_environment(name, entries).render()?);
    }
    Ok(rendered)
}

/// Why no plan can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The desired services depend on each other in a circle.
    #[error("desired services form a dependency cycle: {}", cycle_text(.cycle))]
    DependencyCycle {
        /// The services of the cycle, the first repeated at the end (`a, b, a`).
        cycle: Vec<ServiceName>,
    },
    /// The services installed on the host depend on each other in a circle, so no stop order exists.
    #[error("installed services form a dependency cycle: {}", cycle_text(.cycle))]
    ObservedDependencyCycle {
        /// The services of the cycle, the first repeated at the end.
        cycle: Vec<ServiceName>,
    },
    /// The same service is desired twice.
    #[error("service {name} is listed twice in the desired state")]
    DuplicateService {
        /// The service.
        name: ServiceName,
    },
    /// A service is both desired and listed for removal.
    #[error("service {name} is both desired and listed for removal")]
    DesiredAndRemoved {
        /// The service.
        name: ServiceName,
    },
    /// A desired service depends on a service listed for removal.
    #[error("service {service} depends on {dependency}, which is listed for removal")]
    DependsOnRemoved {
        /// The dependent service.
        service: ServiceName,
        /// The dependency.
        dependency: ServiceName,
    },
    /// A desired service is marked for deletion on the host; it cannot be configured until it is gone (stop it and
    /// close all handles, or reboot).
    #[error("service {service} is marked for deletion on the host; wait until it is gone or reboot")]
    MarkedForDeletion {
        /// The service.
        service: ServiceName,
    },
}

fn cycle_text(cycle: &[ServiceName]) -> String {
    cycle.iter().map(ServiceName::as_str).collect::<Vec<_>>().join(" -> ")
}

/// The ordered steps that converge `observed` to `desired`.
///
/// ```
/// use wmco_windows_services::{
///     FailureActions, HostState, ObservedHost, ServiceCommand, ServiceName, ServiceSpec, StartType, Step, WinPath, plan,
/// };
/// let containerd = ServiceSpec {
///     name: ServiceName::new("containerd")?,
///     display_name: "containerd".into(),
///     description: "OpenShift managed containerd".into(),
///     command: ServiceCommand::new(WinPath::parse(r"C:\k\containerd\containerd.exe")?, ["--run-service"]),
///     start: StartType::Auto,
///     dependencies: vec![],
///     recovery: FailureActions::restart_after(300, &[]),
///     failure_flag: false,
///     extra_binaries: vec![],
///     environment: Default::default(),
/// };
/// let desired = HostState { services: vec![containerd.clone()], ..HostState::default() };
/// let steps = plan(&desired, &ObservedHost::default())?;
/// assert_eq!(steps, [Step::CreateService(Box::new(containerd.clone())), Step::StartService(containerd.name)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`PlanError`] for an inconsistent desired state (cycle, duplicate, desired-and-removed, dependency on a removed
/// service), a desired service marked for deletion, or an observed dependency cycle.
pub fn plan(desired: &HostState, observed: &ObservedHost) -> Result<Vec<Step>, PlanError> {
    let specs = desired_services(desired)?;
    let desired_names: BTreeSet<ServiceName> = specs.keys().cloned().collect();
    let desired_dependencies = |name: &ServiceName| -> Vec<ServiceName> {
        specs.get(name).map(|spec| spec.dependencies.clone()).unwrap_or_default()
    };
    let start_order =
        dependency_order(&desired_names, desired_dependencies).map_err(|cycle| PlanError::DependencyCycle { cycle })?;

    let mut steps: Vec<Step> = directory_step(desired, observed).into_iter().collect();
    steps.extend(restriction_step(desired, observed));
    let mut changed_files: BTreeSet<&WinPath> = desired
        .files
        .iter()
        .filter(|(path, digest)| observed.files.get(*path).and_then(Option::as_ref) != Some(*digest))
        .map(|(path, _)| path)
        .collect();
    let resets = directory_resets(desired, observed);
    for reset in &resets {
        if let Step::ResetDirectory { directory, .. } = reset {
            changed_files.extend(desired.files.keys().filter(|path| path.is_within(directory)));
        }
    }

    let mut reconfigurations = BTreeMap::new();
    let mut must_stop = BTreeSet::new();
    for (name, spec) in &specs {
        let Some(service) = observed.services.get(name) else { continue };
        if service.marked_for_deletion {
            return Err(PlanError::MarkedForDeletion { service: name.clone() });
        }
        let change = reconfiguration(spec, service);
        let binary_replaced = spec.binaries().any(|binary| changed_files.contains(binary));
        let restart = binary_replaced
            || change.as_ref().is_some_and(|change| change.config.needs_restart() || change.environment.is_some());
        if service.is_stoppable() && (restart || !spec.should_run()) {
            must_stop.insert(name.clone());
        }
        if let Some(change) = change {
            reconfigurations.insert(name.clone(), change);
        }
    }
    for name in &desired.removed_services {
        if observed.services.get(name).is_some_and(ObservedService::is_stoppable) {
            must_stop.insert(name.clone());
        }
    }
    add_running_dependents(&mut must_stop, observed);

    let observed_dependencies = |name: &ServiceName| -> Vec<ServiceName> {
        observed.services.get(name).map(|service| service.dependencies.clone()).unwrap_or_default()
    };
    let stop_order = dependency_order(&must_stop, observed_dependencies)
        .map_err(|cycle| PlanError::ObservedDependencyCycle { cycle })?;
    steps.extend(stop_order.iter().rev().cloned().map(Step::StopService));

    let to_delete: BTreeSet<ServiceName> = desired
        .removed_services
        .iter()
        .filter(|name| observed.services.get(*name).is_some_and(|service| !service.marked_for_deletion))
        .cloned()
        .collect();
    let delete_order = dependency_order(&to_delete, observed_dependencies)
        .map_err(|cycle| PlanError::ObservedDependencyCycle { cycle })?;
    steps.extend(delete_order.into_iter().rev().map(Step::DeleteService));

    steps.extend(resets);
    if !changed_files.is_empty() {
        steps.push(Step::ReplaceFiles(changed_files.into_iter().cloned().collect()));
    }
    if let Some(roots) = &desired.trusted_roots {
        let found = observed.trusted_roots.clone().unwrap_or_default();
        steps.extend(RootSync::between(roots, &found).map(|sync| Step::SyncRootCertificates(Box::new(sync))));
    }
    steps.extend(settings_steps(desired, observed));
    for name in &start_order {
        if !observed.services.contains_key(name) {
            steps.push(Step::CreateService(Box::new(specs[name].clone())));
        }
    }
    for name in &start_order {
        if let Some(change) = reconfigurations.remove(name) {
            steps.push(Step::ReconfigureService(Box::new(change)));
        }
    }
    for name in &start_order {
        let running_after_stops =
            observed.services.get(name).is_some_and(ObservedService::is_stoppable) && !must_stop.contains(name);
        if specs[name].should_run() && !running_after_stops {
            steps.push(Step::StartService(name.clone()));
        }
    }
    Ok(steps)
}

/// Indexes the desired services by name and checks the desired state's consistency.
fn desired_services(desired: &HostState) -> Result<BTreeMap<ServiceName, &ServiceSpec>, PlanError> {
    let mut specs = BTreeMap::new();
    for spec in &desired.services {
        if desired.removed_services.contains(&spec.name) {
            return Err(PlanError::DesiredAndRemoved { name: spec.name.clone() });
        }
        if let Some(dependency) =
            spec.dependencies.iter().find(|dependency| desired.removed_services.contains(*dependency))
        {
            return Err(PlanError::DependsOnRemoved { service: spec.name.clone(), dependency: dependency.clone() });
        }
        if specs.insert(spec.name.clone(), spec).is_some() {
            return Err(PlanError::DuplicateService { name: spec.name.clone() });
        }
    }
    Ok(specs)
}

/// A [`Step::ResetDirectory`] for each owned directory whose index the host holds with other content.
fn directory_resets(desired: &HostState, observed: &ObservedHost) -> Vec<Step> {
    desired
        .owned_directories
        .iter()
        .filter(|(_, index)| {
            let found = observed.files.get(*index).and_then(Option::as_ref);
            found.is_some() && found != desired.files.get(*index)
        })
        .map(|(directory, _)| Step::ResetDirectory {
            directory: directory.clone(),
            subdirectories: desired.directories.iter().filter(|path| path.is_within(directory)).cloned().collect(),
        })
        .collect()
}

/// The creation of the desired directories (private ones included) the host lacks, if any.
fn directory_step(desired: &HostState, observed: &ObservedHost) -> Option<Step> {
    let missing: Vec<WinPath> = desired
        .directories
        .union(&desired.private_directories)
        .filter(|path| observed.directories.get(*path) != Some(&true))
        .cloned()
        .collect();
    (!missing.is_empty()).then_some(Step::EnsureDirectories(missing))
}

/// The restriction of the private directories that are new (no ACL read) or let others in, and the reset of the
/// directories within them that let others in on their own (an explicit entry, or a private parent that is fine),
/// if any. A directory within a private one that the probe did not find is new, and one that lets others in only by
/// what it inherits follows its parent's restriction: both inherit from the private parent.
fn restriction_step(desired: &HostState, observed: &ObservedHost) -> Option<Step> {
    let mut reset = Vec::new();
    let mut protect = Vec::new();
    for directory in &desired.private_directories {
        match observed.directory_acls.get(directory).and_then(Option::as_deref) {
            Some(sddl) if grants_only_system_and_administrators(sddl) => {}
            Some(sddl) => {
                if has_explicit_entry_for_others(sddl) {
                    reset.push(directory.clone());
                }
                protect.push(directory.clone());
            }
            None => protect.push(directory.clone()),
        }
    }
    for (directory, sddl) in &observed.directory_acls {
        let within = desired.private_directories.iter().any(|root| directory.is_within(root));
        let parent_restricted_now = protect.iter().any(|root| directory.is_within(root));
        let loose_on_its_own = sddl.as_deref().is_some_and(|sddl| {
            !grants_only_system_and_administrators(sddl)
                && (has_explicit_entry_for_others(sddl) || !parent_restricted_now)
        });
        if within && desired.directories.contains(directory) && loose_on_its_own {
            reset.push(directory.clone());
        }
    }
    (!protect.is_empty() || !reset.is_empty()).then_some(Step::RestrictDirectories { reset, protect })
}

/// Steps for the machine environment, registry values, firewall rules, Defender exclusions (only while Defender
/// runs: its cmdlets fail otherwise, and a stopped Defender scans nothing) and the pruning of rotated files.
fn settings_steps(desired: &HostState, observed: &ObservedHost) -> Vec<Step> {
    let mut steps = Vec::new();
    let env_changes: BTreeMap<EnvVarName, Option<String>> = desired
        .machine_env
        .iter()
        .filter(|(name, value)| {
            let found = observed.machine_env.get(*name).map(|found| non_empty(found.as_deref()));
            found != Some(non_empty(value.as_deref()))
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if !env_changes.is_empty() {
        steps.push(Step::SetMachineEnv(env_changes));
    }
    for value in &desired.registry_values {
        let current = observed.registry_values.get(&(value.key.clone(), value.name.clone()));
        if current != Some(&Some(value.data.clone())) {
            steps.push(Step::SetRegistryValue(value.clone()));
        }
    }
    for rule in &desired.firewall_rules {
        match observed.firewall_rules.get(&rule.name) {
            Some(Some(found)) if firewall_rule_matches(rule, found) => {}
            Some(Some(_)) => {
                steps.push(Step::RemoveFirewallRule(rule.name.clone()));
                steps.push(Step::CreateFirewallRule(rule.clone()));
            }
            _ => steps.push(Step::CreateFirewallRule(rule.clone())),
        }
    }
    for name in &desired.removed_firewall_rules {
        if matches!(observed.firewall_rules.get(name), Some(Some(_))) {
            steps.push(Step::RemoveFirewallRule(name.clone()));
        }
    }
    if let Some(defender) = observed.defender.as_ref().filter(|defender| defender.running) {
        let missing = desired.defender_exclusions.iter().filter(|program| !defender.excludes(program));
        steps.extend(missing.cloned().map(Step::AddDefenderExclusion));
        let left = desired.removed_defender_exclusions.iter().filter(|program| defender.excludes(program));
        steps.extend(left.cloned().map(Step::RemoveDefenderExclusion));
    }
    let stale: Vec<WinPath> = desired
        .rotated_files
        .iter()
        .filter_map(|rotated| Some((rotated, observed.rotated_files.get(rotated)?)))
        .flat_map(|(rotated, names)| {
            rotated.stale(names).into_iter().filter_map(|name| rotated.directory.join(name).ok()).collect::<Vec<_>>()
        })
        .collect();
    if !stale.is_empty() {
        steps.push(Step::PruneFiles(stale));
    }
    steps
}

/// An environment value as Windows keeps it: setting an empty value removes the variable.
fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|text| !text.is_empty())
}

/// Whether an existing rule has the observable settings of `rule` (direction, enabled, allow).
fn firewall_rule_matches(rule: &FirewallRule, found: &ObservedFirewallRule) -> bool {
    let direction = match rule.direction {
        Direction::Inbound => 1,
        Direction::Outbound => 2,
    };
    found.direction == Some(direction)
        && found.enabled == Some(FIREWALL_ENABLED)
        && found.action == Some(FIREWALL_ALLOW)
}

/// What differs between a desired and an installed service, if anything.
fn reconfiguration(spec: &ServiceSpec, service: &ObservedService) -> Option<Reconfiguration> {
    let image_path = spec.command.image_path();
    let same_dependencies =
        spec.dependencies.iter().collect::<BTreeSet<_>>() == service.dependencies.iter().collect::<BTreeSet<_>>();
    let config = ConfigChanges {
        command: (service.image_path.as_deref() != Some(image_path.as_str())).then(|| spec.command.clone()),
        start: (service.start != Some(spec.start)).then_some(spec.start),
        dependencies: (!same_dependencies).then(|| spec.dependencies.clone()),
        display_name: (service.display_name.as_deref() != Some(spec.display_name.as_str()))
            .then(|| spec.display_name.clone()),
    };
    let description_differs = service.description.as_deref().unwrap_or("") != spec.description;
    let recovery_matches = match &service.recovery {
        Some(found) => *found == spec.recovery,
        None => spec.recovery.actions.is_empty(),
    };
    let environment = spec.environment_entries();
    let change = Reconfiguration {
        name: spec.name.clone(),
        config,
        description: description_differs.then(|| spec.description.clone()),
        recovery: (!recovery_matches).then(|| spec.recovery.clone()),
        failure_flag: (service.failure_flag != spec.failure_flag).then_some(spec.failure_flag),
        environment: (service.environment != environment).then_some(environment),
    };
    let unchanged = change.config.is_empty()
        && change.description.is_none()
        && change.recovery.is_none()
        && change.failure_flag.is_none()
        && change.environment.is_none();
    (!unchanged).then_some(change)
}

/// Adds every running service that depends (on the host) on a service in `must_stop`, transitively: the SCM
/// refuses to stop a service while dependents run.
fn add_running_dependents(must_stop: &mut BTreeSet<ServiceName>, observed: &ObservedHost) {
    loop {
        let dependents: Vec<ServiceName> = observed
            .services
            .iter()
            .filter(|(name, service)| {
                !must_stop.contains(*name)
                    && service.is_stoppable()
                    && service.dependencies.iter().any(|dependency| must_stop.contains(dependency))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if dependents.is_empty() {
            return;
        }
        must_stop.extend(dependents);
    }
}

/// Orders `nodes` so every node comes after its dependencies within `nodes` (dependencies outside `nodes` are
/// ignored); ties go by name. A cycle is returned as `Err` with its first node repeated at the end.
fn dependency_order(
    nodes: &BTreeSet<ServiceName>,
    dependencies: impl Fn(&ServiceName) -> Vec<ServiceName>,
) -> Result<Vec<ServiceName>, Vec<ServiceName>> {
    let edges: BTreeMap<&ServiceName, BTreeSet<ServiceName>> = nodes
        .iter()
        .map(|node| (node, dependencies(node).into_iter().filter(|dependency| nodes.contains(dependency)).collect()))
        .collect();
    if let Some(cycle) = find_cycle(&edges) {
        return Err(cycle);
    }
    let mut placed: BTreeSet<&ServiceName> = BTreeSet::new();
    let mut order = Vec::with_capacity(nodes.len());
    while order.len() < nodes.len() {
        let ready = edges
            .iter()
            .find(|(node, deps)| !placed.contains(*node) && deps.iter().all(|dependency| placed.contains(dependency)));
        let Some((node, _)) = ready else { break };
        placed.insert(node);
        order.push((*node).clone());
    }
    Ok(order)
}

/// The first dependency cycle found by a depth-first search in name order, as a closed path.
fn find_cycle(edges: &BTreeMap<&ServiceName, BTreeSet<ServiceName>>) -> Option<Vec<ServiceName>> {
    let mut finished: BTreeSet<&ServiceName> = BTreeSet::new();
    for &start in edges.keys() {
        let mut path: Vec<&ServiceName> = Vec::new();
        if let Some(cycle) = visit(start, edges, &mut path, &mut finished) {
            return Some(cycle);
        }
    }
    None
}

/// Depth-first visit for [`find_cycle`]; `path` holds the nodes being visited.
fn visit<'a>(
    node: &'a ServiceName,
    edges: &'a BTreeMap<&ServiceName, BTreeSet<ServiceName>>,
    path: &mut Vec<&'a ServiceName>,
    finished: &mut BTreeSet<&'a ServiceName>,
) -> Option<Vec<ServiceName>> {
    if finished.contains(node) {
        return None;
    }
    if let Some(position) = path.iter().position(|on_path| *on_path == node) {
        let mut cycle: Vec<ServiceName> = path[position..].iter().map(|name| (*name).clone()).collect();
        cycle.push(node.clone());
        return Some(cycle);
    }
    path.push(node);
    for dependency in edges.get(node).into_iter().flatten() {
        if let Some(cycle) = visit(dependency, edges, path, finished) {
            return Some(cycle);
        }
    }
    path.pop();
    finished.insert(node);
    None
}

#[cfg(test)]
mod tests;
