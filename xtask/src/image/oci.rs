//! A reproducible OCI image writer: [`Layer`]s become gzip'd tar blobs whose bytes depend on nothing but their
//! entries and one timestamp (entries sorted by path; owner 0:0; the modes given; every mtime the image's creation
//! time; gzip without a name or time), and [`write_image`] writes the config, manifest and index as canonical JSON
//! (object keys sorted) into an OCI image layout. The same inputs therefore give the same manifest digest, on any
//! machine and in any run. [`write_archive`] packs a layout as an `oci-archive` tarball (the layout directory as one
//! tar, itself written deterministically) that skopeo, podman and containerd import.
//!
//! No container engine, daemon or root is involved; the tools that check the result (skopeo, umoci, runc) are not
//! the ones that wrote it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use flate2::{Compression, GzBuilder};
use oci_spec::image::{
    Config, DescriptorBuilder, History, HistoryBuilder, ImageConfigurationBuilder, ImageIndexBuilder,
    ImageManifestBuilder, MediaType, RootFsBuilder, Sha256Digest,
};
use sha2::{Digest as _, Sha256};

/// The annotation naming an image in a layout's `index.json` (OCI image spec).
pub const REF_NAME_ANNOTATION: &str = "org.opencontainers.image.ref.name";
/// The annotation containerd's `ctr import` names the image by.
const CONTAINERD_NAME_ANNOTATION: &str = "io.containerd.image.name";

/// Where an entry's bytes come from.
#[derive(Debug, Clone)]
enum Content {
    Directory,
    File(PathBuf),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Entry {
    content: Content,
    mode: u32,
}

/// The entries of one layer, keyed by their path inside the image (no leading `/`). Parent directories are added
/// with mode 0755 unless given.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    entries: BTreeMap<String, Entry>,
}

impl Layer {
    /// A directory with `mode`.
    pub fn directory(&mut self, path: &str, mode: u32) -> &mut Self {
        self.insert(path, Entry { content: Content::Directory, mode })
    }

    /// A file with `bytes`.
    pub fn bytes(&mut self, path: &str, bytes: Vec<u8>, mode: u32) -> &mut Self {
        self.insert(path, Entry { content: Content::Bytes(bytes), mode })
    }

    /// A file copied from `source` (read when the layer is written).
    pub fn file(&mut self, path: &str, source: &Path, mode: u32) -> &mut Self {
        self.insert(path, Entry { content: Content::File(source.to_path_buf()), mode })
    }

    /// Every file under `source` below `path`: directories 0755, files `file_mode`; symbolic links are refused.
    ///
    /// # Errors
    /// The tree cannot be read, or holds something other than files and directories.
    pub fn tree(&mut self, path: &str, source: &Path, file_mode: u32) -> anyhow::Result<&mut Self> {
        self.directory(path, 0o755);
        let mut pending = vec![(path.to_owned(), source.to_path_buf())];
        while let Some((inside, directory)) = pending.pop() {
            let listing =
                std::fs::read_dir(&directory).with_context(|| format!("cannot list {}", directory.display()))?;
            for item in listing {
                let item = item.with_context(|| format!("cannot list {}", directory.display()))?;
                let name = item
                    .file_name()
                    .into_string()
                    .map_err(|name| anyhow::anyhow!("{}: file name {name:?} is not UTF-8", directory.display()))?;
                let child = format!("{inside}/{name}");
                let kind = item.file_type().with_context(|| format!("cannot stat {}", item.path().display()))?;
                if kind.is_dir() {
                    self.directory(&child, 0o755);
                    pending.push((child, item.path()));
                } else if kind.is_file() {
                    self.file(&child, &item.path(), file_mode);
                } else {
                    bail!("{} is neither a file nor a directory", item.path().display());
                }
            }
        }
        Ok(self)
    }

    fn insert(&mut self, path: &str, entry: Entry) -> &mut Self {
        let path = path.trim_matches('/');
        let mut parent = Path::new(path).parent();
        while let Some(directory) = parent.and_then(Path::to_str).filter(|directory| !directory.is_empty()) {
            self.entries.entry(directory.to_owned()).or_insert(Entry { content: Content::Directory, mode: 0o755 });
            parent = Path::new(directory).parent();
        }
        self.entries.insert(path.to_owned(), entry);
        self
    }

