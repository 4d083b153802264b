//! Integration tests of the payload crate: the product manifest against a synthetic payload on disk (every kind of
//! problem reported at once), host file sets per platform, and the rendered files against golden copies under
//! `tests/golden/` (regenerate with `UPDATE_GOLDEN=1 cargo test -p wmco-payload-manifest --test payload_manifest`).

#![allow(clippy::unwrap_used, reason = "test fixtures and helpers: a failed setup must panic")]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use wmco_payload_manifest::render::{
    self, ClusterInputs, HostInputs, ImageMirrorRule, LogRotation, MirrorKind, MirrorSourcePolicy, OverlayNetwork,
    Proxy, PullSecret, RegistryCa, RenderedFile, SecretToken,
};
use wmco_payload_manifest::{
    CHECKSUM_FILE_NAME, ChecksumList, HostFileContent, HostFileSet, HostFileSetError, Manifest, Payload, PayloadError,
    PayloadProblem, Platform, Sha256Digest, SyntheticScale, write_synthetic_payload,
};

const CERT_A: &str = "-----BEGIN CERTIFICATE-----\nQVBJIHNlcnZlciBDQSAoZml4dHVyZSk=\n-----END CERTIFICATE-----\n";
const CERT_B: &str = "-----BEGIN CERTIFICATE-----\nS3ViZWxldCBjbGllbnQgQ0EgKGZpeHR1cmUp\n-----END CERTIFICATE-----\n";
const CERT_C: &str = "-----BEGIN CERTIFICATE-----\nUmVnaXN0cnkgQ0EgKGZpeHR1cmUp\n-----END CERTIFICATE-----\n";
const TOKEN: &str = "fixture-node-bootstrapper-token";

fn workspace_payload_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../payload")
}

fn synthetic(manifest: &Manifest) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_synthetic_payload(manifest, &workspace_payload_dir(), dir.path(), SyntheticScale::Small).unwrap();
    dir
}

fn problems(dir: &Path, manifest: &Manifest) -> Vec<PayloadProblem> {
    match Payload::load(dir, manifest) {
        Err(PayloadError::Incomplete { problems, .. }) => problems,
        other => panic!("expected an incomplete payload, got {other:?}"),
    }
}

fn rewrite_checksums(dir: &Path, edit: impl FnOnce(&mut ChecksumList)) {
    let path = dir.join(CHECKSUM_FILE_NAME);
    let mut list = ChecksumList::parse(&fs::read_to_string(&path).unwrap());
    edit(&mut list);
    fs::write(path, list.render()).unwrap();
}

#[test]
fn synthetic_payload_of_the_product_manifest_verifies_and_is_marked_synthetic() {
    let manifest = Manifest::product().unwrap();
    let dir = synthetic(&manifest);
    let payload = Payload::load(dir.path(), &manifest).unwrap();
    assert!(payload.is_synthetic());
    assert_eq!(payload.files().count(), manifest.files().count());
    let kubelet = payload.file(&"kube-node/kubelet.exe".parse().unwrap()).unwrap();
    assert_eq!(kubelet.size, 7680);
    let web_config = "windows-exporter/windows-exporter-webconfig.yaml";
    let product_file = payload.file(&web_config.parse().unwrap()).unwrap();
    let committed = fs::read(workspace_payload_dir().join(web_config)).unwrap();
    assert_eq!(product_file.sha256, Sha256Digest::of_bytes(&committed));
}

#[test]
fn synthetic_payload_is_deterministic() {
    let manifest = Manifest::product().unwrap();
    let first = synthetic(&manifest);
    let second = synthetic(&manifest);
    let read = |dir: &tempfile::TempDir| fs::read_to_string(dir.path().join(CHECKSUM_FILE_NAME)).unwrap();
    assert_eq!(read(&first), read(&second));
}

