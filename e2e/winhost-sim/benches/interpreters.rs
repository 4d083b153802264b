//! Cost of interpreting what the operator sends, without SSH: the product's state probe for the seven node
//! services (PowerShell `-File`, parse + evaluate + ConvertTo-Json) and one `sc.exe query` through cmd.exe.

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, criterion_group, criterion_main};
use winhost_sim::host::{Host, Identity, Latency};
use wmco_windows_services::{
    LogRotation, NodeInputs, Platform, ProbeRequest, ScCommand, ServiceName, Verbosity, node_services,
};

fn host(root: &std::path::Path) -> Host {
    let identity = Identity {
        hostname: "bench".into(),
        fqdn: "bench.sim.test".into(),
        build: 20348,
        ubr: 2849,
        node_ip: Ipv4Addr::new(203, 0, 113, 10),
    };
    Host::new(identity, root, Latency::zero()).expect("host")
}

fn interpreters(criterion: &mut Criterion) {
    let root = tempfile::tempdir().expect("tempdir");
    let mut host = host(root.path());
    let inputs = NodeInputs {
        node_ip: Ipv4Addr::new(203, 0, 113, 10),
        node_name: "bench".into(),
        api_server_url: "https://api.example.test:6443".into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    };
    let mut request = ProbeRequest::default();
    for service in node_services(&inputs).expect("services") {
        let create = ScCommand::Create(Box::new(service.spec.clone())).render().expect("render");
        host.exec("bench", &create.line);
        request.services.insert(service.spec.name.clone());
    }
    let probe = request.script().render().expect("probe");
    let script = probe.script_file.expect("a -File probe");
    let path = winhost_sim::disk::WinPath::parse(script.path.as_str()).expect("path");
    host.disk.create_dir_all(&path.parent().expect("parent")).expect("mkdir");
    host.disk.write(&path, &script.contents).expect("write");
    let query = ScCommand::Query(ServiceName::new("kubelet").expect("name")).render().expect("query").line;
    criterion.bench_function("state probe, 7 services (-File)", |bencher| {
        bencher.iter(|| black_box(host.exec("bench", &probe.line)));
    });
    criterion.bench_function("sc.exe query via cmd.exe", |bencher| {
        bencher.iter(|| black_box(host.exec("bench", &query)));
    });
}

criterion_group!(benches, interpreters);
criterion_main!(benches);
