//! The operator image run the way a kubelet runs the operator's pod, without a kubelet or a container engine.
//!
//! [`UnpackedImage::unpack`] takes the `oci-archive` `cargo xtask image` wrote and hands it to tools that did not
//! build it: skopeo copies it into an OCI layout (proving skopeo accepts the archive) and reads its config, umoci
//! unpacks the root file system and writes an OCI runtime bundle, as containerd's unpacker would.
//! [`PodContainer::from_deployment`] reads what the Deployment says about the container: its arguments, its
//! environment (downward-API fields resolved), `readOnlyRootFilesystem`, `runAsNonRoot`, its `emptyDir` mounts.
//! [`PodRun`] turns both into a runtime spec the way the kubelet and the container runtime do — the image's
//! entrypoint with the Deployment's arguments, the image's user (refused if it is root or not numeric under
//! `runAsNonRoot`), every capability dropped, no new privileges, a read-only root, the ServiceAccount's token,
//! `ca.crt` and `namespace` at their standard path, `KUBERNETES_SERVICE_HOST`/`PORT` for in-cluster
//! configuration, the node's `/etc/hosts` and `/etc/resolv.conf` — and runs it with runc.
//!
//! One difference from a pod, on purpose: the container shares the host's network namespace (as a `hostNetwork`
//! pod does), because the e2e API server and the simulated hosts listen on loopback addresses.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::ByteString;
use oci_spec::runtime::{Capabilities, LinuxCapabilities, LinuxNamespaceType, Mount, MountBuilder, Spec};
use serde_json::Value;

use crate::SandboxError;

/// The environment variable naming the operator image's `oci-archive` (set by `cargo xtask test`).
pub const IMAGE_ENV: &str = "WMCO_IMAGE";
/// Where a pod finds its ServiceAccount's token, CA bundle and namespace.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The operator image's archive from [`IMAGE_ENV`].
///
/// # Errors
/// [`SandboxError::Image`] saying how to build it when the variable is unset or names no file.
pub fn image_from_env() -> Result<PathBuf, SandboxError> {
    let Some(archive) = std::env::var_os(IMAGE_ENV).filter(|value| !value.is_empty()).map(PathBuf::from) else {
        return Err(SandboxError::Image(format!(
            "{IMAGE_ENV} is not set: build the image with `cargo xtask image` and set {IMAGE_ENV} to the \
             wmco.oci.tar it prints (cargo xtask test does both)"
        )));
    };
    if !archive.is_file() {
        return Err(SandboxError::Image(format!("{IMAGE_ENV}={} is not a file", archive.display())));
    }
    Ok(archive)
}

/// An image archive unpacked by skopeo and umoci.
#[derive(Debug, Clone)]
pub struct UnpackedImage {
    /// The OCI layout skopeo wrote (`layout:wmco`).
    pub layout: PathBuf,
    /// The runtime bundle umoci wrote: `config.json` and `rootfs/`.
    pub bundle: PathBuf,
    /// The image configuration (`skopeo inspect --config`): `config.User`, `Entrypoint`, `Env`, `Labels`, ….
    pub config: Value,
}

impl UnpackedImage {
    /// Copies `archive` into an OCI layout under `dir` with skopeo, reads its configuration, and unpacks it with
    /// umoci into `dir/bundle`.
    ///
    /// # Errors
    /// [`SandboxError::Tool`] naming the command and its output (or the Debian package to install).
    pub fn unpack(archive: &Path, dir: &Path) -> Result<UnpackedImage, SandboxError> {
        std::fs::create_dir_all(dir).map_err(SandboxError::io("create directory", dir))?;
        let layout = dir.join("layout");
        let reference = format!("oci:{}:wmco", layout.display());
        run_tool(
            Command::new("skopeo")
                .args(["copy", "--quiet"])
                .arg(format!("oci-archive:{}", archive.display()))
                .arg(&reference),
            "skopeo",
        )?;
        let inspected = run_tool(Command::new("skopeo").args(["inspect", "--config"]).arg(&reference), "skopeo")?;
        let config: Value = serde_json::from_slice(&inspected.stdout)
            .map_err(|error| SandboxError::Image(format!("skopeo inspect --config printed no JSON: {error}")))?;
        let bundle = dir.join("bundle");
        run_tool(
            Command::new("umoci").args(["unpack", "--image"]).arg(format!("{}:wmco", layout.display())).arg(&bundle),
            "umoci",
        )?;
        Ok(UnpackedImage { layout, bundle, config })
    }

