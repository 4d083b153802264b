//! Criterion benchmarks of the per-host hot paths: rendering every configuration file of a host, building its
//! `HostFileSet` (content hash included), and verifying a synthetic payload (hashing on all cores) at small and real
//! scale (the real-scale payload, ≈ 430 MiB, is written to a temporary directory only when that benchmark runs).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use wmco_payload_manifest::render::{
    self, ClusterInputs, HostInputs, ImageMirrorRule, LogRotation, MirrorKind, MirrorSourcePolicy, OverlayNetwork,
    SecretToken,
};
use wmco_payload_manifest::{HostFileSet, Manifest, Payload, Platform, SyntheticScale, write_synthetic_payload};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nQmVuY2htYXJrIENB\n-----END CERTIFICATE-----\n";

fn cluster() -> Option<ClusterInputs> {
    let mirrors = (0..20)
        .map(|index| ImageMirrorRule {
            source: format!("registry{}.example.com/team{index}/app", index % 5),
            mirrors: vec![
                format!("mirror.example.com:5000/team{index}/app"),
                format!("backup.example.com/m/team{index}/app"),
            ],
            kind: if index % 2 == 0 { MirrorKind::Digest } else { MirrorKind::Tag },
            source_policy: MirrorSourcePolicy::AllowContactingSource,
        })
        .collect();
    Some(ClusterInputs {
        api_server_url: "https://api-int.example.com:6443".into(),
        api_server_ca: PEM.parse().ok()?,
        kubelet_client_ca: PEM.parse().ok()?,
        bootstrap_token: SecretToken::new("benchmark-token"),
        service_cidr: "172.30.0.0/16".parse().ok()?,
        cluster_dns: "172.30.0.10".parse().ok()?,
        cluster_domain: "cluster.local".into(),
        platform: Platform::Aws,
        proxy: None,
        log_rotation: LogRotation::default(),
        image_mirrors: mirrors,
        pull_secret: None,
        registry_cas: vec![],
        cloud_config: None,
    })
}

fn host() -> Option<HostInputs> {
    Some(HostInputs {
        node_name: "win-bench".into(),
        node_ip: "10.0.0.7".parse().ok()?,
        overlay: Some(OverlayNetwork {
            node_subnet: "10.132.1.0/24".parse().ok()?,
            management_ip: "10.0.0.7".parse().ok()?,
            source_vip: "10.132.1.2".parse().ok()?,
        }),
    })
}

fn benchmarks(criterion: &mut Criterion) {
    let (Some(cluster), Some(host)) = (cluster(), host()) else { panic!("benchmark fixtures are valid") };
    let Ok(manifest) = Manifest::product() else { panic!("the product manifest is valid") };
    let Ok(dir) = tempfile::tempdir() else { panic!("a temporary directory") };
    let product_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../payload");
    if let Err(error) = write_synthetic_payload(&manifest, &product_dir, dir.path(), SyntheticScale::Small) {
        panic!("synthetic payload: {error}");
    }
    let Ok(payload) = Payload::load(dir.path(), &manifest) else { panic!("the synthetic payload verifies") };

    criterion.bench_function("render_host_files (AWS, overlay, 5 mirrored registries)", |bencher| {
        bencher.iter(|| render::render_host_files(black_box(&cluster), black_box(&host)))
    });
    let Ok(rendered) = render::render_host_files(&cluster, &host) else { panic!("renders") };
    criterion.bench_function("HostFileSet::new (payload + rendered files, content hash)", |bencher| {
        bencher.iter(|| HostFileSet::new(&manifest, &payload, Platform::Aws, black_box(rendered.clone())))
    });
    criterion.bench_function("Payload::load (small synthetic payload)", |bencher| {
        bencher.iter(|| Payload::load(black_box(dir.path()), &manifest))
    });

    let mut real = criterion.benchmark_group("real scale");
    real.sample_size(10);
    real.bench_function("Payload::load (real-size synthetic payload)", |bencher| {
        let Ok(real_dir) = tempfile::tempdir() else { panic!("a temporary directory") };
        if let Err(error) = write_synthetic_payload(&manifest, &product_dir, real_dir.path(), SyntheticScale::Real) {
            panic!("synthetic payload: {error}");
        }
        bencher.iter(|| Payload::load(black_box(real_dir.path()), &manifest))
    });
    real.finish();
}

criterion_group!(benches, benchmarks);
criterion_main!(benches);
