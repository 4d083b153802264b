//! Versions the executor compares: the operator's own (written to Nodes without build metadata) and the kubelet's
//! the payload installs (for the skew rule against the API server's, whose read fails with
//! [`ApiServerVersionError`](crate::fleet::ApiServerVersionError)).

use semver::{BuildMetadata, Version};
use wmco_payload_manifest::Manifest;

use super::FleetError;

/// The operator's version: `override_version` (`--version-override`, for e2e and benchmarks) or the crate version,
/// without build metadata, as it is written to the `windowsmachineconfig.openshift.io/version` Node annotation.
///
/// ```
/// use wmco_operator::fleet::operator_version;
/// assert_eq!(operator_version(Some("2.0.0+abc1234"))?.to_string(), "2.0.0");
/// assert_eq!(operator_version(None)?.to_string(), env!("CARGO_PKG_VERSION").split('+').next().unwrap());
/// # Ok::<(), wmco_operator::fleet::FleetError>(())
/// ```
///
/// # Errors
/// [`FleetError::InvalidVersion`] when the override (or the crate version) is not semver.
pub fn operator_version(override_version: Option<&str>) -> Result<Version, FleetError> {
    let (what, text) = match override_version {
        Some(text) => ("--version-override", text),
        None => ("the crate version", env!("CARGO_PKG_VERSION")),
    };
    let mut version =
        Version::parse(text.trim()).map_err(|_| FleetError::InvalidVersion { what, value: text.to_owned() })?;
    version.build = BuildMetadata::EMPTY;
    Ok(version)
}

/// The kubelet version the payload installs: the `version` of component `kubelet` in `manifest`
/// (`payload/manifest.yaml`), e.g. `v1.36.3`.
///
/// ```
/// use wmco_operator::fleet::payload_kubelet_version;
/// let manifest = wmco_payload_manifest::Manifest::product().unwrap();
/// assert_eq!(payload_kubelet_version(&manifest)?.major, 1);
/// # Ok::<(), wmco_operator::fleet::FleetError>(())
/// ```
///
/// # Errors
/// [`FleetError::NoKubeletVersion`] when the manifest has no `kubelet` component with a version,
/// [`FleetError::InvalidVersion`] when its version is not semver.
pub fn payload_kubelet_version(manifest: &Manifest) -> Result<Version, FleetError> {
    let what = "the payload manifest's kubelet version";
    let text = manifest
        .component("kubelet")
        .and_then(|kubelet| kubelet.version.as_deref())
        .ok_or(FleetError::NoKubeletVersion)?;
    Version::parse(text.trim_start_matches('v'))
        .map_err(|_| FleetError::InvalidVersion { what, value: text.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_and_loses_its_build_metadata() {
        assert_eq!(operator_version(Some(" 10.18.0+e2e ")).unwrap(), Version::new(10, 18, 0));
        let error = operator_version(Some("10.18")).unwrap_err();
        assert_eq!(error.to_string(), "--version-override \"10.18\" is not a semantic version (e.g. 1.2.3)");
    }

    #[test]
    fn the_payload_kubelet_version_comes_from_the_manifest() {
        let manifest = |name: &str, version: &str| {
            let yaml = format!(
                "schema: wmco.payload/v1\ncomponents:\n  - name: {name}\n    version: {version}\n    source: {{ go: {{ \
                 module: k8s.io/kubernetes, version: v1.36.3, build: kubernetes }} }}\n    required: true\n    \
                 files:\n      - {{ path: {name}.exe, destination: 'C:\\k\\{name}.exe', typical_size: 1MiB, package: \
                 ./cmd/{name}, version_check: {{ args: [--version], expect: v1.36.3 }} }}\n"
            );
            Manifest::from_yaml(&yaml, "test").unwrap()
        };
        assert_eq!(payload_kubelet_version(&manifest("kubelet", "v1.36.3")).unwrap(), Version::new(1, 36, 3));
        let error = payload_kubelet_version(&manifest("kubelet", "latest")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the payload manifest's kubelet version \"latest\" is not a semantic version (e.g. 1.2.3)"
        );
        let error = payload_kubelet_version(&manifest("kube-proxy", "v1.36.3")).unwrap_err();
        assert!(matches!(error, FleetError::NoKubeletVersion), "{error}");
    }
}
