//! Where the control-plane binaries live: `${WMCO_CACHE:-$HOME/.cache/wmco-rs}/controlplane/<version>/bin/`,
//! built by `e2e/controlplane/build.sh` for the Kubernetes version pinned in `e2e/controlplane/go.mod`; and
//! promtool, `${WMCO_CACHE:-$HOME/.cache/wmco-rs}/tools/promtool/<version>/promtool`, built by
//! `e2e/promtool/build.sh` for the Prometheus module version pinned in `e2e/promtool/go.mod`.

use std::path::{Path, PathBuf};

use crate::Error;

/// The pinned `e2e/controlplane/go.mod`, read at compile time so the harness and the build script agree on the
/// version without a second copy of it.
const CONTROL_PLANE_GO_MOD: &str = include_str!("../../controlplane/go.mod");

/// The pinned `e2e/promtool/go.mod`, read at compile time like the control plane's.
const PROMTOOL_GO_MOD: &str = include_str!("../../promtool/go.mod");

/// The Kubernetes version the control-plane Go module pins (for example `v1.36.3`).
///
/// ```
/// assert!(wmco_e2e_harness::kubernetes_version().starts_with("v1."));
/// ```
pub fn kubernetes_version() -> &'static str {
    version_in_go_mod(CONTROL_PLANE_GO_MOD, "k8s.io/kubernetes").unwrap_or("unknown")
}

/// The Prometheus module version `e2e/promtool/go.mod` pins (for example `v0.316.0`, Prometheus 3.16.0).
///
/// ```
/// assert!(wmco_e2e_harness::promtool_version().starts_with("v0.3"));
/// ```
pub fn promtool_version() -> &'static str {
    version_in_go_mod(PROMTOOL_GO_MOD, "github.com/prometheus/prometheus").unwrap_or("unknown")
}

/// Finds the version of `module` in a go.mod text (a `require` line, in a block or not).
fn version_in_go_mod<'a>(go_mod: &'a str, module: &str) -> Option<&'a str> {
    go_mod.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let words: Vec<&str> =
            if line.trim_start().starts_with("require") { words.by_ref().skip(1).collect() } else { words.collect() };
        match words.as_slice() {
            [name, version, ..] if *name == module && version.starts_with('v') => Some(*version),
            _ => None,
        }
    })
}

/// Locates promtool in the cache (`tools/promtool/<version>/promtool`) and checks it exists.
///
/// Fails with [`Error::PromtoolMissing`], whose message says to run `bash e2e/promtool/build.sh` (which
/// `cargo xtask test` runs beside its other stages).
pub fn promtool() -> Result<PathBuf, Error> {
    let path = cache_root()?.join("tools").join("promtool").join(promtool_version()).join("promtool");
    if !path.is_file() {
        return Err(Error::PromtoolMissing { path, version: promtool_version().to_owned() });
    }
    Ok(path)
}

/// The four executables of the control plane.
#[derive(Debug, Clone)]
pub struct ControlPlaneBinaries {
    /// etcd.
    pub etcd: PathBuf,
    /// kube-apiserver.
    pub kube_apiserver: PathBuf,
    /// kube-controller-manager.
    pub kube_controller_manager: PathBuf,
    /// kubectl.
    pub kubectl: PathBuf,
}

impl ControlPlaneBinaries {
    /// Locates the binaries in the cache and checks each exists.
    ///
    /// Fails with [`Error::BinaryMissing`], whose message says to run `cargo xtask controlplane build`.
    pub fn locate() -> Result<Self, Error> {
        let bin_dir = binary_directory()?;
        let binaries = Self::in_directory(&bin_dir);
        for path in [&binaries.etcd, &binaries.kube_apiserver, &binaries.kube_controller_manager, &binaries.kubectl] {
            if !path.is_file() {
                return Err(Error::BinaryMissing { path: path.clone(), version: kubernetes_version().to_owned() });
            }
        }
        Ok(binaries)
    }

    fn in_directory(bin_dir: &Path) -> Self {
        Self {
            etcd: bin_dir.join("etcd"),
            kube_apiserver: bin_dir.join("kube-apiserver"),
            kube_controller_manager: bin_dir.join("kube-controller-manager"),
            kubectl: bin_dir.join("kubectl"),
        }
    }
}

/// The cache root: `WMCO_CACHE`, else `$HOME/.cache/wmco-rs`.
fn cache_root() -> Result<PathBuf, Error> {
    if let Some(cache) = std::env::var_os("WMCO_CACHE").filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(cache));
    }
    let home = std::env::var_os("HOME").filter(|value| !value.is_empty()).ok_or(Error::NoCacheDirectory)?;
    Ok(PathBuf::from(home).join(".cache").join("wmco-rs"))
}

/// The directory the build script writes the binaries to.
///
/// ```
/// let dir = wmco_e2e_harness::binary_directory().unwrap();
/// assert!(dir.ends_with(format!("controlplane/{}/bin", wmco_e2e_harness::kubernetes_version())));
/// ```
pub fn binary_directory() -> Result<PathBuf, Error> {
    Ok(cache_root()?.join("controlplane").join(kubernetes_version()).join("bin"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_from_a_require_block() {
        let go_mod = "module x\n\nrequire (\n\tcel.dev/expr v0.25.1 // indirect\n\tk8s.io/kubernetes v1.36.3 // indirect\n)\n\
                      replace k8s.io/api => k8s.io/api v0.36.3\n";
        assert_eq!(version_in_go_mod(go_mod, "k8s.io/kubernetes"), Some("v1.36.3"));
    }

    #[test]
    fn reads_the_version_from_a_single_require_line() {
        assert_eq!(
            version_in_go_mod("module x\nrequire k8s.io/kubernetes v1.36.1\n", "k8s.io/kubernetes"),
            Some("v1.36.1")
        );
    }

    #[test]
    fn ignores_tool_lines_naming_kubernetes_packages() {
        let go_mod = "tool (\n\tk8s.io/kubernetes/cmd/kubectl\n)\nrequire k8s.io/kubernetes v1.36.3\n";
        assert_eq!(version_in_go_mod(go_mod, "k8s.io/kubernetes"), Some("v1.36.3"));
    }

    #[test]
    fn the_pinned_go_mod_names_a_1_36_release() {
        assert!(kubernetes_version().starts_with("v1.36."), "{}", kubernetes_version());
    }

    #[test]
    fn the_pinned_promtool_go_mod_names_a_prometheus_3_release() {
        assert!(promtool_version().starts_with("v0.3"), "{}", promtool_version());
    }
}