#[test]
fn every_problem_is_reported_at_once_and_names_its_file() {
    let manifest = Manifest::product().unwrap();
    let dir = synthetic(&manifest);
    let root = dir.path();
    fs::remove_file(root.join("kube-node/kubelet.exe")).unwrap();
    fs::remove_file(root.join("ecr-credential-provider.exe")).unwrap();
    fs::write(root.join("cni/win-overlay.exe"), b"tampered").unwrap();
    fs::write(root.join("stray.dll"), b"?").unwrap();
    rewrite_checksums(root, |list| {
        list.digests.remove(&"csi-proxy/csi-proxy.exe".parse().unwrap());
    });
    fs::write(
        root.join(CHECKSUM_FILE_NAME),
        fs::read_to_string(root.join(CHECKSUM_FILE_NAME)).unwrap() + "not a checksum line\n",
    )
    .unwrap();

    let found: Vec<String> = problems(root, &manifest).iter().map(ToString::to_string).collect();
    let tampered = Sha256Digest::of_bytes(b"tampered");
    let listed_line = fs::read_to_string(root.join(CHECKSUM_FILE_NAME)).unwrap();
    let listed_overlay = listed_line.lines().find(|line| line.ends_with("cni/win-overlay.exe")).unwrap();
    let line_count = listed_line.lines().count();
    assert_eq!(
        found,
        vec![
            format!("cni/win-overlay.exe: SHA-256 is {tampered}, sha256sum lists {}", &listed_overlay[..64]),
            "csi-proxy/csi-proxy.exe: not listed in sha256sum".to_owned(),
            "ecr-credential-provider.exe: listed in sha256sum but missing".to_owned(),
            "kube-node/kubelet.exe: missing (required by component kubelet)".to_owned(),
            format!("sha256sum line {line_count}: \"not a checksum line\" (Malformed)"),
            "stray.dll: not declared in the manifest; remove it".to_owned(),
        ]
    );
}

#[test]
fn optional_component_may_be_absent_when_not_listed() {
    let manifest = Manifest::product().unwrap();
    let dir = synthetic(&manifest);
    fs::remove_file(dir.path().join("azure-cloud-node-manager.exe")).unwrap();
    rewrite_checksums(dir.path(), |list| {
        list.digests.remove(&"azure-cloud-node-manager.exe".parse().unwrap());
    });
    let payload = Payload::load(dir.path(), &manifest).unwrap();
    assert!(payload.file(&"azure-cloud-node-manager.exe".parse().unwrap()).is_none());

    let azure = HostFileSet::new(&manifest, &payload, Platform::Azure, vec![]).unwrap_err();
    assert_eq!(
        azure,
        HostFileSetError::MissingPayloadFile {
            path: "azure-cloud-node-manager.exe".parse().unwrap(),
            component: "azure-cloud-node-manager".into(),
            platform: Platform::Azure,
        }
    );
    assert!(HostFileSet::new(&manifest, &payload, Platform::Aws, vec![]).is_ok());
}

#[test]
fn missing_checksum_file_and_unreadable_directory_are_distinguished() {
    let manifest = Manifest::product().unwrap();
    let dir = synthetic(&manifest);
    fs::remove_file(dir.path().join(CHECKSUM_FILE_NAME)).unwrap();
    assert_eq!(problems(dir.path(), &manifest), vec![PayloadProblem::ChecksumFileMissing]);

    let absent = dir.path().join("no-such-dir");
    let error = Payload::load(&absent, &manifest).unwrap_err();
    assert!(matches!(&error, PayloadError::UnreadableDir { dir, .. } if dir == &absent), "{error:?}");
}

