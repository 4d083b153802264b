//! Preflight: what a host must be before anything is installed on it, checked from the facts the identity command
//! reads in the same round trip ([`HostFacts`]): a supported Windows Server build that the cluster's hybrid overlay
//! works with (Windows Server 2022 from revision 20348.681, KB5012637, on; Windows Server 2019 only with the default
//! VXLAN port), the `Containers` feature enabled or installable (the configuration installs it and reboots the host
//! once, [`containers_to_enable`](crate::containers_to_enable)), room on `C:` for the payload, OpenSSH's default
//! shell cmd.exe or PowerShell, and no Docker service (a containerd service already there is taken over: the
//! operator's configuration replaces its own). [`preflight`] returns every failing check, each naming what was found
//! and what to do (windows-commands.md §4.1 for the facts).
//!
//! The host name is checked by [`crate::HostIdentity::parse`] (it must give an RFC 1123 Node name); [`check_host`]
//! (what `wmco preflight` runs from an admin's machine) reports it as the `Identity` check next to the others.

use wmco_vocabulary::Platform;

use crate::error::{FlowError, FlowStep};
use crate::facts::{FeatureState, HostFacts, PreflightCheck, PreflightFailure, unsupported_shell};
use crate::identity::{HostIdentity, IdentityError, NodeNaming};
use crate::script;
use crate::session::HostSession;

/// The Windows Server builds a node may run: 2019, 2022 and 2025 (`CurrentBuildNumber`).
pub const SUPPORTED_BUILDS: [(u32, &str); 3] =
    [(17_763, "Windows Server 2019"), (20_348, "Windows Server 2022"), (26_100, "Windows Server 2025")];

/// Windows Server 2019's build, whose overlay networking has no custom VXLAN port (the Go operator's
/// wmco-prerequisites.md, "Custom VXLAN port": Windows Server 2022 and 2025 only; its issues #340 and #451).
pub const SERVER_2019_BUILD: u32 = 17_763;

/// Windows Server 2022's build.
pub const SERVER_2022_BUILD: u32 = 20_348;

/// The first update revision (`UBR`) of Windows Server 2022 with KB5012637 (OS build 20348.681, April 2022), the
/// container networking fix the Go operator's wmco-prerequisites.md requires of every Windows Server 2022 image.
pub const KB5012637_UBR: u32 = 681;

/// The hybrid overlay's VXLAN port when `hybridOverlayVXLANPort` is unset: another value is a custom port.
pub const DEFAULT_VXLAN_PORT: u16 = 4789;

/// Free space asked on `C:` beyond the payload's own bytes: the services' logs and the first container images.
pub const DISK_HEADROOM_BYTES: u64 = 2 << 30;