    /// Writes the layer as a gzip'd tar into `blobs` (an OCI layout's `blobs/sha256`), every entry owned by 0:0
    /// with `mtime`.
    fn write(&self, blobs: &Path, mtime: u64) -> anyhow::Result<WrittenLayer> {
        let temporary = blobs.join(".layer.partial");
        let file = File::create(&temporary).with_context(|| format!("cannot create {}", temporary.display()))?;
        let compressed = Hashing::new(BufWriter::new(file));
        let gzip = GzBuilder::new().mtime(0).write(compressed, Compression::new(6));
        let mut tar = tar::Builder::new(Hashing::new(gzip));
        for (path, entry) in &self.entries {
            let mut header = tar::Header::new_gnu();
            header.set_mode(entry.mode);
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(mtime);
            match &entry.content {
                Content::Directory => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_size(0);
                    tar.append_data(&mut header, format!("{path}/"), io::empty())
                }
                Content::Bytes(bytes) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(bytes.len() as u64);
                    tar.append_data(&mut header, path, bytes.as_slice())
                }
                Content::File(source) => {
                    let file = File::open(source).with_context(|| format!("cannot open {}", source.display()))?;
                    let size = file.metadata().with_context(|| format!("cannot stat {}", source.display()))?.len();
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(size);
                    tar.append_data(&mut header, path, file.take(size))
                }
            }
            .with_context(|| format!("cannot write {path} into the layer"))?;
        }
        let uncompressed = tar.into_inner().context("cannot finish the layer's tar")?;
        let (gzip, diff_id, _) = uncompressed.finish();
        let compressed = gzip.finish().context("cannot finish the layer's gzip")?;
        let (mut file, digest, size) = compressed.finish();
        file.flush().context("cannot write the layer")?;
        let path = blobs.join(&digest);
        std::fs::rename(&temporary, &path).with_context(|| format!("cannot move the layer to {}", path.display()))?;
        Ok(WrittenLayer { digest, diff_id, size })
    }
}

/// A writer that hashes (SHA-256) and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing { inner, hasher: Sha256::new(), written: 0 }
    }

    /// The inner writer, the lower-case hex SHA-256 and the byte count of everything written.
    fn finish(self) -> (W, String, u64) {
        (self.inner, hex::encode(self.hasher.finalize()), self.written)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct WrittenLayer {
    digest: String,
    diff_id: String,
    size: u64,
}

/// One layer of an image and the history line that says what it holds.
#[derive(Debug, Clone)]
pub struct ImageLayer {
    /// The layer.
    pub layer: Layer,
    /// What it holds (`created_by` of its history entry).
    pub created_by: String,
}

/// Everything an image is made of.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    /// The layers, base first.
    pub layers: Vec<ImageLayer>,
    /// The runtime configuration (user, entrypoint, environment, labels...).
    pub config: Config,
    /// The creation time, seconds since the epoch: every file's mtime and the config's `created`.
    pub created: u64,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// What [`write_image`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenImage {
    /// The OCI image layout directory.
    pub layout: PathBuf,
    /// The image's name in the layout (`org.opencontainers.image.ref.name`).
    pub name: String,
    /// The manifest digest (`sha256:…`): what a registry, `kubectl` and the kubelet call the image.
    pub digest: String,
    /// The sum of the blob sizes (config, manifest and compressed layers), in bytes.
    pub size: u64,
}

