//! Test support for this crate's tests and its dependents' (feature `testing`): the sample service settings and the
//! bootstrap files a simulated host needs to run its phase-1 services, so flow and controller tests share one copy.

use wmco_payload_manifest::render::{RenderedFile, containerd_config};
use wmco_payload_manifest::{HostFile, HostFileContent, HostFileSet};
use wmco_windows_services::{LogRotation, Platform, ServiceStage, Verbosity, WinPath, node_services};

use crate::{FileStage, HostFilesSource, HostIdentity, ServiceSettings, SourceError, StageFiles};

/// The kubelet configuration and bootstrap kubeconfig every sample file set carries (placeholder contents).
const KUBELET_FILES: [(&str, &str); 2] =
    [(r"C:\k\kubelet.conf", "{}\n"), (r"C:\k\bootstrap-kubeconfig", "apiVersion: v1\n")];

/// Sample service settings: API server `https://api-int.example.com:6443`, no platform, normal verbosity, default
/// log rotation, the default VXLAN port and no cloud provider. Tests needing another value override one field.
///
/// ```
/// use wmco_node_config::testing::sample_service_settings;
/// use wmco_node_config::ServiceSettings;
/// use wmco_windows_services::Platform;
///
/// let vsphere = ServiceSettings { platform: Platform::VSphere, ..sample_service_settings() };
/// assert_eq!(vsphere.api_server_url, "https://api-int.example.com:6443");
/// ```
pub fn sample_service_settings() -> ServiceSettings {
    ServiceSettings {
        api_server_url: "https://api-int.example.com:6443".into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    }
}

/// The bootstrap files for any stage: the phase-1 binaries of the node's services under `settings` (placeholder
/// bytes: each binary's own path), a containerd configuration that parses, `kubelet.conf` and the bootstrap
/// kubeconfig. Enough for a simulated host to start containerd and the kubelet.
///
/// ```
/// use wmco_node_config::testing::BootstrapFiles;
/// use wmco_node_config::{FileStage, HostFilesSource, HostIdentity};
///
/// let identity = HostIdentity::parse(r#"{"hostname":"WIN-A","fqdn":"win-a.lab.example","ip":"203.0.113.7"}"#)?;
/// let files = BootstrapFiles::default().files(&identity, FileStage::Bootstrap)?;
/// assert!(files.files.files().iter().any(|file| file.destination.to_string() == r"C:\k\kubelet.conf"));
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
pub struct BootstrapFiles {
    settings: ServiceSettings,
}

impl BootstrapFiles {
    /// The bootstrap files of the node's services under `settings`.
    pub fn new(settings: ServiceSettings) -> Self {
        BootstrapFiles { settings }
    }
}

impl Default for BootstrapFiles {
    /// The bootstrap files under [`sample_service_settings`].
    fn default() -> Self {
        BootstrapFiles::new(sample_service_settings())
    }
}

impl HostFilesSource for BootstrapFiles {
    fn files(&self, identity: &HostIdentity, _stage: FileStage<'_>) -> Result<StageFiles, SourceError> {
        let mut rendered = vec![containerd_config()?];
        rendered.extend(service_binaries(&self.settings, identity, ServiceStage::Bootstrap)?);
        Ok(file_set(rendered)?.into())
    }
}

/// Placeholder binaries (each holding its own path) of the node's services under `settings` up to `phase`.
///
/// # Errors
/// The service set could not be built for `identity`.
pub fn service_binaries(
    settings: &ServiceSettings,
    identity: &HostIdentity,
    phase: ServiceStage,
) -> Result<Vec<RenderedFile>, SourceError> {
    let mut binaries = Vec::new();
    for service in node_services(&settings.node_inputs(identity))? {
        if service.phase <= phase {
            for binary in service.spec.binaries() {
                binaries.push(RenderedFile::new(binary.clone(), format!("{binary}").into_bytes()));
            }
        }
    }
    Ok(binaries)
}

/// `rendered` plus `kubelet.conf` and the bootstrap kubeconfig, one file per destination (the first wins), as a
/// host file set.
///
/// # Errors
/// A placeholder path does not parse, or the set is refused by [`HostFileSet::from_files`].
pub fn file_set(mut rendered: Vec<RenderedFile>) -> Result<HostFileSet, SourceError> {
    for (path, text) in KUBELET_FILES {
        rendered.push(RenderedFile::new(WinPath::parse(path)?, text.as_bytes().to_vec()));
    }
    rendered.sort_by(|a, b| a.destination().cmp(b.destination()));
    rendered.dedup_by(|a, b| a.destination() == b.destination());
    let files = rendered
        .into_iter()
        .map(|file| HostFile {
            destination: file.destination().clone(),
            sha256: file.sha256(),
            size: file.bytes().len() as u64,
            content: HostFileContent::Rendered(file),
        })
        .collect();
    Ok(HostFileSet::from_files(files)?)
}
