//! What Windows kubelets take from the Linux workers' rendered ignition config (the newest `rendered-worker-*`
//! MachineConfig): the kubelet unit's `--cloud-provider` and `--cloud-config`, and the contents of the cloud config
//! file when the unit names one (wmco-anchor.md §8.6). Nothing else of the config is read.

use std::io::Read as _;

use serde_json::Value;

/// The MachineConfig name prefix of the workers' rendered configs.
pub const RENDERED_WORKER_PREFIX: &str = "rendered-worker-";
/// The systemd unit whose command line is read.
const KUBELET_UNIT: &str = "kubelet.service";

/// The kubelet's cloud settings on the Linux workers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KubeletCloud {
    /// `--cloud-provider` (`external` on current OpenShift releases); `None` when the unit has none or it is empty.
    pub provider: Option<String>,
    /// The contents of the file `--cloud-config` names; `None` when the unit names none.
    pub cloud_config: Option<String>,
}

/// The ignition config is not what MCO renders.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnitionError {
    /// The kubelet unit names a cloud config file the config does not hold.
    #[error("the kubelet unit names --cloud-config={path}, which the rendered config does not hold")]
    MissingCloudConfig {
        /// The Linux path.
        path: String,
    },
    /// A file's contents cannot be decoded.
    #[error("file {path} of the rendered config cannot be decoded: {reason}")]
    Contents {
        /// The Linux path.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The kubelet cloud settings of the ignition config `config` (`spec.config` of a rendered MachineConfig).
///
/// ```
/// use wmco_cluster_client::kubelet_cloud;
/// let config = serde_json::json!({
///     "ignition": {"version": "3.5.0"},
///     "systemd": {"units": [{"name": "kubelet.service", "contents":
///         "[Service]\nExecStart=/usr/bin/kubelet \\\n    --config=/etc/kubernetes/kubelet.conf \\\n    --cloud-provider=external \\\n    --cloud-config=/etc/kubernetes/cloud.conf\n"}]},
///     "storage": {"files": [{"path": "/etc/kubernetes/cloud.conf",
///         "contents": {"source": "data:,%5BGlobal%5D%0A"}}]}
/// });
/// let cloud = kubelet_cloud(&config)?;
/// assert_eq!(cloud.provider.as_deref(), Some("external"));
/// assert_eq!(cloud.cloud_config.as_deref(), Some("[Global]\n"));
/// # Ok::<(), wmco_cluster_client::IgnitionError>(())
/// ```
///
/// # Errors
/// [`IgnitionError`] when the unit names a cloud config file the config lacks or cannot decode.
pub fn kubelet_cloud(config: &Value) -> Result<KubeletCloud, IgnitionError> {
    let units = config.pointer("/systemd/units").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let Some(contents) = units
        .iter()
        .find(|unit| unit.get("name").and_then(Value::as_str) == Some(KUBELET_UNIT))
        .and_then(|unit| unit.get("contents"))
        .and_then(Value::as_str)
    else {
        return Ok(KubeletCloud::default());
    };
    let arguments = exec_start_arguments(contents);
    let flag = |name: &str| flag_value(&arguments, name).filter(|value| !value.is_empty());
    let cloud_config = match flag("--cloud-config") {
        Some(path) => Some(file_contents(config, &path)?),
        None => None,
    };
    Ok(KubeletCloud { provider: flag("--cloud-provider"), cloud_config })
}

/// The words of the unit's `ExecStart=` command, its backslash-continued lines joined.
fn exec_start_arguments(unit: &str) -> Vec<String> {
    let mut command = String::new();
    let mut inside = false;
    for line in unit.lines() {
        let trimmed = line.trim();
        if !inside {
            let Some(rest) = trimmed.strip_prefix("ExecStart=") else { continue };
            inside = true;
            command.push_str(rest);
        } else {
            command.push(' ');
            command.push_str(trimmed);
        }
        match command.strip_suffix('\\') {
            Some(continued) => command = continued.to_owned(),
            None => break,
        }
    }
    command.split_whitespace().map(str::to_owned).collect()
}

/// The value of `--name=value` or `--name value`.
fn flag_value(arguments: &[String], name: &str) -> Option<String> {
    arguments.iter().enumerate().find_map(|(index, argument)| {
        if let Some(value) = argument.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
            return Some(value.trim_matches('"').to_owned());
        }
        (argument == name).then(|| arguments.get(index + 1).map(|value| value.trim_matches('"').to_owned())).flatten()
    })
}