/// Writes `spec` as an OCI image layout at `layout` (replacing what was there), the image named `name` in its
/// index.
///
/// # Errors
/// A file cannot be read or written, or the OCI objects cannot be built.
pub fn write_image(spec: &ImageSpec, layout: &Path, name: &str) -> anyhow::Result<WrittenImage> {
    if layout.exists() {
        std::fs::remove_dir_all(layout).with_context(|| format!("cannot remove {}", layout.display()))?;
    }
    let blobs = layout.join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs).with_context(|| format!("cannot create {}", blobs.display()))?;
    let created = rfc3339(spec.created)?;

    let mut layer_descriptors = Vec::new();
    let mut diff_ids = Vec::new();
    let mut history: Vec<History> = Vec::new();
    let mut size = 0;
    for image_layer in &spec.layers {
        let written = image_layer.layer.write(&blobs, spec.created)?;
        size += written.size;
        layer_descriptors.push(
            DescriptorBuilder::default()
                .media_type(MediaType::ImageLayerGzip)
                .digest(sha256(&written.digest)?)
                .size(written.size)
                .build()?,
        );
        diff_ids.push(format!("sha256:{}", written.diff_id));
        history.push(
            HistoryBuilder::default().created(created.clone()).created_by(image_layer.created_by.clone()).build()?,
        );
    }
    let configuration = ImageConfigurationBuilder::default()
        .created(created)
        .architecture(oci_spec::image::Arch::Amd64)
        .os(oci_spec::image::Os::Linux)
        .config(spec.config.clone())
        .rootfs(RootFsBuilder::default().typ("layers").diff_ids(diff_ids).build()?)
        .history(history)
        .build()?;
    let config_blob = write_json_blob(&blobs, &serde_json::to_value(&configuration)?)?;
    size += config_blob.size;

    let manifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(
            DescriptorBuilder::default()
                .media_type(MediaType::ImageConfig)
                .digest(sha256(&config_blob.digest)?)
                .size(config_blob.size)
                .build()?,
        )
        .layers(layer_descriptors)
        .annotations(spec.annotations.clone().into_iter().collect::<std::collections::HashMap<_, _>>())
        .build()?;
    let manifest_blob = write_json_blob(&blobs, &serde_json::to_value(&manifest)?)?;
    size += manifest_blob.size;

    let index = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![
            DescriptorBuilder::default()
                .media_type(MediaType::ImageManifest)
                .digest(sha256(&manifest_blob.digest)?)
                .size(manifest_blob.size)
                .annotations(std::collections::HashMap::from([
                    (REF_NAME_ANNOTATION.to_owned(), name.to_owned()),
                    (CONTAINERD_NAME_ANNOTATION.to_owned(), name.to_owned()),
                ]))
                .build()?,
        ])
        .build()?;
    write_file(&layout.join("index.json"), &canonical_json(&serde_json::to_value(&index)?))?;
    write_file(&layout.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    Ok(WrittenImage {
        layout: layout.to_path_buf(),
        name: name.to_owned(),
        digest: format!("sha256:{}", manifest_blob.digest),
        size,
    })
}

/// Packs the OCI layout `layout` into the `oci-archive` tarball `archive` (written beside it, then renamed):
/// `oci-layout`, `index.json` and every blob, owned by 0:0, mode 0644 (directories 0755), mtime `mtime`.
///
/// # Errors
/// A file cannot be read or written.
pub fn write_archive(layout: &Path, archive: &Path, mtime: u64) -> anyhow::Result<()> {
    let mut layer = Layer::default();
    layer.file("oci-layout", &layout.join("oci-layout"), 0o644).file("index.json", &layout.join("index.json"), 0o644);
    layer.tree("blobs", &layout.join("blobs"), 0o644)?;
    let temporary = archive.with_extension("partial");
    let file = File::create(&temporary).with_context(|| format!("cannot create {}", temporary.display()))?;
    let mut tar = tar::Builder::new(BufWriter::new(file));
    for (path, entry) in &layer.entries {
        let mut header = tar::Header::new_ustar();
        header.set_mode(entry.mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        match &entry.content {
            Content::Directory => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, format!("{path}/"), io::empty())
            }
            Content::File(source) => {
                let file = File::open(source).with_context(|| format!("cannot open {}", source.display()))?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(file.metadata()?.len());
                tar.append_data(&mut header, path, file)
            }
            Content::Bytes(bytes) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, path, bytes.as_slice())
            }
        }
        .with_context(|| format!("cannot write {path} into {}", temporary.display()))?;
    }
    let mut writer = tar.into_inner().context("cannot finish the archive")?;
    writer.flush().context("cannot write the archive")?;
    drop(writer);
    std::fs::rename(&temporary, archive).with_context(|| format!("cannot move the archive to {}", archive.display()))
}

struct Blob {
    digest: String,
    size: u64,
}