    /// The unpacked root file system.
    pub fn rootfs(&self) -> PathBuf {
        self.bundle.join("rootfs")
    }

    /// The image's `Entrypoint`.
    pub fn entrypoint(&self) -> Vec<String> {
        strings(&self.config["config"]["Entrypoint"])
    }

    /// The image's `Env`.
    pub fn env(&self) -> Vec<String> {
        strings(&self.config["config"]["Env"])
    }

    /// The image's `User` as a numeric UID, which `runAsNonRoot` needs to check it without reading the image's
    /// `/etc/passwd`.
    ///
    /// # Errors
    /// [`SandboxError::Image`] when `User` is empty or not numeric.
    pub fn numeric_user(&self) -> Result<u32, SandboxError> {
        let user = self.config["config"]["User"].as_str().unwrap_or_default();
        let uid = user.split(':').next().unwrap_or_default();
        uid.parse().map_err(|_| {
            SandboxError::Image(format!(
                "the image's USER {user:?} is not numeric: a kubelet refuses it under runAsNonRoot"
            ))
        })
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Runs a tool the test environment provides, failing with its output.
fn run_tool(command: &mut Command, package: &str) -> Result<Output, SandboxError> {
    let line = format!("{command:?}");
    let output = command.output().map_err(|error| {
        SandboxError::Tool(format!("cannot run {line}: {error} (install the Debian package {package})"))
    })?;
    if !output.status.success() {
        return Err(SandboxError::Tool(format!(
            "{line} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(output)
}

/// A `secret` volume mounted into the container (read-only, as the kubelet mounts it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMount {
    /// The Secret's name.
    pub secret: String,
    /// The mount path.
    pub path: String,
    /// `optional: true`: a missing Secret mounts an empty directory instead of keeping the pod from starting.
    pub optional: bool,
}

/// What the Deployment says about the operator's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodContainer {
    /// `args` (the image's entrypoint stays).
    pub args: Vec<String>,
    /// `env`, downward-API fields resolved.
    pub env: Vec<(String, String)>,
    /// `securityContext.readOnlyRootFilesystem`.
    pub read_only_root: bool,
    /// `runAsNonRoot` of the pod or the container.
    pub run_as_non_root: bool,
    /// The mount paths of `emptyDir` volumes.
    pub empty_dirs: Vec<String>,
    /// The `secret` volumes the container mounts.
    pub secret_mounts: Vec<SecretMount>,
    /// `securityContext.capabilities.drop` holds `ALL`.
    pub drops_all_capabilities: bool,
    /// `securityContext.allowPrivilegeEscalation` is false.
    pub no_new_privileges: bool,
}

impl PodContainer {
    /// The first container of `deployment` (a rendered manifest), for a pod named `pod_name` in `namespace`.
    ///
    /// ```
    /// let deployment = serde_json::json!({"spec": {"template": {"spec": {
    ///     "securityContext": {"runAsNonRoot": true},
    ///     "containers": [{"name": "wmco", "args": ["run"],
    ///         "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
    ///         "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
    ///             "capabilities": {"drop": ["ALL"]}},
    ///         "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}],
    ///     "volumes": [{"name": "tmp", "emptyDir": {}}]}}}});
    /// let container = wmco_sandbox::pod::PodContainer::from_deployment(&deployment, "wmco", "wmco-0")?;
    /// assert_eq!(container.env, [("POD_NAMESPACE".to_owned(), "wmco".to_owned())]);
    /// assert_eq!(container.empty_dirs, ["/tmp"]);
    /// assert!(container.read_only_root && container.run_as_non_root && container.drops_all_capabilities);
    /// # Ok::<(), wmco_sandbox::SandboxError>(())
    /// ```
    ///
    /// # Errors
    /// [`SandboxError::Image`] for a Deployment without a container, or an environment source this runner does
    /// not resolve.
    pub fn from_deployment(deployment: &Value, namespace: &str, pod_name: &str) -> Result<PodContainer, SandboxError> {
        let pod = &deployment["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        if !container.is_object() {
            return Err(SandboxError::Image("the Deployment has no container".to_owned()));
        }
        let mut env = Vec::new();
        for variable in container["env"].as_array().into_iter().flatten() {
            let name = variable["name"].as_str().unwrap_or_default().to_owned();
            let value = match (&variable["value"], variable["valueFrom"]["fieldRef"]["fieldPath"].as_str()) {
                (Value::String(value), _) => value.clone(),
                (_, Some("metadata.namespace")) => namespace.to_owned(),
                (_, Some("metadata.name")) => pod_name.to_owned(),
                _ => return Err(SandboxError::Image(format!("env {name}: a source this runner does not resolve"))),
            };
            env.push((name, value));
        }
        let empty_dir_volumes: Vec<&str> = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|volume| volume.get("emptyDir").is_some())
            .filter_map(|volume| volume["name"].as_str())
            .collect();
        let empty_dirs = container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|mount| mount["name"].as_str().is_some_and(|name| empty_dir_volumes.contains(&name)))
            .filter_map(|mount| mount["mountPath"].as_str().map(str::to_owned))
            .collect();
        let secret_mounts = container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|mount| {
                let volume = pod["volumes"].as_array()?.iter().find(|volume| volume["name"] == mount["name"])?;
                Some(SecretMount {
                    secret: volume["secret"]["secretName"].as_str()?.to_owned(),
                    path: mount["mountPath"].as_str()?.to_owned(),
                    optional: volume["secret"]["optional"] == true,
                })
            })
            .collect();
        let security = &container["securityContext"];
        Ok(PodContainer {
            args: strings(&container["args"]),
            env,
            read_only_root: security["readOnlyRootFilesystem"] == true,
            run_as_non_root: security["runAsNonRoot"] == true || pod["securityContext"]["runAsNonRoot"] == true,
            empty_dirs,
            secret_mounts,
            drops_all_capabilities: security["capabilities"]["drop"]
                .as_array()
                .is_some_and(|drop| drop.iter().any(|capability| capability == "ALL")),
            no_new_privileges: security["allowPrivilegeEscalation"] == false,
        })
    }
}

/// A container to run from an unpacked image: its own runtime bundle (config and scratch space) under `dir`, the
/// image's root file system shared.
#[derive(Debug, Clone)]
pub struct PodRun {
    /// The unpacked image.
    pub image: UnpackedImage,
    /// What the Deployment says.
    pub container: PodContainer,
    /// The container's name in runc (unique per run directory).
    pub id: String,
    /// The container's runtime bundle and scratch space.
    pub dir: PathBuf,
    /// The host directory mounted at [`SERVICE_ACCOUNT_DIR`].
    pub service_account: PathBuf,
    /// The host directory holding one directory per Secret the pod mounts ([`PodRun::write_secret_volume`]), as
    /// the kubelet materializes them.
    pub secrets: PathBuf,
    /// The API server, as `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
    pub api_server: SocketAddr,
}

impl PodRun {
    /// Writes the ServiceAccount's projected files (`token`, `ca.crt`, `namespace`, mode 0644 as the kubelet
    /// projects them) into `dir`.
    ///
    /// # Errors
    /// [`SandboxError::Io`].
    pub fn write_service_account(dir: &Path, token: &str, ca_pem: &str, namespace: &str) -> Result<(), SandboxError> {
        std::fs::create_dir_all(dir).map_err(SandboxError::io("create directory", dir))?;
        for (name, contents) in [("token", token), ("ca.crt", ca_pem), ("namespace", namespace)] {
            let path = dir.join(name);
            std::fs::write(&path, contents).map_err(SandboxError::io("write", &path))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                .map_err(SandboxError::io("set the permissions of", &path))?;
        }
        Ok(())
    }