#[test]
fn host_file_sets_follow_the_platform_and_hash_stably() {
    let manifest = Manifest::product().unwrap();
    let dir = synthetic(&manifest);
    let payload = Payload::load(dir.path(), &manifest).unwrap();
    let destinations = |platform| -> BTreeSet<String> {
        let set = HostFileSet::new(&manifest, &payload, platform, vec![]).unwrap();
        set.files().iter().map(|file| file.destination.to_string()).collect()
    };
    let aws = destinations(Platform::Aws);
    let azure = destinations(Platform::Azure);
    let bare = destinations(Platform::None);
    assert!(aws.contains(r"C:\k\ecr-credential-provider.exe") && !bare.contains(r"C:\k\ecr-credential-provider.exe"));
    assert!(
        azure.contains(r"C:\k\azure-cloud-node-manager.exe") && !aws.contains(r"C:\k\azure-cloud-node-manager.exe")
    );
    assert_eq!(aws.len(), bare.len() + 1);

    let files = render::render_host_files(&full_cluster(), &host_with_overlay()).unwrap();
    let set = HostFileSet::new(&manifest, &payload, Platform::Aws, files.clone()).unwrap();
    let mut reversed = files;
    reversed.reverse();
    let again = HostFileSet::new(&manifest, &payload, Platform::Aws, reversed).unwrap();
    assert_eq!(set.content_hash(), again.content_hash());
    let kubelet = set.file(&"C:\\k\\kubelet.exe".parse().unwrap()).unwrap();
    assert!(
        matches!(&kubelet.content, HostFileContent::Payload { path, .. } if path.as_str() == "kube-node/kubelet.exe")
    );

    let other_token = ClusterInputs { bootstrap_token: SecretToken::new("rotated"), ..full_cluster() };
    let rotated = render::render_host_files(&other_token, &host_with_overlay()).unwrap();
    let changed = HostFileSet::new(&manifest, &payload, Platform::Aws, rotated).unwrap();
    assert_ne!(changed.content_hash(), set.content_hash());
}

fn minimal_cluster() -> ClusterInputs {
    ClusterInputs {
        api_server_url: "https://api-int.fixture.example:6443".into(),
        api_server_ca: CERT_A.parse().unwrap(),
        kubelet_client_ca: CERT_B.parse().unwrap(),
        bootstrap_token: SecretToken::new(TOKEN),
        service_cidr: "172.30.0.0/16".parse().unwrap(),
        cluster_dns: "172.30.0.10".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        platform: Platform::None,
        proxy: None,
        log_rotation: LogRotation::default(),
        image_mirrors: vec![],
        pull_secret: None,
        registry_cas: vec![],
        cloud_config: None,
    }
}

fn full_cluster() -> ClusterInputs {
    let pull_secret = PullSecret::from_docker_config_json(
        br#"{"auths":{"mirror.fixture.example:5000":{"auth":"bWlycm9yOnB3"},"quay.io":{"auth":"cXVheTpwdw=="}}}"#,
    )
    .unwrap();
    ClusterInputs {
        platform: Platform::Aws,
        proxy: Some(Proxy {
            http_proxy: Some("http://proxy.fixture.example:3128".into()),
            https_proxy: Some("http://proxy.fixture.example:3128".into()),
            no_proxy: Some(".cluster.local,.svc,172.30.0.0/16".into()),
            trusted_ca: Some(CERT_C.parse().unwrap()),
        }),
        log_rotation: LogRotation {
            file_size: Some("100M".into()),
            file_age: Some("168h".into()),
            flush_interval: Some("10s".into()),
        },
        image_mirrors: vec![
            ImageMirrorRule {
                source: "quay.io/openshift-release-dev/ocp-release".into(),
                mirrors: vec![
                    "mirror.fixture.example:5000/ocp/openshift-release-dev/ocp-release".into(),
                    "backup.fixture.example/openshift-release-dev/ocp-release".into(),
                ],
                kind: MirrorKind::Digest,
                source_policy: MirrorSourcePolicy::AllowContactingSource,
            },
            ImageMirrorRule {
                source: "quay.io/openshift-release-dev/ocp-v4.0-art-dev".into(),
                mirrors: vec!["mirror.fixture.example:5000/ocp/openshift-release-dev/ocp-v4.0-art-dev".into()],
                kind: MirrorKind::Tag,
                source_policy: MirrorSourcePolicy::AllowContactingSource,
            },
            ImageMirrorRule {
                source: "registry.fixture.example:8443/team".into(),
                mirrors: vec!["mirror.fixture.example:5000/team".into()],
                kind: MirrorKind::Tag,
                source_policy: MirrorSourcePolicy::NeverContactSource,
            },
        ],
        pull_secret: Some(pull_secret),
        registry_cas: vec![
            RegistryCa { registry: "registry.fixture.example:8443".into(), bundle: CERT_C.parse().unwrap() },
            RegistryCa { registry: "mirror.fixture.example:5000".into(), bundle: CERT_A.parse().unwrap() },
        ],
        cloud_config: Some("[Global]\nsecret-name = vsphere-creds\nsecret-namespace = kube-system\n".into()),
        ..minimal_cluster()
    }
}

