//! The service control manager of one host (windows-commands.md §1.2, §7): the service table (start type,
//! ImagePath, dependencies, failure actions, description), the STOPPED / START_PENDING / RUNNING / STOP_PENDING
//! state machine with configurable delays, deletion marks, dependency starts, and the Win32 error codes.
//!
//! Time is passed in (`now`), and pending states advance lazily when the table is read, so tests run with zero
//! delays and no background tasks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A Win32 error the SCM reports (its number is sc.exe's exit code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Win32 error {0}: {text}", text = win32_message(*.0))]
pub struct Win32Error(pub u32);

/// ERROR_FILE_NOT_FOUND: the service binary is missing.
pub const ERROR_FILE_NOT_FOUND: u32 = 2;
/// ERROR_DEPENDENT_SERVICES_RUNNING.
pub const ERROR_DEPENDENT_SERVICES_RUNNING: u32 = 1051;
/// ERROR_SERVICE_ALREADY_RUNNING.
pub const ERROR_SERVICE_ALREADY_RUNNING: u32 = 1056;
/// ERROR_SERVICE_DISABLED.
pub const ERROR_SERVICE_DISABLED: u32 = 1058;
/// ERROR_SERVICE_DOES_NOT_EXIST.
pub const ERROR_SERVICE_DOES_NOT_EXIST: u32 = 1060;
/// ERROR_SERVICE_CANNOT_ACCEPT_CTRL.
pub const ERROR_SERVICE_CANNOT_ACCEPT_CTRL: u32 = 1061;
/// ERROR_SERVICE_NOT_ACTIVE.
pub const ERROR_SERVICE_NOT_ACTIVE: u32 = 1062;
/// ERROR_SERVICE_DEPENDENCY_FAIL.
pub const ERROR_SERVICE_DEPENDENCY_FAIL: u32 = 1068;
/// ERROR_SERVICE_MARKED_FOR_DELETE.
pub const ERROR_SERVICE_MARKED_FOR_DELETE: u32 = 1072;
/// ERROR_SERVICE_EXISTS.
pub const ERROR_SERVICE_EXISTS: u32 = 1073;
/// ERROR_SERVICE_DEPENDENCY_DELETED.
pub const ERROR_SERVICE_DEPENDENCY_DELETED: u32 = 1075;
/// ERROR_PROCESS_ABORTED: the exit code of a service process that died.
pub const ERROR_PROCESS_ABORTED: u32 = 1067;
/// ERROR_SERVICE_NEVER_STARTED.
pub const ERROR_SERVICE_NEVER_STARTED: u32 = 1077;
/// ERROR_INVALID_COMMAND_LINE: sc.exe's usage exit code.
pub const ERROR_INVALID_COMMAND_LINE: u32 = 1639;

/// The standard system message of a Win32 error number.
pub fn win32_message(code: u32) -> &'static str {
    match code {
        2 => "The system cannot find the file specified.",
        5 => "Access is denied.",
        87 => "The parameter is incorrect.",
        1051 => "A stop control has been sent to a service that other running services are dependent on.",
        1056 => "An instance of the service is already running.",
        1058 => {
            "The service cannot be started, either because it is disabled or because it has no enabled devices \
             associated with it."
        }
        1060 => "The specified service does not exist as an installed service.",
        1061 => "The service cannot accept control messages at this time.",
        1062 => "The service has not been started.",
        1068 => "The dependency service or group failed to start.",
        1072 => "The specified service has been marked for deletion.",
        1073 => "The specified service already exists.",
        1075 => "The dependency service does not exist or has been marked for deletion.",
        1639 => "Invalid command line argument. Consult the Windows Installer SDK for detailed command line help.",
        _ => "Unknown error.",
    }
}

/// A service's current state (the numbers are the SERVICE_* state codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum State {
    /// 1
    Stopped,
    /// 2
    StartPending,
    /// 3
    StopPending,
    /// 4
    Running,
}

impl State {
    /// The SERVICE_* code.
    pub fn code(self) -> u32 {
        match self {
            State::Stopped => 1,
            State::StartPending => 2,
            State::StopPending => 3,
            State::Running => 4,
        }
    }