/// The failing checks of a host with `facts`, which is to receive `payload_bytes`, on a cluster whose hybrid overlay
/// uses `vxlan_port` (`hybridOverlayVXLANPort`, `None` when unset) (empty: the host passes).
///
/// ```
/// use wmco_node_config::{HostFacts, PreflightCheck, preflight};
/// let old = HostFacts {
///     build: Some(14393),
///     free_bytes: Some(50 << 30),
///     containers: Some(wmco_node_config::FeatureState::Enabled),
///     ..HostFacts::default()
/// };
/// let failures = preflight(&old, 400 << 20, None);
/// assert_eq!(failures.len(), 1);
/// assert_eq!(failures[0].check, PreflightCheck::WindowsBuild);
/// assert!(failures[0].message.contains("14393"));
/// ```
pub fn preflight(facts: &HostFacts, payload_bytes: u64, vxlan_port: Option<u16>) -> Vec<PreflightFailure> {
    let mut failures: Vec<PreflightFailure> = build_failure(facts, vxlan_port).into_iter().collect();
    match &facts.containers {
        Some(
            FeatureState::Enabled
            | FeatureState::Disabled
            | FeatureState::DisabledWithPayloadRemoved
            | FeatureState::EnablePending,
        ) => {}
        Some(FeatureState::DisablePending) => failures.push(PreflightFailure {
            check: PreflightCheck::ContainersFeature,
            message: "the Windows feature Containers is being removed (DisablePending): containerd cannot run a \
                      container without it; restart the host to finish the removal, and the operator installs it again"
                .to_owned(),
        }),
        Some(FeatureState::Other(state)) => failures.push(PreflightFailure {
            check: PreflightCheck::ContainersFeature,
            message: format!(
                "the Windows feature Containers is in state {state}, which the operator does not handle: enable it \
                 with `Install-WindowsFeature -Name Containers` and restart the host"
            ),
        }),
        None => failures.push(PreflightFailure {
            check: PreflightCheck::ContainersFeature,
            message: "the host did not report the state of the Windows feature Containers".to_owned(),
        }),
    }
    let needed = payload_bytes.saturating_add(DISK_HEADROOM_BYTES);
    match facts.free_bytes {
        Some(free) if free >= needed => {}
        Some(free) => failures.push(PreflightFailure {
            check: PreflightCheck::DiskSpace,
            message: format!(
                "C: has {} free; the payload needs {} and {} more for logs and images: free {} on C:",
                mib(free),
                mib(payload_bytes),
                mib(DISK_HEADROOM_BYTES),
                mib(needed - free)
            ),
        }),
        None => failures.push(PreflightFailure {
            check: PreflightCheck::DiskSpace,
            message: "the host did not report the free space of C: (Win32_LogicalDisk)".to_owned(),
        }),
    }
    if let Some(docker) = &facts.docker_service {
        failures.push(PreflightFailure {
            check: PreflightCheck::ContainerRuntime,
            message: format!(
                "Docker is installed (service docker, {docker}); the node runs the payload's containerd, which does \
                 not share a host with Docker: uninstall Docker"
            ),
        });
    }
    if let Some(shell) = &facts.default_shell
        && wmco_windows_services::DefaultShell::from_registry(Some(shell)).is_none()
    {
        failures.push(unsupported_shell(shell));
    }
    failures
}

/// The failed [`PreflightCheck::WindowsBuild`] of a host with `facts` on a cluster whose VXLAN port is `vxlan_port`,
/// if it fails: a build not in [`SUPPORTED_BUILDS`], Windows Server 2022 before KB5012637, or Windows Server 2019
/// with a custom VXLAN port.
fn build_failure(facts: &HostFacts, vxlan_port: Option<u16>) -> Option<PreflightFailure> {
    let failure = |message: String| Some(PreflightFailure { check: PreflightCheck::WindowsBuild, message });
    let supported = SUPPORTED_BUILDS.map(|(build, name)| format!("{build} ({name})")).join(", ");
    let Some(build) = facts.build else {
        return failure(format!(
            "the host did not report its Windows build (CurrentBuildNumber); supported: {supported}"
        ));
    };
    if !SUPPORTED_BUILDS.iter().any(|(supported, _)| *supported == build) {
        return failure(format!(
            "Windows build {build} is not supported (supported: {supported}); install a supported Windows Server"
        ));
    }
    let custom_port = vxlan_port.filter(|port| *port != DEFAULT_VXLAN_PORT);
    match (build, facts.ubr, custom_port) {
        (SERVER_2019_BUILD, _, Some(port)) => failure(format!(
            "Windows Server 2019 (build {build}) does not support the hybrid overlay's custom VXLAN port {port} of \
             this cluster (hybridOverlayVXLANPort of networks.operator.openshift.io cluster): use Windows Server \
             2022 or remove the custom VXLAN port"
        )),
        (SERVER_2022_BUILD, Some(ubr), _) if ubr < KB5012637_UBR => failure(format!(
            "Windows Server 2022 build {build}.{ubr} lacks KB5012637 (build {build}.{KB5012637_UBR}), the container \
             networking fix the node needs: install KB5012637 or a later cumulative update"
        )),
        (SERVER_2022_BUILD, None, _) => failure(format!(
            "the host did not report the update revision of its Windows Server 2022 build {build} (UBR), so \
             KB5012637 (build {build}.{KB5012637_UBR}) cannot be confirmed: install KB5012637 or a later cumulative \
             update"
        )),
        _ => None,
    }
}

/// Every check, in the order they are reported.
pub const CHECKS: [PreflightCheck; 6] = [
    PreflightCheck::Identity,
    PreflightCheck::WindowsBuild,
    PreflightCheck::ContainersFeature,
    PreflightCheck::DiskSpace,
    PreflightCheck::ContainerRuntime,
    PreflightCheck::DefaultShell,
];