fn write_json_blob(blobs: &Path, value: &serde_json::Value) -> anyhow::Result<Blob> {
    let bytes = canonical_json(value);
    let digest = hex::encode(Sha256::digest(&bytes));
    write_file(&blobs.join(&digest), &bytes)?;
    Ok(Blob { digest, size: bytes.len() as u64 })
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn sha256(hex: &str) -> anyhow::Result<Sha256Digest> {
    hex.parse().with_context(|| format!("{hex} is not a SHA-256 digest"))
}

/// RFC 3339 UTC time of `seconds` since the epoch.
pub fn rfc3339(seconds: u64) -> anyhow::Result<String> {
    let seconds = i64::try_from(seconds).context("the creation time is out of range")?;
    Ok(jiff::Timestamp::from_second(seconds).context("the creation time is out of range")?.to_string())
}

/// `value` as compact JSON with every object's keys sorted, whatever map type produced it.
pub fn canonical_json(value: &serde_json::Value) -> Vec<u8> {
    fn write(value: &serde_json::Value, out: &mut Vec<u8>) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push(b'{');
                for (position, key) in keys.into_iter().enumerate() {
                    if position > 0 {
                        out.push(b',');
                    }
                    out.extend(serde_json::Value::String(key.clone()).to_string().into_bytes());
                    out.push(b':');
                    write(&map[key], out);
                }
                out.push(b'}');
            }
            serde_json::Value::Array(items) => {
                out.push(b'[');
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        out.push(b',');
                    }
                    write(item, out);
                }
                out.push(b']');
            }
            scalar => out.extend(scalar.to_string().into_bytes()),
        }
    }
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path, binary: &[u8], created: u64) -> ImageSpec {
        let payload = dir.join("payload");
        std::fs::create_dir_all(payload.join("cni")).unwrap();
        std::fs::write(payload.join("kubelet.exe"), b"MZ kubelet").unwrap();
        std::fs::write(payload.join("cni").join("win-overlay.exe"), b"MZ overlay").unwrap();
        let mut base = Layer::default();
        base.bytes("etc/passwd", b"wmco:x:1001:0::/:/sbin/nologin\n".to_vec(), 0o644).directory("tmp", 0o1777);
        let mut payload_layer = Layer::default();
        payload_layer.tree("payload", &payload, 0o644).unwrap();
        let mut binary_layer = Layer::default();
        binary_layer.bytes("usr/bin/wmco", binary.to_vec(), 0o755);
        let config = oci_spec::image::ConfigBuilder::default()
            .user("1001")
            .entrypoint(vec!["/usr/bin/wmco".to_owned()])
            .labels(std::collections::HashMap::from([
                ("org.opencontainers.image.version".to_owned(), "0.1.0".to_owned()),
                ("org.opencontainers.image.title".to_owned(), "wmco".to_owned()),
                ("io.k8s.display-name".to_owned(), "wmco".to_owned()),
            ]))
            .build()
            .unwrap();
        ImageSpec {
            layers: vec![
                ImageLayer { layer: base, created_by: "base".into() },
                ImageLayer { layer: payload_layer, created_by: "payload".into() },
                ImageLayer { layer: binary_layer, created_by: "binary".into() },
            ],
            config,
            created,
            annotations: BTreeMap::from([("org.opencontainers.image.revision".to_owned(), "abc".to_owned())]),
        }
    }

    fn tree_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(directory) = pending.pop() {
            for item in std::fs::read_dir(directory).unwrap() {
                let path = item.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let relative = path.strip_prefix(dir).unwrap().display().to_string();
                    files.insert(relative, std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }

    #[test]
    fn the_same_inputs_give_the_same_digest_and_bytes_and_any_change_another_digest() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_image(&sample(dir.path(), b"ELF wmco", 1_700_000_000), &dir.path().join("a"), "w:1").unwrap();
        let second =
            write_image(&sample(dir.path(), b"ELF wmco", 1_700_000_000), &dir.path().join("b"), "w:1").unwrap();
        assert_eq!(first.digest, second.digest);
        assert_eq!(tree_bytes(&first.layout), tree_bytes(&second.layout));
        write_archive(&first.layout, &dir.path().join("a.tar"), 1_700_000_000).unwrap();
        write_archive(&second.layout, &dir.path().join("b.tar"), 1_700_000_000).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.tar")).unwrap(), std::fs::read(dir.path().join("b.tar")).unwrap());

        let other_binary = write_image(&sample(dir.path(), b"ELF wmco 2", 1_700_000_000), &dir.path().join("c"), "w:1");
        let other_time = write_image(&sample(dir.path(), b"ELF wmco", 1_700_000_001), &dir.path().join("d"), "w:1");
        assert_ne!(other_binary.unwrap().digest, first.digest);
        assert_ne!(other_time.unwrap().digest, first.digest);
    }

    #[test]
    fn a_layer_is_a_sorted_tar_owned_by_root_with_the_given_modes_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let image = write_image(&sample(dir.path(), b"ELF wmco", 1_700_000_000), &dir.path().join("a"), "w:1").unwrap();
        let manifest_hex = image.digest.trim_start_matches("sha256:");
        let blobs = image.layout.join("blobs/sha256");
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(blobs.join(manifest_hex)).unwrap()).unwrap();
        let payload_digest = manifest["layers"][1]["digest"].as_str().unwrap().trim_start_matches("sha256:");
        let gzip = File::open(blobs.join(payload_digest)).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(gzip));
        let entries: Vec<(String, u32, u64, u64, u64)> = tar
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().display().to_string(),
                    header.mode().unwrap(),
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                    header.mtime().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("payload/".to_owned(), 0o755, 0, 0, 1_700_000_000),
                ("payload/cni/".to_owned(), 0o755, 0, 0, 1_700_000_000),
                ("payload/cni/win-overlay.exe".to_owned(), 0o644, 0, 0, 1_700_000_000),
                ("payload/kubelet.exe".to_owned(), 0o644, 0, 0, 1_700_000_000),
            ]
        );
        let config_hex = manifest["config"]["digest"].as_str().unwrap().trim_start_matches("sha256:");
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(blobs.join(config_hex)).unwrap()).unwrap();
        assert_eq!(config["created"], "2023-11-14T22:13:20Z");
        assert_eq!(config["config"]["User"], "1001");
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 3);
        assert_eq!(manifest["annotations"]["org.opencontainers.image.revision"], "abc");
    }

    #[test]
    fn the_archive_names_the_image_and_holds_the_layout() {
        let dir = tempfile::tempdir().unwrap();
        let image =
            write_image(&sample(dir.path(), b"ELF", 1), &dir.path().join("layout"), "quay.io/wmco-rs/wmco:v0.1.0")
                .unwrap();
        let archive = dir.path().join("wmco.oci.tar");
        write_archive(&image.layout, &archive, 1).unwrap();
        let mut tar = tar::Archive::new(File::open(&archive).unwrap());
        let mut paths = Vec::new();
        let mut index = serde_json::Value::Null;
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            if path == "index.json" {
                index = serde_json::from_reader(&mut entry).unwrap();
            }
            paths.push(path);
        }
        assert_eq!(index["manifests"][0]["annotations"][REF_NAME_ANNOTATION], "quay.io/wmco-rs/wmco:v0.1.0");
        assert_eq!(index["manifests"][0]["digest"], image.digest.as_str());
        assert_eq!(&paths[..4], ["blobs/", "blobs/sha256/", paths[2].as_str(), paths[3].as_str()]);
        assert!(paths.contains(&"index.json".to_owned()) && paths.contains(&"oci-layout".to_owned()));
        assert!(!dir.path().join("wmco.oci.partial").exists());
    }

    #[test]
    fn canonical_json_sorts_every_object_s_keys() {
        let value = serde_json::json!({"b": 1, "a": {"d": [true, null], "c": "x\"y"}});
        assert_eq!(canonical_json(&value), br#"{"a":{"c":"x\"y","d":[true,null]},"b":1}"#);
    }

    #[test]
    fn parent_directories_are_implied_and_a_given_mode_wins() {
        let mut layer = Layer::default();
        layer.bytes("usr/share/doc/wmco/LICENSE", b"Apache-2.0".to_vec(), 0o644).directory("tmp", 0o1777);
        let paths: Vec<&str> = layer.entries.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            ["tmp", "usr", "usr/share", "usr/share/doc", "usr/share/doc/wmco", "usr/share/doc/wmco/LICENSE"]
        );
        assert_eq!(layer.entries["tmp"].mode, 0o1777);
    }
}