    /// The sc.exe name (`START_PENDING`).
    pub fn sc_name(self) -> &'static str {
        match self {
            State::Stopped => "STOPPED",
            State::StartPending => "START_PENDING",
            State::StopPending => "STOP_PENDING",
            State::Running => "RUNNING",
        }
    }

    /// The Win32_Service `State` text (`Start Pending`).
    pub fn cim_name(self) -> &'static str {
        match self {
            State::Stopped => "Stopped",
            State::StartPending => "Start Pending",
            State::StopPending => "Stop Pending",
            State::Running => "Running",
        }
    }
}

/// A service's start type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StartType {
    /// 0
    Boot,
    /// 1
    System,
    /// 2 (optionally delayed)
    Auto,
    /// 3
    Demand,
    /// 4
    Disabled,
}

impl StartType {
    /// The SERVICE_*_START code.
    pub fn code(self) -> u32 {
        match self {
            StartType::Boot => 0,
            StartType::System => 1,
            StartType::Auto => 2,
            StartType::Demand => 3,
            StartType::Disabled => 4,
        }
    }
}

/// One failure action: `restart`, `run` or `reboot` after a delay in milliseconds (`none` is kind 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailureAction {
    /// SC_ACTION_TYPE: 0 none, 1 restart, 2 reboot, 3 run.
    pub kind: u32,
    /// Delay in milliseconds.
    pub delay_ms: u32,
}

/// The failure actions of a service.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailureActions {
    /// Failure-free seconds after which the counter resets (`u32::MAX` for INFINITE).
    pub reset_seconds: u32,
    /// The actions in order.
    pub actions: Vec<FailureAction>,
}

impl FailureActions {
    /// The SERVICE_FAILURE_ACTIONS registry layout (`FailureActions` REG_BINARY).
    pub fn registry_bytes(&self) -> Vec<u8> {
        let count = u32::try_from(self.actions.len()).unwrap_or(u32::MAX);
        let mut words = vec![self.reset_seconds, 0, 0, count, if count == 0 { 0 } else { 20 }];
        for action in &self.actions {
            words.push(action.kind);
            words.push(action.delay_ms);
        }
        words.iter().flat_map(|word| word.to_le_bytes()).collect()
    }
}

/// One service's configuration and status.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Service {
    /// The name as created.
    pub name: String,
    /// DisplayName.
    pub display_name: String,
    /// Description (`None` until set).
    pub description: Option<String>,
    /// ImagePath, verbatim.
    pub image_path: String,
    /// Start type.
    pub start_type: StartType,
    /// Delayed auto start.
    pub delayed: bool,
    /// SERVICE_WIN32_OWN_PROCESS (0x10) etc.
    pub service_type: u32,
    /// ERROR_CONTROL (1 normal).
    pub error_control: u32,
    /// ObjectName.
    pub account: String,
    /// DependOnService.
    pub dependencies: Vec<String>,
    /// Failure actions, when set.
    pub failure_actions: Option<FailureActions>,
    /// failureflag.
    pub failure_flag: bool,
    /// Marked for deletion.
    pub marked_for_deletion: bool,
    /// Current state.
    pub state: State,
    /// WIN32_EXIT_CODE.
    pub exit_code: u32,
    /// Process id while not stopped (0 when stopped).
    pub pid: u32,
    /// The environment its latest process started with (empty before the first start).
    pub environment: BTreeMap<String, String>,
    /// When the pending state ends.
    #[serde(skip)]
    pending_until: Option<Instant>,
    /// The start will end in the process exiting (a refusal) instead of RUNNING.
    #[serde(skip)]
    start_fails: bool,
    /// Crashes counted for the failure actions.
    pub failure_count: u32,
    /// The last crash.
    #[serde(skip)]
    last_failure: Option<Instant>,
    /// When a `restart` failure action starts the service again.
    #[serde(skip)]
    restart_at: Option<Instant>,
}