    /// Writes a Secret's data as a `secret` volume: one file per key, mode 0644 (the volume's default mode).
    ///
    /// # Errors
    /// [`SandboxError::Io`].
    pub fn write_secret_volume(dir: &Path, data: &BTreeMap<String, ByteString>) -> Result<(), SandboxError> {
        std::fs::create_dir_all(dir).map_err(SandboxError::io("create directory", dir))?;
        for (key, value) in data {
            let path = dir.join(key);
            std::fs::write(&path, &value.0).map_err(SandboxError::io("write", &path))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                .map_err(SandboxError::io("set the permissions of", &path))?;
        }
        Ok(())
    }

    /// The runtime spec of the container with `args` after the entrypoint (the Deployment's, or a command's) and
    /// `extra_env` after the Deployment's environment.
    ///
    /// # Errors
    /// [`SandboxError::Image`] when the pod's security context refuses the image (root or non-numeric user under
    /// `runAsNonRoot`), [`SandboxError::Io`] when umoci's spec cannot be read or a directory not made.
    pub fn spec(&self, args: &[OsString], extra_env: &[(String, String)]) -> Result<Spec, SandboxError> {
        let config = self.image.bundle.join("config.json");
        let mut spec =
            Spec::load(&config).map_err(|error| SandboxError::Image(format!("{}: {error}", config.display())))?;
        let uid = self.image.numeric_user()?;
        if self.container.run_as_non_root && uid == 0 {
            return Err(SandboxError::Image("the image runs as root (UID 0) and the pod says runAsNonRoot".to_owned()));
        }
        let mut process = spec.process().clone().unwrap_or_default();
        let mut full_args = self.image.entrypoint();
        full_args.extend(args.iter().map(|arg| arg.to_string_lossy().into_owned()));
        process.set_args(Some(full_args));
        let mut env = self.image.env();
        env.push(format!("HOSTNAME={}", self.id));
        env.push(format!("KUBERNETES_SERVICE_HOST={}", self.api_server.ip()));
        env.push(format!("KUBERNETES_SERVICE_PORT={}", self.api_server.port()));
        env.extend(self.container.env.iter().chain(extra_env).map(|(name, value)| format!("{name}={value}")));
        process.set_env(Some(env));
        process.set_terminal(Some(false));
        process.set_cwd(PathBuf::from("/"));
        if self.container.drops_all_capabilities {
            process.set_capabilities(Some(no_capabilities()));
        }
        process.set_no_new_privileges(Some(self.container.no_new_privileges));
        spec.set_process(Some(process));
        spec.set_hostname(Some(self.id.clone()));

        let mut root = spec.root().clone().unwrap_or_default();
        root.set_path(self.image.rootfs());
        root.set_readonly(Some(self.container.read_only_root));
        spec.set_root(Some(root));

        let mut mounts = spec.mounts().clone().unwrap_or_default();
        mounts.push(bind(&self.service_account, SERVICE_ACCOUNT_DIR, true)?);
        for file in ["/etc/hosts", "/etc/resolv.conf"] {
            mounts.push(bind(Path::new(file), file, true)?);
        }
        for (index, path) in self.container.empty_dirs.iter().enumerate() {
            let source = self.dir.join(format!("empty-dir-{index}"));
            std::fs::create_dir_all(&source).map_err(SandboxError::io("create directory", &source))?;
            std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o777))
                .map_err(SandboxError::io("set the permissions of", &source))?;
            mounts.push(bind(&source, path, false)?);
        }
        for mount in &self.container.secret_mounts {
            let source = self.secrets.join(&mount.secret);
            if !source.is_dir() {
                if !mount.optional {
                    return Err(SandboxError::Image(format!(
                        "Secret {} is not there and its volume is not optional: a kubelet would not start the pod",
                        mount.secret
                    )));
                }
                std::fs::create_dir_all(&source).map_err(SandboxError::io("create directory", &source))?;
            }
            mounts.push(bind(&source, &mount.path, true)?);
        }
        spec.set_mounts(Some(mounts));

