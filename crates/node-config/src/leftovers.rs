//! What earlier configurations leave on a host that this operator's configuration removes:
//!
//! - the CNI plugins' state, `C:\var\lib\cni` (host-local IPAM's address leases), of a host joining for the first
//!   time: a host moved by hand from another cluster would otherwise hand out addresses by that cluster's leases.
//!   The Go operator removes it at every configuration (OCPBUGS-65625, after stopping every service); this operator
//!   only before the first join (no Node yet), so the pods of a joined host keep their leases. The identity command
//!   says whether it exists, so a host without it costs no round trip.
//! - the Go operator's daemon kubeconfig, [`GO_DAEMON_KUBECONFIG`], which holds a long-lived ServiceAccount token:
//!   every probe asks for it, and a pass that finds it removes it after the plan's steps (which delete the daemon's
//!   service) ran.

use wmco_windows_services::{ObservedHost, WinPath};

use crate::error::{FlowError, FlowStep};
use crate::script::{self, CNI_STATE_DIRECTORY};
use crate::session::HostSession;

/// The Go operator's daemon kubeconfig (wmco-anchor.md §2.2: token kubeconfig of ServiceAccount
/// `windows-instance-config-daemon`, from a `kubernetes.io/service-account-token` Secret, which never expires).
pub const GO_DAEMON_KUBECONFIG: &str = r"C:\k\wicd-kubeconfig";

/// A fixed path of this module as a [`WinPath`].
fn fixed(session: &HostSession, text: &str) -> Result<WinPath, FlowError> {
    WinPath::parse(text).map_err(|source| FlowError::Render {
        host: session.label().to_owned(),
        step: FlowStep::RemoveFiles,
        source: wmco_windows_services::CommandError::ScriptPath { source },
    })
}

/// The Go daemon's kubeconfig, which every probe reads (see [`remove_found`]).
pub(crate) fn go_daemon_kubeconfig(session: &HostSession) -> Result<WinPath, FlowError> {
    fixed(session, GO_DAEMON_KUBECONFIG)
}

/// Removes `C:\var\lib\cni` with everything in it (one round trip).
pub(crate) async fn clear_cni_state(session: &HostSession) -> Result<(), FlowError> {
    let directory = fixed(session, CNI_STATE_DIRECTORY)?;
    let command = script::remove_directories(std::slice::from_ref(&directory)).map_err(|source| FlowError::Render {
        host: session.label().to_owned(),
        step: FlowStep::RemoveFiles,
        source,
    })?;
    session.run_powershell(FlowStep::RemoveFiles, "remove the CNI state", &command).await?;
    tracing::info!(host = session.label(), directory = %directory,
        "removed the CNI state an earlier configuration left before the host's first join");
    Ok(())
}

/// Removes over SFTP each of `files` that the probe found on the host (`observed`), reporting a failure as `step`
/// of that file.
pub(crate) async fn remove_found(
    session: &HostSession,
    files: &[(WinPath, FlowStep)],
    observed: &ObservedHost,
) -> Result<(), FlowError> {
    for (path, step) in files {
        if observed.files.get(path).is_some_and(Option::is_some) {
            session.host().remove(&path.to_sftp()).await.map_err(|source| session.transport_error(*step, source))?;
            tracing::info!(host = session.label(), file = %path, "removed");
        }
    }
    Ok(())
}