fn host_without_overlay() -> HostInputs {
    HostInputs { node_name: "win-fixture-a".into(), node_ip: "10.0.128.7".parse().unwrap(), overlay: None }
}

fn host_with_overlay() -> HostInputs {
    HostInputs {
        overlay: Some(
            OverlayNetwork::for_node_subnet("10.132.1.0/24".parse().unwrap(), "10.0.128.7".parse().unwrap()).unwrap(),
        ),
        ..host_without_overlay()
    }
}

/// The golden path of a rendered file: its destination under `C:\`, one directory per path segment.
fn golden_path(scenario_dir: &Path, file: &RenderedFile) -> PathBuf {
    let destination = file.destination().as_str();
    destination.strip_prefix("C:\\").unwrap().split('\\').fold(scenario_dir.to_path_buf(), |path, part| path.join(part))
}

fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.map(Result::unwrap) {
            if entry.file_type().unwrap().is_dir() {
                found.extend(files_under(&entry.path()));
            } else {
                found.insert(entry.path());
            }
        }
    }
    found
}

fn check_golden(scenario: &str, files: &[RenderedFile]) {
    let scenario_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(scenario);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = fs::remove_dir_all(&scenario_dir);
        for file in files {
            let path = golden_path(&scenario_dir, file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, file.bytes()).unwrap();
        }
    }
    let expected_paths: BTreeSet<PathBuf> = files.iter().map(|file| golden_path(&scenario_dir, file)).collect();
    assert_eq!(files_under(&scenario_dir), expected_paths, "golden files of {scenario} differ from the rendered set");
    for file in files {
        let golden = fs::read_to_string(golden_path(&scenario_dir, file)).unwrap();
        let rendered = std::str::from_utf8(file.bytes()).unwrap();
        assert_eq!(
            rendered,
            golden,
            "{} differs from its golden copy; rerun with UPDATE_GOLDEN=1 if intended",
            file.destination()
        );
    }
}

#[test]
fn rendered_files_match_their_golden_copies() {
    check_golden("minimal", &render::render_host_files(&minimal_cluster(), &host_without_overlay()).unwrap());
    check_golden("full", &render::render_host_files(&full_cluster(), &host_with_overlay()).unwrap());
}

#[test]
fn bootstrap_kubeconfig_parses_as_a_kubeconfig() {
    for cluster in [minimal_cluster(), full_cluster()] {
        let file = render::bootstrap_kubeconfig(&cluster).unwrap();
        let config = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(file.bytes()).unwrap()).unwrap();
        let named_cluster = config.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(named_cluster.server.as_deref(), Some("https://api-int.fixture.example:6443"));
        assert_eq!(named_cluster.certificate_authority.as_deref(), Some(r"C:\k\bootstrap-ca.crt"));
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.token.is_some(), "the kubeconfig carries a token");
        assert_eq!(user.client_certificate, None);
        assert_eq!(config.current_context.as_deref(), Some("kubelet-bootstrap"));
        assert_eq!((config.api_version.as_deref(), config.kind.as_deref()), (Some("v1"), Some("Config")));
        assert_eq!(config.contexts[0].context.as_ref().unwrap().user.as_deref(), Some("kubelet"));
        assert!(std::str::from_utf8(file.bytes()).unwrap().contains(TOKEN));
        assert!(!format!("{file:?}").contains(TOKEN));
        assert!(!format!("{cluster:?}").contains(TOKEN));
    }
}

