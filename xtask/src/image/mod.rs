//! `cargo xtask image`: the operator image, built without a container engine, daemon or root.
//!
//! Three layers, written by [`oci`] so the same inputs give the same digest:
//! 1. base: `/etc/passwd` and `/etc/group` (user `wmco`, 1001, group 0 as OpenShift's arbitrary UIDs expect),
//!    `/etc/nsswitch.conf`, the CA bundle, the shared libraries the binary loads (copied from this machine, with
//!    their Debian packages listed in `/usr/share/doc/wmco/runtime-libraries.txt`), the licence, `/tmp`;
//! 2. the real Windows payload at `/payload` (`cargo xtask payload build`);
//! 3. the release `wmco` binary at `/usr/bin/wmco`.
//!
//! Config: `USER 1001`, entrypoint `/usr/bin/wmco`, command `run`, `WMCO_PAYLOAD_DIR=/payload`, port 8080, OCI
//! labels (title, version, revision, created, source, licences) and OpenShift's `io.k8s.*` labels. The creation
//! time is `SOURCE_DATE_EPOCH` or the commit's time, so a rebuild of the same commit is bit-identical.
//!
//! Output: an OCI image layout and an `oci-archive` tarball under `<target>/image/`, reused while the inputs (the
//! binary, the payload's `sha256sum`, the libraries, the CA bundle, name and time) are unchanged.

pub mod oci;
mod runtime;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use clap::Args;
use oci_spec::image::ConfigBuilder;
use sha2::{Digest as _, Sha256};

use crate::payload::build_real_payload;
use crate::sandbox::{Profile, build_wmco_with};
use crate::stages::workspace_root;
use oci::{ImageLayer, ImageSpec, Layer, WrittenImage, write_archive, write_image};
use runtime::{CA_BUNDLE, RuntimeLibrary, libraries_listing, runtime_libraries};

/// The repository the image is named after unless `--tag` says otherwise (the name `manifests/base` uses).
pub const DEFAULT_REPOSITORY: &str = "quay.io/wmco-rs/wmco";
/// The numeric user the operator runs as.
pub const IMAGE_USER: u32 = 1001;
/// Where the payload sits in the image.
pub const PAYLOAD_PATH: &str = "/payload";
/// Where the binary sits in the image.
pub const BINARY_PATH: &str = "/usr/bin/wmco";
/// The listener port `wmco run` serves `/metrics`, `/healthz` and `/readyz` on.
const LISTEN_PORT: &str = "8080/tcp";