        if let Some(linux) = spec.linux_mut() {
            let namespaces = linux.namespaces().clone().unwrap_or_default();
            linux.set_namespaces(Some(
                namespaces.into_iter().filter(|namespace| namespace.typ() != LinuxNamespaceType::Network).collect(),
            ));
        }
        Ok(spec)
    }

    /// Writes the spec into the run's bundle directory and returns `runc run` for it (foreground: the
    /// container's output is runc's).
    ///
    /// # Errors
    /// As [`PodRun::spec`], and [`SandboxError::Io`] when the spec cannot be written.
    pub fn run_command(&self, args: &[OsString], extra_env: &[(String, String)]) -> Result<Command, SandboxError> {
        let spec = self.spec(args, extra_env)?;
        std::fs::create_dir_all(&self.dir).map_err(SandboxError::io("create directory", &self.dir))?;
        let config = self.dir.join("config.json");
        spec.save(&config)
            .map_err(|error| SandboxError::Image(format!("cannot write {}: {error}", config.display())))?;
        let mut command = Command::new("runc");
        command.arg("--root").arg(self.runc_root()).arg("run").arg("--bundle").arg(&self.dir).arg(&self.id);
        Ok(command)
    }

    /// Runs the container to its end with `args` and returns its output (for `wmco version`, `wmco payload
    /// verify /payload`).
    ///
    /// # Errors
    /// As [`PodRun::run_command`], and [`SandboxError::Tool`] when runc cannot start it.
    pub fn run_to_end(&self, args: &[&str]) -> Result<Output, SandboxError> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let mut command = self.run_command(&args, &[])?;
        let output = command.output().map_err(|error| {
            SandboxError::Tool(format!("cannot run runc: {error} (install the Debian package runc)"))
        })?;
        self.remove();
        Ok(output)
    }

    /// Kills and removes the container (nothing happens if it is gone).
    pub fn remove(&self) {
        let _ =
            Command::new("runc").arg("--root").arg(self.runc_root()).args(["delete", "--force"]).arg(&self.id).output();
    }

    /// runc's state directory for this run.
    pub fn runc_root(&self) -> PathBuf {
        self.dir.join("runc")
    }
}

