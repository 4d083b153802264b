//! The container runtime's network readiness as the kubelet sees it: containerd reports `NetworkReady=false`
//! until its CNI configuration directory holds a network configuration (`*.conf`, `*.conflist`, `*.json`, as
//! libcni loads them). Without a directory to watch the network counts as ready.

use std::path::PathBuf;

/// Where the runtime looks for CNI configurations, if the simulation models it.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetworkProbe {
    pub cni_config_dir: Option<PathBuf>,
}

impl NetworkProbe {
    /// Whether the runtime network is ready now.
    pub fn ready(&self) -> bool {
        let Some(directory) = &self.cni_config_dir else { return true };
        let Ok(entries) = std::fs::read_dir(directory) else { return false };
        entries.filter_map(Result::ok).any(|entry| {
            let name = entry.file_name().to_string_lossy().to_lowercase();
            entry.file_type().is_ok_and(|kind| kind.is_file())
                && [".conf", ".conflist", ".json"].iter().any(|extension| name.ends_with(extension))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_is_ready_once_a_cni_configuration_exists() {
        assert!(NetworkProbe::default().ready());
        let root = tempfile::tempdir().unwrap();
        let probe = NetworkProbe { cni_config_dir: Some(root.path().join("cni/config")) };
        assert!(!probe.ready());
        std::fs::create_dir_all(root.path().join("cni/config")).unwrap();
        std::fs::write(root.path().join("cni/config/readme.txt"), "").unwrap();
        assert!(!probe.ready());
        std::fs::write(root.path().join("cni/config/cni.conf"), "{}").unwrap();
        assert!(probe.ready());
    }
}