impl Service {
    /// The process died unexpectedly: count the failure and schedule the failure action (only `restart` is
    /// carried out; `run` and `reboot` are not modelled).
    fn crashed(&mut self, now: Instant) {
        let Some(actions) = &self.failure_actions else { return };
        let reset = Duration::from_secs(u64::from(actions.reset_seconds));
        if actions.reset_seconds != u32::MAX && self.last_failure.is_some_and(|at| now.duration_since(at) > reset) {
            self.failure_count = 0;
        }
        self.last_failure = Some(now);
        let index = (self.failure_count as usize).min(actions.actions.len().saturating_sub(1));
        self.failure_count += 1;
        if let Some(action) = actions.actions.get(index).filter(|action| action.kind == 1) {
            self.restart_at = Some(now + Duration::from_millis(u64::from(action.delay_ms)));
        }
    }
}

/// What creating or reconfiguring a service sets (`None`: leave as is / default).
#[derive(Clone, Debug, Default)]
pub struct ServiceConfig {
    /// ImagePath.
    pub image_path: Option<String>,
    /// Start type and the delayed flag.
    pub start: Option<(StartType, bool)>,
    /// Dependencies.
    pub dependencies: Option<Vec<String>>,
    /// DisplayName.
    pub display_name: Option<String>,
    /// Account.
    pub account: Option<String>,
    /// Service type.
    pub service_type: Option<u32>,
    /// Error control.
    pub error_control: Option<u32>,
}

/// How a service's process reacts to being started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// The process runs.
    Runs,
    /// The executable does not exist: StartService fails with 2.
    BinaryMissing,
    /// The process starts, then exits with the reason (logged by the caller).
    Exits(String),
}

/// State-transition delays.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// START_PENDING → RUNNING.
    pub start: Duration,
    /// STOP_PENDING → STOPPED.
    pub stop: Duration,
}

/// The service table.
#[derive(Debug)]
pub struct ServiceManager {
    services: BTreeMap<String, Service>,
    next_pid: u32,
    /// The delays of state transitions.
    pub timing: Timing,
}

/// A service whose start the SCM just began (the caller runs its process model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The service name.
    pub name: String,
    /// Its ImagePath.
    pub image_path: String,
}

impl ServiceManager {
    /// An empty table.
    pub fn new(timing: Timing) -> ServiceManager {
        ServiceManager { services: BTreeMap::new(), next_pid: 1000, timing }
    }

    /// Advances pending states whose delay has passed; returns the services that reached STOPPED from a pending
    /// state (the caller stops their process models).
    pub fn advance(&mut self, now: Instant) -> Vec<String> {
        let mut stopped = Vec::new();
        for service in self.services.values_mut() {
            if service.pending_until.is_some_and(|until| until <= now) {
                service.pending_until = None;
                match service.state {
                    State::StartPending if service.start_fails => {
                        service.state = State::Stopped;
                        service.exit_code = ERROR_PROCESS_ABORTED;
                        service.pid = 0;
                        service.crashed(now);
                        stopped.push(service.name.clone());
                    }
                    State::StartPending => service.state = State::Running,
                    State::StopPending => {
                        service.state = State::Stopped;
                        service.exit_code = 0;
                        service.pid = 0;
                        stopped.push(service.name.clone());
                    }
                    State::Stopped | State::Running => {}
                }
            }
        }
        self.services.retain(|_, service| !(service.marked_for_deletion && service.state == State::Stopped));
        stopped
    }