/// Every capability set empty (`drop: [ALL]`).
fn no_capabilities() -> LinuxCapabilities {
    let mut capabilities = LinuxCapabilities::default();
    capabilities.set_bounding(Some(Capabilities::new()));
    capabilities.set_effective(Some(Capabilities::new()));
    capabilities.set_inheritable(Some(Capabilities::new()));
    capabilities.set_permitted(Some(Capabilities::new()));
    capabilities.set_ambient(Some(Capabilities::new()));
    capabilities
}

fn bind(source: &Path, destination: &str, read_only: bool) -> Result<Mount, SandboxError> {
    MountBuilder::default()
        .destination(destination)
        .typ("bind")
        .source(source)
        .options(vec!["rbind".to_owned(), if read_only { "ro" } else { "rw" }.to_owned()])
        .build()
        .map_err(|error| SandboxError::Image(format!("bind mount of {}: {error}", source.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_source_the_runner_cannot_resolve_is_named() {
        let deployment = serde_json::json!({"spec": {"template": {"spec": {"containers": [{
            "name": "wmco",
            "env": [{"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}}}});
        let error = PodContainer::from_deployment(&deployment, "ns", "pod").unwrap_err();
        assert_eq!(error.to_string(), "the operator image: env SECRET: a source this runner does not resolve");
    }

    #[test]
    fn a_root_or_named_user_is_refused_under_run_as_non_root() {
        let image = |user: &str| UnpackedImage {
            layout: PathBuf::new(),
            bundle: PathBuf::new(),
            config: serde_json::json!({"config": {"User": user}}),
        };
        assert_eq!(image("1001").numeric_user().unwrap(), 1001);
        assert_eq!(image("1001:0").numeric_user().unwrap(), 1001);
        let error = image("wmco").numeric_user().unwrap_err();
        assert!(error.to_string().contains("is not numeric"), "{error}");
    }
}