#[test]
fn cloud_node_manager_kubeconfig_parses_and_reads_its_token_from_the_token_file() {
    let files =
        render::cloud_node_manager_files("https://api-int.fixture.example:6443", &SecretToken::new(TOKEN)).unwrap();
    let destinations: Vec<&str> = files.iter().map(|file| file.destination().as_str()).collect();
    assert_eq!(destinations, [r"C:\k\cloud-node-manager-kubeconfig", r"C:\k\cloud-node-manager-token"]);
    let text = std::str::from_utf8(files[0].bytes()).unwrap();
    let config = kube::config::Kubeconfig::from_yaml(text).unwrap();
    let named_cluster = config.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(named_cluster.server.as_deref(), Some("https://api-int.fixture.example:6443"));
    assert_eq!(named_cluster.certificate_authority.as_deref(), Some(r"C:\k\bootstrap-ca.crt"));
    let user = config.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!((user.token.is_some(), user.token_file.as_deref()), (false, Some(r"C:\k\cloud-node-manager-token")));
    assert_eq!(config.current_context.as_deref(), Some("cloud-node-manager"));
    assert!(!text.contains(TOKEN), "the kubeconfig never holds the token: a rotation leaves it unchanged");
    assert_eq!(files[1].bytes(), TOKEN.as_bytes());
    assert!(!format!("{files:?}").contains(TOKEN));
}

#[test]
fn structured_files_parse_back_with_the_expected_values() {
    let files = render::render_host_files(&full_cluster(), &host_with_overlay()).unwrap();
    let find = |destination: &str| files.iter().find(|file| file.destination().as_str() == destination).unwrap();

    let kubelet: serde_json::Value = serde_json::from_slice(find(r"C:\k\kubelet.conf").bytes()).unwrap();
    assert_eq!(kubelet["clusterDNS"], serde_json::json!(["172.30.0.10"]));
    assert_eq!(kubelet["logging"]["flushFrequency"], "10s");

    let containerd: toml::Table =
        toml::from_str(std::str::from_utf8(find(r"C:\k\containerd\containerd_conf.toml").bytes()).unwrap()).unwrap();
    assert_eq!(
        containerd["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["config_path"].as_str(),
        Some(r"C:\k\containerd\registries")
    );

    let quay = std::str::from_utf8(find(r"C:\k\containerd\registries\quay.io\hosts.toml").bytes()).unwrap();
    let mirror_urls: Vec<&str> =
        quay.lines().filter(|line| line.starts_with("[host.") && !line.ends_with(".header]")).collect();
    assert_eq!(
        mirror_urls,
        vec![r#"[host."https://mirror.fixture.example:5000/v2/ocp"]"#, r#"[host."https://backup.fixture.example/v2"]"#]
    );
    let parsed: toml::Table = toml::from_str(quay).unwrap();
    assert_eq!(parsed["server"].as_str(), Some("https://quay.io"));
    let mirror = &parsed["host"]["https://mirror.fixture.example:5000/v2/ocp"];
    assert_eq!(mirror["capabilities"], toml::Value::Array(vec!["pull".into(), "resolve".into()]));
    assert_eq!(mirror["header"]["authorization"].as_str(), Some("Basic bWlycm9yOnB3"));

    let team: toml::Table = toml::from_str(
        std::str::from_utf8(find(r"C:\k\containerd\registries\registry.fixture.example_8443_\hosts.toml").bytes())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(team["server"].as_str(), Some("https://mirror.fixture.example:5000/v2"));
    assert_eq!(team["override_path"].as_bool(), Some(true));

    let proxy: serde_json::Value = serde_json::from_slice(find(r"C:\k\kube-proxy.conf").bytes()).unwrap();
    assert_eq!(proxy["clusterCIDR"], "10.132.1.0/24");
    assert_eq!(proxy["winkernel"]["sourceVip"], "10.132.1.2");
    let cni: serde_json::Value = serde_json::from_slice(find(r"C:\k\cni\config\cni.conf").bytes()).unwrap();
    assert_eq!(cni["policies"][2]["value"]["settings"]["providerAddress"], "10.0.128.7");
}
