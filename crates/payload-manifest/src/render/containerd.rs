//! containerd's configuration (config version 2, containerd 1.7), built as typed structs and serialized with the
//! `toml` crate: the named-pipe address, root and state directories, the pause image, the process-isolated runhcs
//! runtime, the CNI directories and the per-registry `hosts.toml` directory.

use serde::Serialize;

use super::destinations::{
    CNI_BIN_DIR, CNI_CONFIG_DIR, CONTAINERD_CONFIG, CONTAINERD_ROOT, CONTAINERD_STATE, REGISTRIES_DIR, destination,
};
use super::{RenderError, RenderedFile};

/// The pause (sandbox) image of Windows pods.
pub const SANDBOX_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/pause:3.9";
/// containerd's gRPC named pipe.
pub const CONTAINERD_PIPE: &str = r"\\.\pipe\containerd-containerd";
/// The runtime handler of process-isolated Windows containers.
const RUNTIME_NAME: &str = "runhcs-wcow-process";

#[derive(Serialize)]
struct ContainerdConfig {
    version: u8,
    root: &'static str,
    state: &'static str,
    grpc: Grpc,
    plugins: Plugins,
}

#[derive(Serialize)]
struct Grpc {
    address: &'static str,
}

#[derive(Serialize)]
struct Plugins {
    #[serde(rename = "io.containerd.grpc.v1.cri")]
    cri: Cri,
}

#[derive(Serialize)]
struct Cri {
    sandbox_image: &'static str,
    containerd: CriContainerd,
    cni: Cni,
    registry: Registry,
}

#[derive(Serialize)]
struct CriContainerd {
    snapshotter: &'static str,
    default_runtime_name: &'static str,
    runtimes: Runtimes,
}

#[derive(Serialize)]
struct Runtimes {
    #[serde(rename = "runhcs-wcow-process")]
    runhcs_wcow_process: Runtime,
}

#[derive(Serialize)]
struct Runtime {
    runtime_type: &'static str,
}

#[derive(Serialize)]
struct Cni {
    bin_dir: &'static str,
    conf_dir: &'static str,
}

#[derive(Serialize)]
struct Registry {
    config_path: &'static str,
}

/// containerd's configuration at `C:\k\containerd\containerd_conf.toml`. It does not depend on the cluster:
/// registry mirrors live in the `hosts.toml` files of [`super::registry_hosts_files`].
pub fn containerd_config() -> Result<RenderedFile, RenderError> {
    let config = ContainerdConfig {
        version: 2,
        root: CONTAINERD_ROOT,
        state: CONTAINERD_STATE,
        grpc: Grpc { address: CONTAINERD_PIPE },
        plugins: Plugins {
            cri: Cri {
                sandbox_image: SANDBOX_IMAGE,
                containerd: CriContainerd {
                    snapshotter: "windows",
                    default_runtime_name: RUNTIME_NAME,
                    runtimes: Runtimes { runhcs_wcow_process: Runtime { runtime_type: "io.containerd.runhcs.v1" } },
                },
                cni: Cni { bin_dir: CNI_BIN_DIR, conf_dir: CNI_CONFIG_DIR },
                registry: Registry { config_path: REGISTRIES_DIR },
            },
        },
    };
    let text = toml::to_string(&config)
        .map_err(|error| RenderError::Serialize { file: "containerd config", message: error.to_string() })?;
    Ok(RenderedFile::new(destination(CONTAINERD_CONFIG, "containerd config")?, text.into_bytes()))
}