/// Options of `cargo xtask image`.
#[derive(Debug, Args)]
pub struct ImageArgs {
    /// The image's name in the layout and the archive (default `quay.io/wmco-rs/wmco:v<version>`).
    #[arg(long, value_name = "NAME")]
    pub tag: Option<String>,
    /// Where to write `wmco/` (the OCI layout) and `wmco.oci.tar` (default `<target>/image`).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// The built image.
#[derive(Debug, Clone)]
pub struct BuiltImage {
    /// The layout, name, digest and size.
    pub image: WrittenImage,
    /// The `oci-archive` tarball.
    pub archive: PathBuf,
    /// Whether it was reused from an earlier build with the same inputs.
    pub reused: bool,
}

/// Builds the image and prints where it is and how to use it.
pub fn run(args: &ImageArgs) -> anyhow::Result<()> {
    let built = build_operator_image(args.tag.as_deref(), args.output.as_deref())?;
    print_usage(&built);
    Ok(())
}

/// Builds the release binary and the real payload (both cached), then the image unless an identical one exists.
///
/// # Errors
/// A build fails, or a file cannot be read or written.
pub fn build_operator_image(tag: Option<&str>, output: Option<&Path>) -> anyhow::Result<BuiltImage> {
    build_operator_image_from(&build_wmco_with(Profile::Release)?, tag, output)
}

/// The image of `binary` and the real payload (cached): `cargo xtask test` builds the image of its run from the
/// dev-profile `wmco` its tests use (the same code, compiled once), `cargo xtask image` from the release one.
///
/// # Errors
/// The payload's build fails, or a file cannot be read or written.
pub fn build_operator_image_from(
    binary: &Path,
    tag: Option<&str>,
    output: Option<&Path>,
) -> anyhow::Result<BuiltImage> {
    let payload = build_real_payload().context("building the real payload")?.dir;
    let version = env!("CARGO_PKG_VERSION");
    let name = tag.map_or_else(|| format!("{DEFAULT_REPOSITORY}:v{version}"), str::to_owned);
    let output = output.map_or_else(|| target_dir().join("image"), Path::to_path_buf);
    std::fs::create_dir_all(&output).with_context(|| format!("cannot create {}", output.display()))?;
    let source = Source::read(binary, &payload, &name, version)?;
    let layout = output.join("wmco");
    let archive = output.join("wmco.oci.tar");
    let key_file = output.join("wmco.inputs");
    let key = source.key()?;
    if archive.is_file()
        && std::fs::read_to_string(&key_file).is_ok_and(|cached| cached == key)
        && let Some(image) = read_written(&layout, &name)?
    {
        return Ok(BuiltImage { image, archive, reused: true });
    }
    let _ = std::fs::remove_file(&key_file);
    let image = write_image(&source.spec()?, &layout, &name)?;
    write_archive(&layout, &archive, source.created)?;
    std::fs::write(&key_file, key).with_context(|| format!("cannot write {}", key_file.display()))?;
    Ok(BuiltImage { image, archive, reused: false })
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

/// The layout's image if it is a complete layout naming `name`.
fn read_written(layout: &Path, name: &str) -> anyhow::Result<Option<WrittenImage>> {
    let Ok(text) = std::fs::read(layout.join("index.json")) else { return Ok(None) };
    let index: serde_json::Value = serde_json::from_slice(&text).context("the cached index.json is not JSON")?;
    let manifest = &index["manifests"][0];
    if manifest["annotations"][oci::REF_NAME_ANNOTATION] != name {
        return Ok(None);
    }
    let Some(digest) = manifest["digest"].as_str() else { return Ok(None) };
    let mut size = 0;
    for entry in std::fs::read_dir(layout.join("blobs/sha256")).context("cannot list the cached blobs")? {
        size += entry?.metadata()?.len();
    }
    Ok(Some(WrittenImage { layout: layout.to_path_buf(), name: name.to_owned(), digest: digest.to_owned(), size }))
}

fn print_usage(built: &BuiltImage) {
    let image = &built.image;
    let mib = image.size as f64 / (1024.0 * 1024.0);
    let registry_name = image.name.rsplit_once(':').map_or(image.name.as_str(), |(repository, _)| repository);
    println!("image    {}{}", image.name, if built.reused { " (unchanged inputs: reused)" } else { "" });
    println!("digest   {}", image.digest);
    println!("layout   {}", image.layout.display());
    println!("archive  {} ({mib:.1} MiB of blobs)", built.archive.display());
    println!();
    println!("Push it to your registry (skopeo, Debian package skopeo):");
    println!("  skopeo copy oci-archive:{} docker://{}", built.archive.display(), image.name);
    println!("Point the manifests at it by digest (from the overlay you install):");
    println!("  cd manifests/overlays/openshift && kustomize edit set image wmco={registry_name}@{}", image.digest);
    println!("Or load it into a local engine: podman load -i {0} / ctr image import {0}", built.archive.display());
}

/// Everything the image is built from, read once.
struct Source {
    binary: PathBuf,
    payload: PathBuf,
    libraries: Vec<RuntimeLibrary>,
    license: PathBuf,
    name: String,
    version: String,
    revision: String,
    created: u64,
}

impl Source {
    fn read(binary: &Path, payload: &Path, name: &str, version: &str) -> anyhow::Result<Source> {
        Ok(Source {
            binary: binary.to_path_buf(),
            payload: payload.to_path_buf(),
            libraries: runtime_libraries(binary)?,
            license: workspace_root().join("LICENSE"),
            name: name.to_owned(),
            version: version.to_owned(),
            revision: git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned()),
            created: source_date_epoch()?,
        })
    }

    /// A digest of every input: equal keys give the same image.
    fn key(&self) -> anyhow::Result<String> {
        let mut hasher = Sha256::new();
        let mut file = |path: &Path| -> anyhow::Result<()> {
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update(std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?);
            Ok(())
        };
        file(&self.binary)?;
        file(&self.payload.join(wmco_payload_manifest::CHECKSUM_FILE_NAME))?;
        file(Path::new(CA_BUNDLE))?;
        file(&self.license)?;
        for library in &self.libraries {
            file(&library.file)?;
        }
        hasher.update(format!("{}\n{}\n{}\n{}\n", self.name, self.version, self.revision, self.created));
        hasher.update(include_str!("mod.rs"));
        hasher.update(include_str!("oci.rs"));
        Ok(hex::encode(hasher.finalize()))
    }

    fn spec(&self) -> anyhow::Result<ImageSpec> {
        let mut base = Layer::default();
        base.bytes(
            "etc/passwd",
            format!(
                "root:x:0:0:root:/root:/usr/sbin/nologin\nwmco:x:{IMAGE_USER}:0:wmco operator:/tmp:/usr/sbin/nologin\n"
            )
            .into_bytes(),
            0o644,
        )
        .bytes("etc/group", b"root:x:0:\n".to_vec(), 0o644)
        .bytes("etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n".to_vec(), 0o644)
        .file(CA_BUNDLE, Path::new(CA_BUNDLE), 0o644)
        .file("usr/share/doc/wmco/LICENSE", &self.license, 0o644)
        .bytes("usr/share/doc/wmco/runtime-libraries.txt", libraries_listing(&self.libraries).into_bytes(), 0o644)
        .directory("tmp", 0o1777);
        for library in &self.libraries {
            base.file(&library.path.to_string_lossy(), &library.file, 0o755);
        }
        let mut payload = Layer::default();
        payload.tree(PAYLOAD_PATH, &self.payload, 0o644)?;
        let mut binary = Layer::default();
        binary.file(BINARY_PATH, &self.binary, 0o755);

        let created = oci::rfc3339(self.created)?;
        let labels = BTreeMap::from([
            ("org.opencontainers.image.title", "wmco".to_owned()),
            (
                "org.opencontainers.image.description",
                "The wmco operator: turns Windows Server hosts into Kubernetes worker nodes over SSH; the Windows node \
                 payload is under /payload"
                    .to_owned(),
            ),
            ("org.opencontainers.image.version", self.version.clone()),
            ("org.opencontainers.image.revision", self.revision.clone()),
            ("org.opencontainers.image.created", created.clone()),
            ("org.opencontainers.image.source", env!("CARGO_PKG_REPOSITORY").to_owned()),
            ("org.opencontainers.image.url", env!("CARGO_PKG_REPOSITORY").to_owned()),
            ("org.opencontainers.image.licenses", "Apache-2.0".to_owned()),
            ("org.opencontainers.image.vendor", "wmco-rs".to_owned()),
            ("io.k8s.display-name", "Windows Machine Config Operator (wmco-rs)".to_owned()),
            (
                "io.k8s.description",
                "Configures Windows Server hosts as worker nodes of an OpenShift or Kubernetes cluster".to_owned(),
            ),
            ("io.openshift.tags", "windows,wmco,operator".to_owned()),
            ("name", "wmco".to_owned()),
            ("version", self.version.clone()),
        ]);
        let config = ConfigBuilder::default()
            .user(IMAGE_USER.to_string())
            .env(vec![
                "PATH=/usr/bin".to_owned(),
                format!("WMCO_PAYLOAD_DIR={PAYLOAD_PATH}"),
                format!("SSL_CERT_FILE={CA_BUNDLE}"),
            ])
            .entrypoint(vec![BINARY_PATH.to_owned()])
            .cmd(vec!["run".to_owned()])
            .working_dir("/")
            .exposed_ports(vec![LISTEN_PORT.to_owned()])
            .stop_signal("SIGTERM")
            .labels(labels.iter().map(|(key, value)| ((*key).to_owned(), value.clone())).collect::<HashMap<_, _>>())
            .build()?;
        let annotations = labels
            .into_iter()
            .filter(|(key, _)| key.starts_with("org.opencontainers.image."))
            .map(|(key, value)| (key.to_owned(), value))
            .collect();
        Ok(ImageSpec {
            layers: vec![
                ImageLayer {
                    layer: base,
                    created_by: "cargo xtask image: users, CA bundle, runtime libraries, licence".to_owned(),
                },
                ImageLayer {
                    layer: payload,
                    created_by: format!("cargo xtask image: the Windows node payload at {PAYLOAD_PATH}"),
                },
                ImageLayer {
                    layer: binary,
                    created_by: format!("cargo xtask image: the release wmco at {BINARY_PATH}"),
                },
            ],
            config,
            created: self.created,
            annotations,
        })
    }
}

/// `SOURCE_DATE_EPOCH` if set, else the commit time of `HEAD`, else 0.
pub fn source_date_epoch() -> anyhow::Result<u64> {
    if let Some(value) = std::env::var_os("SOURCE_DATE_EPOCH").filter(|value| !value.is_empty()) {
        let text = value.to_string_lossy();
        return text.trim().parse().with_context(|| format!("SOURCE_DATE_EPOCH={text} is not a number of seconds"));
    }
    Ok(git(&["log", "-1", "--format=%ct", "HEAD"]).and_then(|text| text.parse().ok()).unwrap_or(0))
}

/// The trimmed output of `git ARGS` in the workspace, if it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).current_dir(workspace_root()).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