/// What [`check_host`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCheck {
    /// The host's identity, when it gives a usable one.
    pub identity: Option<HostIdentity>,
    /// The facts read.
    pub facts: HostFacts,
    /// Every failing check (empty: the host passes), the `Identity` check included.
    pub failures: Vec<PreflightFailure>,
}

/// Runs the identity command on the host of `session` (one round trip, the same command a configuration's first
/// pass runs on the cluster's `platform`, which decides the Node name) and the checks against `payload_bytes` and
/// the cluster's VXLAN port `vxlan_port`, without changing anything on the host.
///
/// ```no_run
/// # async fn example(host: std::sync::Arc<dyn wmco_ssh_transport::RemoteHost>) -> Result<(), wmco_node_config::FlowError> {
/// use wmco_node_config::{HostSession, check_host};
/// let check = check_host(&HostSession::new(host), wmco_vocabulary::Platform::None, 430 << 20, None).await?;
/// for failure in &check.failures {
///     println!("{failure}");
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`FlowError`] when the host cannot be reached, the command fails, or its output is not the identity document.
pub async fn check_host(
    session: &HostSession,
    platform: Platform,
    payload_bytes: u64,
    vxlan_port: Option<u16>,
) -> Result<HostCheck, FlowError> {
    let naming = NodeNaming::for_platform(platform);
    let stdout = run_identity_command(session, naming).await?;
    let facts = HostFacts::parse(&stdout);
    let mut failures = Vec::new();
    let identity = match HostIdentity::parse_with(&stdout, naming) {
        Ok(identity) => Some(identity),
        Err(source @ IdentityError::Output { .. }) => {
            return Err(FlowError::Identity { host: session.label().to_owned(), source });
        }
        Err(error) => {
            failures.push(PreflightFailure { check: PreflightCheck::Identity, message: error.to_string() });
            None
        }
    };
    failures.extend(preflight(&facts, payload_bytes, vxlan_port));
    Ok(HostCheck { identity, facts, failures })
}

/// Runs the identity command ([`script::identity`], reading what `naming` needs) and returns what it printed.
pub(crate) async fn run_identity_command(session: &HostSession, naming: NodeNaming) -> Result<String, FlowError> {
    let command = script::identity(naming).map_err(|source| FlowError::Render {
        host: session.label().to_owned(),
        step: FlowStep::Identify,
        source,
    })?;
    let output = session.run_powershell(FlowStep::Identify, "host identity", &command).await?;
    Ok(output.stdout_text().into_owned())
}