/// The decoded contents of the config's file at `path` (a data URL, gzip-compressed when the file says so).
fn file_contents(config: &Value, path: &str) -> Result<String, IgnitionError> {
    let files = config.pointer("/storage/files").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let file = files
        .iter()
        .find(|file| file.get("path").and_then(Value::as_str) == Some(path))
        .ok_or_else(|| IgnitionError::MissingCloudConfig { path: path.to_owned() })?;
    let contents_error = |reason: String| IgnitionError::Contents { path: path.to_owned(), reason };
    let source = file.pointer("/contents/source").and_then(Value::as_str).unwrap_or("data:,");
    let url =
        data_url::DataUrl::process(source).map_err(|error| contents_error(format!("not a data URL: {error:?}")))?;
    let (mut bytes, _) = url.decode_to_vec().map_err(|error| contents_error(format!("bad base64: {error:?}")))?;
    if file.pointer("/contents/compression").and_then(Value::as_str) == Some("gzip") {
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut inflated)
            .map_err(|error| contents_error(format!("bad gzip: {error}")))?;
        bytes = inflated;
    }
    String::from_utf8(bytes).map_err(|_| contents_error("not UTF-8".to_owned()))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use base64::Engine as _;
    use serde_json::json;

    use super::*;

    fn unit(exec_start: &str) -> Value {
        json!({"name": "kubelet.service", "enabled": true, "contents": format!(
            "[Unit]\nDescription=Kubernetes Kubelet\n\n[Service]\nEnvironment=X=1\nExecStart={exec_start}\nRestart=always\n"
        )})
    }

    #[test]
    fn a_config_without_a_kubelet_unit_or_flags_has_no_cloud_settings() {
        assert_eq!(kubelet_cloud(&json!({"ignition": {"version": "3.5.0"}})), Ok(KubeletCloud::default()));
        let plain = json!({"systemd": {"units": [unit("/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf")]}});
        assert_eq!(kubelet_cloud(&plain), Ok(KubeletCloud::default()));
        // MCO renders an empty flag when the platform has no provider.
        let empty = json!({"systemd": {"units": [unit("/usr/bin/kubelet \\\n  --cloud-provider= \\\n  --v=2")]}});
        assert_eq!(kubelet_cloud(&empty), Ok(KubeletCloud::default()));
    }

    #[test]
    fn both_flag_forms_and_a_gzip_base64_cloud_config_are_read() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(b"[Global]\nsecret-name = vsphere-creds\n").unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(gzip.finish().unwrap());
        let config = json!({
            "systemd": {"units": [
                {"name": "crio.service", "contents": "ExecStart=/usr/bin/crio --cloud-provider=wrong"},
                unit("/usr/bin/kubelet \\\n    --cloud-provider vsphere \\\n    --cloud-config=/etc/kubernetes/cloud.conf \\\n    --v=2"),
            ]},
            "storage": {"files": [{"path": "/etc/kubernetes/cloud.conf",
                "contents": {"compression": "gzip", "source": format!("data:;base64,{encoded}")}}]}
        });
        let cloud = kubelet_cloud(&config).unwrap();
        assert_eq!(cloud.provider.as_deref(), Some("vsphere"));
        assert_eq!(cloud.cloud_config.as_deref(), Some("[Global]\nsecret-name = vsphere-creds\n"));
    }

    #[test]
    fn a_named_cloud_config_that_is_missing_or_damaged_is_an_error_naming_it() {
        let exec = "/usr/bin/kubelet --cloud-provider=external --cloud-config=/etc/kubernetes/cloud.conf";
        let missing = json!({"systemd": {"units": [unit(exec)]}});
        assert_eq!(
            kubelet_cloud(&missing),
            Err(IgnitionError::MissingCloudConfig { path: "/etc/kubernetes/cloud.conf".into() })
        );
        let damaged = json!({"systemd": {"units": [unit(exec)]}, "storage": {"files": [
            {"path": "/etc/kubernetes/cloud.conf", "contents": {"source": "data:;base64,***"}}]}});
        let error = kubelet_cloud(&damaged).unwrap_err().to_string();
        assert!(error.contains("/etc/kubernetes/cloud.conf"), "{error}");
    }
}