    /// A service by name (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&Service> {
        self.services.get(&name.to_lowercase())
    }

    /// Records the environment the process of service `name` started with.
    pub fn set_process_environment(&mut self, name: &str, environment: BTreeMap<String, String>) {
        if let Ok(service) = self.existing(name) {
            service.environment = environment;
        }
    }

    /// All services, by lower-cased name.
    pub fn services(&self) -> impl Iterator<Item = &Service> {
        self.services.values()
    }

    fn existing(&mut self, name: &str) -> Result<&mut Service, Win32Error> {
        self.services.get_mut(&name.to_lowercase()).ok_or(Win32Error(ERROR_SERVICE_DOES_NOT_EXIST))
    }

    /// CreateService: a new STOPPED service (exit code 1077).
    ///
    /// # Errors
    /// 1073 if it exists, 1072 if it exists marked for deletion, 87 without an ImagePath.
    pub fn create(&mut self, name: &str, config: ServiceConfig) -> Result<(), Win32Error> {
        if let Some(existing) = self.get(name) {
            return Err(Win32Error(if existing.marked_for_deletion {
                ERROR_SERVICE_MARKED_FOR_DELETE
            } else {
                ERROR_SERVICE_EXISTS
            }));
        }
        let image_path = config.image_path.ok_or(Win32Error(87))?;
        let (start_type, delayed) = config.start.unwrap_or((StartType::Demand, false));
        let service = Service {
            name: name.to_owned(),
            display_name: config.display_name.unwrap_or_else(|| name.to_owned()),
            description: None,
            image_path,
            start_type,
            delayed,
            service_type: config.service_type.unwrap_or(0x10),
            error_control: config.error_control.unwrap_or(1),
            account: config.account.unwrap_or_else(|| "LocalSystem".to_owned()),
            dependencies: config.dependencies.unwrap_or_default(),
            failure_actions: None,
            failure_flag: false,
            marked_for_deletion: false,
            state: State::Stopped,
            exit_code: ERROR_SERVICE_NEVER_STARTED,
            pid: 0,
            environment: BTreeMap::new(),
            pending_until: None,
            start_fails: false,
            failure_count: 0,
            last_failure: None,
            restart_at: None,
        };
        self.services.insert(name.to_lowercase(), service);
        Ok(())
    }

    /// ChangeServiceConfig: only the given fields change.
    ///
    /// # Errors
    /// 1060 if missing, 1072 if marked for deletion.
    pub fn configure(&mut self, name: &str, config: ServiceConfig) -> Result<(), Win32Error> {
        let service = self.existing(name)?;
        if service.marked_for_deletion {
            return Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE));
        }
        if let Some(image_path) = config.image_path {
            service.image_path = image_path;
        }
        if let Some((start_type, delayed)) = config.start {
            service.start_type = start_type;
            service.delayed = delayed;
        }
        if let Some(dependencies) = config.dependencies {
            service.dependencies = dependencies;
        }
        if let Some(display_name) = config.display_name {
            service.display_name = display_name;
        }
        if let Some(account) = config.account {
            service.account = account;
        }
        if let Some(service_type) = config.service_type {
            service.service_type = service_type;
        }
        if let Some(error_control) = config.error_control {
            service.error_control = error_control;
        }
        Ok(())
    }

    /// ChangeServiceConfig2 (description).
    ///
    /// # Errors
    /// 1060 if missing.
    pub fn set_description(&mut self, name: &str, description: &str) -> Result<(), Win32Error> {
        self.existing(name)?.description = Some(description.to_owned());
        Ok(())
    }

    /// ChangeServiceConfig2 (failure actions).
    ///
    /// # Errors
    /// 1060 if missing.
    pub fn set_failure_actions(&mut self, name: &str, actions: FailureActions) -> Result<(), Win32Error> {
        self.existing(name)?.failure_actions = Some(actions);
        Ok(())
    }

    /// ChangeServiceConfig2 (failure-actions flag).
    ///
    /// # Errors
    /// 1060 if missing.
    pub fn set_failure_flag(&mut self, name: &str, flag: bool) -> Result<(), Win32Error> {
        self.existing(name)?.failure_flag = flag;
        Ok(())
    }

    /// DeleteService: marks the service; it disappears once STOPPED.
    ///
    /// # Errors
    /// 1060 if missing, 1072 if already marked.
    pub fn delete(&mut self, name: &str) -> Result<(), Win32Error> {
        let service = self.existing(name)?;
        if service.marked_for_deletion {
            return Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE));
        }
        service.marked_for_deletion = true;
        service.start_type = StartType::Disabled;
        let stopped = service.state == State::Stopped;
        if stopped {
            self.services.remove(&name.to_lowercase());
        }
        Ok(())
    }

    /// StartService: starts the service's dependencies first (recursively), then the service. `launch` decides
    /// each process's fate. Returns the services whose processes started, dependencies first.
    ///
    /// # Errors
    /// 1060 missing, 1056 running, 1058 disabled, 1072 marked, 1075 a dependency missing or marked, 1068 a
    /// dependency failed to start, 2 the binary is missing.
    pub fn start(
        &mut self,
        name: &str,
        now: Instant,
        launch: &mut dyn FnMut(&Service) -> Launch,
    ) -> Result<Vec<Started>, Win32Error> {
        let mut started = Vec::new();
        self.start_inner(name, now, launch, &mut started, 0)?;
        Ok(started)
    }

    fn start_inner(
        &mut self,
        name: &str,
        now: Instant,
        launch: &mut dyn FnMut(&Service) -> Launch,
        started: &mut Vec<Started>,
        depth: usize,
    ) -> Result<(), Win32Error> {
        let service = self.get(name).ok_or(Win32Error(ERROR_SERVICE_DOES_NOT_EXIST))?.clone();
        if service.marked_for_deletion {
            return Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE));
        }
        if service.state != State::Stopped {
            return Err(Win32Error(ERROR_SERVICE_ALREADY_RUNNING));
        }
        if service.start_type == StartType::Disabled {
            return Err(Win32Error(ERROR_SERVICE_DISABLED));
        }
        for dependency in &service.dependencies {
            match self.get(dependency) {
                None => return Err(Win32Error(ERROR_SERVICE_DEPENDENCY_DELETED)),
                Some(found) if found.marked_for_deletion => {
                    return Err(Win32Error(ERROR_SERVICE_DEPENDENCY_DELETED));
                }
                Some(found) if found.state != State::Stopped => {}
                Some(_) if depth > 16 => return Err(Win32Error(ERROR_SERVICE_DEPENDENCY_FAIL)),
                Some(_) => self
                    .start_inner(dependency, now, launch, started, depth + 1)
                    .map_err(|_| Win32Error(ERROR_SERVICE_DEPENDENCY_FAIL))?,
            }
        }
        let outcome = launch(&service);
        if outcome == Launch::BinaryMissing {
            return Err(Win32Error(ERROR_FILE_NOT_FOUND));
        }
        let pid = self.next_pid;
        self.next_pid += 4;
        let delay = self.timing.start;
        let entry = self.existing(name)?;
        entry.state = State::StartPending;
        entry.exit_code = 0;
        entry.pid = pid;
        entry.pending_until = Some(now + delay);
        entry.start_fails = matches!(outcome, Launch::Exits(_));
        started.push(Started { name: entry.name.clone(), image_path: entry.image_path.clone() });
        Ok(())
    }

    /// ControlService(STOP).
    ///
    /// # Errors
    /// 1060 missing, 1062 not running, 1061 pending, 1051 running dependents.
    pub fn stop(&mut self, name: &str, now: Instant) -> Result<(), Win32Error> {
        let key = name.to_lowercase();
        let service = self.get(name).ok_or(Win32Error(ERROR_SERVICE_DOES_NOT_EXIST))?;
        match service.state {
            State::Stopped => return Err(Win32Error(ERROR_SERVICE_NOT_ACTIVE)),
            State::StartPending | State::StopPending => return Err(Win32Error(ERROR_SERVICE_CANNOT_ACCEPT_CTRL)),
            State::Running => {}
        }
        let has_running_dependents = self.services.values().any(|other| {
            other.state != State::Stopped
                && other.dependencies.iter().any(|dependency| dependency.to_lowercase() == key)
        });
        if has_running_dependents {
            return Err(Win32Error(ERROR_DEPENDENT_SERVICES_RUNNING));
        }
        let delay = self.timing.stop;
        let entry = self.existing(name)?;
        entry.state = State::StopPending;
        entry.pending_until = Some(now + delay);
        Ok(())
    }

    /// Services whose `restart` failure action is due (they are started by the caller).
    pub fn due_restarts(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        for service in self.services.values_mut() {
            if service.restart_at.is_some_and(|at| at <= now) {
                service.restart_at = None;
                if service.state == State::Stopped && !service.marked_for_deletion {
                    due.push(service.name.clone());
                }
            }
        }
        due
    }

    /// The names of services depending on `name` (DependentServices).
    pub fn dependents(&self, name: &str) -> Vec<String> {
        let key = name.to_lowercase();
        self.services
            .values()
            .filter(|service| service.dependencies.iter().any(|dependency| dependency.to_lowercase() == key))
            .map(|service| service.name.clone())
            .collect()
    }

    /// A process of a running service died (killed): STOPPED with 1067 at once, failure actions scheduled.
    pub fn kill(&mut self, name: &str, now: Instant) {
        if let Ok(service) = self.existing(name) {
            service.state = State::Stopped;
            service.exit_code = ERROR_PROCESS_ABORTED;
            service.pid = 0;
            service.pending_until = None;
            service.crashed(now);
        }
        self.services.retain(|_, service| !(service.marked_for_deletion && service.state == State::Stopped));
    }

    /// A reboot: every process ends, services marked for deletion disappear, and automatic services start again
    /// (in dependency order). Returns the started services.
    pub fn reboot(&mut self, now: Instant, launch: &mut dyn FnMut(&Service) -> Launch) -> Vec<Started> {
        self.services.retain(|_, service| !service.marked_for_deletion);
        for service in self.services.values_mut() {
            service.state = State::Stopped;
            service.exit_code = ERROR_SERVICE_NEVER_STARTED;
            service.pid = 0;
            service.pending_until = None;
            service.restart_at = None;
            service.failure_count = 0;
        }
        let automatic: Vec<String> = self
            .services
            .values()
            .filter(|service| service.start_type == StartType::Auto)
            .map(|service| service.name.clone())
            .collect();
        let mut started = Vec::new();
        for name in automatic {
            if self.get(&name).is_some_and(|service| service.state == State::Stopped) {
                let _ = self.start_inner(&name, now, launch, &mut started, 0);
            }
        }
        started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(image: &str, dependencies: &[&str]) -> ServiceConfig {
        ServiceConfig {
            image_path: Some(image.to_owned()),
            dependencies: Some(dependencies.iter().map(|d| (*d).to_owned()).collect()),
            ..ServiceConfig::default()
        }
    }

    fn manager() -> ServiceManager {
        ServiceManager::new(Timing { start: Duration::from_secs(1), stop: Duration::from_secs(1) })
    }

    #[test]
    fn start_passes_through_start_pending_and_starts_dependencies() {
        let mut scm = manager();
        scm.create("containerd", config("C:\\k\\containerd.exe", &[])).unwrap();
        scm.create("kubelet", config("C:\\k\\kubelet.exe", &["containerd"])).unwrap();
        assert_eq!(scm.get("KUBELET").unwrap().exit_code, ERROR_SERVICE_NEVER_STARTED);
        let now = Instant::now();
        let started = scm.start("kubelet", now, &mut |_| Launch::Runs).unwrap();
        assert_eq!(started.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["containerd", "kubelet"]);
        assert_eq!(scm.get("kubelet").unwrap().state, State::StartPending);
        assert_eq!(scm.stop("kubelet", now), Err(Win32Error(ERROR_SERVICE_CANNOT_ACCEPT_CTRL)));
        scm.advance(now + Duration::from_secs(1));
        assert_eq!(scm.get("kubelet").unwrap().state, State::Running);
        assert_eq!(scm.start("kubelet", now, &mut |_| Launch::Runs), Err(Win32Error(ERROR_SERVICE_ALREADY_RUNNING)));
        assert_eq!(scm.stop("containerd", now), Err(Win32Error(ERROR_DEPENDENT_SERVICES_RUNNING)));
        scm.stop("kubelet", now).unwrap();
        assert_eq!(scm.get("kubelet").unwrap().state, State::StopPending);
        assert_eq!(scm.advance(now + Duration::from_secs(2)), vec!["kubelet".to_owned()]);
        assert_eq!(scm.stop("kubelet", now), Err(Win32Error(ERROR_SERVICE_NOT_ACTIVE)));
        scm.stop("containerd", now).unwrap();
    }

    #[test]
    fn every_error_code() {
        let mut scm = manager();
        let now = Instant::now();
        assert_eq!(scm.start("x", now, &mut |_| Launch::Runs), Err(Win32Error(ERROR_SERVICE_DOES_NOT_EXIST)));
        scm.create("a", config("a.exe", &["missing"])).unwrap();
        assert_eq!(scm.create("A", config("a.exe", &[])), Err(Win32Error(ERROR_SERVICE_EXISTS)));
        assert_eq!(scm.start("a", now, &mut |_| Launch::Runs), Err(Win32Error(ERROR_SERVICE_DEPENDENCY_DELETED)));
        scm.create("dis", ServiceConfig { start: Some((StartType::Disabled, false)), ..config("d.exe", &[]) }).unwrap();
        assert_eq!(scm.start("dis", now, &mut |_| Launch::Runs), Err(Win32Error(ERROR_SERVICE_DISABLED)));
        scm.configure("a", config("a.exe", &["dis"])).unwrap();
        assert_eq!(scm.start("a", now, &mut |_| Launch::Runs), Err(Win32Error(ERROR_SERVICE_DEPENDENCY_FAIL)));
        scm.create("b", config("b.exe", &[])).unwrap();
        assert_eq!(scm.start("b", now, &mut |_| Launch::BinaryMissing), Err(Win32Error(ERROR_FILE_NOT_FOUND)));
        scm.start("b", now, &mut |_| Launch::Runs).unwrap();
        scm.advance(now + Duration::from_secs(1));
        scm.delete("b").unwrap();
        assert_eq!(scm.delete("b"), Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE)));
        assert_eq!(scm.create("b", config("b.exe", &[])), Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE)));
        assert_eq!(scm.configure("b", config("b.exe", &[])), Err(Win32Error(ERROR_SERVICE_MARKED_FOR_DELETE)));
        scm.stop("b", now).unwrap();
        scm.advance(now + Duration::from_secs(3));
        assert!(scm.get("b").is_none());
        assert_eq!(scm.delete("b"), Err(Win32Error(ERROR_SERVICE_DOES_NOT_EXIST)));
    }

    #[test]
    fn a_refused_launch_ends_stopped_with_1067_and_reboot_restarts_automatic_services() {
        let mut scm = manager();
        let now = Instant::now();
        scm.create("p", config("p.exe", &[])).unwrap();
        scm.start("p", now, &mut |_| Launch::Exits("no config".into())).unwrap();
        assert_eq!(scm.advance(now + Duration::from_secs(1)), vec!["p".to_owned()]);
        assert_eq!((scm.get("p").unwrap().state, scm.get("p").unwrap().exit_code), (State::Stopped, 1067));
        scm.create("auto", ServiceConfig { start: Some((StartType::Auto, false)), ..config("x.exe", &[]) }).unwrap();
        let started = scm.reboot(now, &mut |_| Launch::Runs);
        assert_eq!(started, vec![Started { name: "auto".into(), image_path: "x.exe".into() }]);
        assert_eq!(scm.get("p").unwrap().exit_code, ERROR_SERVICE_NEVER_STARTED);
    }

    #[test]
    fn crashes_schedule_restart_failure_actions_in_order() {
        let mut scm = manager();
        let now = Instant::now();
        scm.create("p", config("p.exe", &[])).unwrap();
        let actions = FailureActions {
            reset_seconds: 60,
            actions: vec![FailureAction { kind: 1, delay_ms: 1000 }, FailureAction { kind: 0, delay_ms: 0 }],
        };
        scm.set_failure_actions("p", actions).unwrap();
        scm.start("p", now, &mut |_| Launch::Runs).unwrap();
        scm.advance(now + Duration::from_secs(1));
        scm.kill("p", now + Duration::from_secs(1));
        assert!(scm.due_restarts(now + Duration::from_millis(1999)).is_empty());
        assert_eq!(scm.due_restarts(now + Duration::from_secs(2)), vec!["p".to_owned()]);
        scm.start("p", now + Duration::from_secs(2), &mut |_| Launch::Runs).unwrap();
        scm.advance(now + Duration::from_secs(3));
        scm.kill("p", now + Duration::from_secs(3));
        assert!(scm.due_restarts(now + Duration::from_secs(60)).is_empty(), "the second action is none");
        assert_eq!(scm.get("p").unwrap().failure_count, 2);
    }

    #[test]
    fn failure_actions_use_the_registry_layout() {
        let actions = FailureActions { reset_seconds: 86400, actions: vec![FailureAction { kind: 1, delay_ms: 5000 }] };
        let bytes = actions.registry_bytes();
        assert_eq!(bytes.len(), 28);
        assert_eq!(&bytes[..4], &86400u32.to_le_bytes());
        assert_eq!(&bytes[20..], &[1, 0, 0, 0, 0x88, 0x13, 0, 0]);
    }
}