/// `bytes` in MiB with one decimal, rounded down.
fn mib(bytes: u64) -> String {
    let tenths = u128::from(bytes) * 10 / (1 << 20);
    format!("{}.{} MiB", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{ContainersStep, containers_to_enable};

    fn good() -> HostFacts {
        HostFacts {
            build: Some(20_348),
            ubr: Some(2849),
            free_bytes: Some(40 << 30),
            containers: Some(FeatureState::Enabled),
            ..HostFacts::default()
        }
    }

    #[test]
    fn a_supported_host_with_room_passes() {
        for (build, _) in SUPPORTED_BUILDS {
            assert_eq!(preflight(&HostFacts { build: Some(build), ..good() }, 430 << 20, None), Vec::new());
        }
    }

    #[test]
    fn every_failing_check_is_named_with_what_was_found() {
        let facts = HostFacts {
            build: Some(14_393),
            ubr: Some(5_427),
            free_bytes: Some(1 << 30),
            containers: Some(FeatureState::DisablePending),
            docker_service: Some(r"C:\Program Files\Docker\dockerd.exe --run-service".into()),
            containerd_service: None,
            defender_running: Some(true),
            default_shell: Some(r"C:\cygwin64\bin\bash.exe".into()),
            last_boot: None,
            cni_state: None,
        };
        let failures = preflight(&facts, 430 << 20, None);
        let checks: Vec<PreflightCheck> = failures.iter().map(|failure| failure.check).collect();
        assert_eq!(
            checks,
            [
                PreflightCheck::WindowsBuild,
                PreflightCheck::ContainersFeature,
                PreflightCheck::DiskSpace,
                PreflightCheck::ContainerRuntime,
                PreflightCheck::DefaultShell
            ]
        );
        assert!(failures[4].message.contains(r"is C:\cygwin64\bin\bash.exe, which"), "{}", failures[4]);
        assert!(failures[0].message.contains("14393"), "{}", failures[0]);
        assert!(
            failures[3].message.contains(r"service docker, C:\Program Files\Docker\dockerd.exe"),
            "{}",
            failures[3]
        );
        assert!(failures[0].message.contains("17763 (Windows Server 2019)"), "{}", failures[0]);
        assert!(failures[1].message.contains("being removed (DisablePending)"), "{}", failures[1]);
        assert_eq!(
            failures[2].to_string(),
            "DiskSpace: C: has 1024.0 MiB free; the payload needs 430.0 MiB and 2048.0 MiB more for logs and images: \
             free 1454.0 MiB on C:"
        );
    }

    #[test]
    fn an_installable_containers_feature_passes_and_is_enabled_by_the_configuration() {
        let cases = [
            ("Enabled", None),
            ("Disabled", Some(ContainersStep::Install)),
            ("DisabledWithPayloadRemoved", Some(ContainersStep::Install)),
            ("EnablePending", Some(ContainersStep::Reboot)),
            ("DisablePending", None),
            ("Staged", None),
        ];
        for (state, step) in cases {
            let facts = HostFacts { containers: Some(FeatureState::parse(state)), ..good() };
            assert_eq!(containers_to_enable(&facts), step, "{state}");
            let refused =
                preflight(&facts, 0, None).iter().any(|failure| failure.check == PreflightCheck::ContainersFeature);
            assert_eq!(refused, matches!(state, "DisablePending" | "Staged"), "{state}");
        }
        let staged = preflight(&HostFacts { containers: Some(FeatureState::parse("Staged")), ..good() }, 0, None);
        assert!(staged[0].message.contains("in state Staged"), "{}", staged[0]);
    }

    #[test]
    fn server_2022_needs_kb5012637_and_server_2019_the_default_vxlan_port() {
        let at = |build, ubr| HostFacts { build: Some(build), ubr, ..good() };
        let refused =
            |facts: &HostFacts, port| preflight(facts, 0, port).first().map(|failure| failure.message.clone());
        assert_eq!(refused(&at(SERVER_2022_BUILD, Some(KB5012637_UBR)), Some(9898)), None);
        let unpatched = refused(&at(SERVER_2022_BUILD, Some(KB5012637_UBR - 1)), None).unwrap();
        assert!(unpatched.starts_with("Windows Server 2022 build 20348.680 lacks KB5012637 (build 20348.681)"));
        assert!(unpatched.ends_with("install KB5012637 or a later cumulative update"), "{unpatched}");
        let unknown = refused(&at(SERVER_2022_BUILD, None), None).unwrap();
        assert!(unknown.contains("did not report the update revision") && unknown.contains("KB5012637"), "{unknown}");
        let server_2019 = at(SERVER_2019_BUILD, Some(1));
        for port in [None, Some(DEFAULT_VXLAN_PORT)] {
            assert_eq!(refused(&server_2019, port), None, "{port:?}");
        }
        let custom = refused(&server_2019, Some(9898)).unwrap();
        assert!(custom.contains("does not support the hybrid overlay's custom VXLAN port 9898"), "{custom}");
        assert!(custom.ends_with("use Windows Server 2022 or remove the custom VXLAN port"), "{custom}");
        assert_eq!(refused(&at(26_100, Some(1)), Some(9898)), None, "Windows Server 2025 has no such limit");
    }

    #[test]
    fn the_disk_needs_the_payload_and_the_headroom_exactly() {
        let payload = 430 << 20;
        let exact = HostFacts { free_bytes: Some(payload + DISK_HEADROOM_BYTES), ..good() };
        assert_eq!(preflight(&exact, payload, None), Vec::new());
        let short = HostFacts { free_bytes: Some(payload + DISK_HEADROOM_BYTES - 1), ..good() };
        assert_eq!(preflight(&short, payload, None)[0].check, PreflightCheck::DiskSpace);
    }

    #[test]
    fn facts_the_host_did_not_print_fail_their_checks() {
        let failures = preflight(&HostFacts::default(), 0, None);
        assert_eq!(failures.len(), 3);
        assert!(failures.iter().all(|failure| failure.message.contains("did not report")), "{failures:?}");
    }
}
