//! Benchmarks of the hot pure paths a reconcile runs per host: building the node's desired state, rendering and
//! parsing the state probe, planning against a fresh and a converged host, and rendering every step's commands.

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, criterion_group, criterion_main};
use wmco_windows_services::{
    HostState, LogRotation, NodeInputs, ObservedHost, Platform, ProbeRequest, ServiceStage, Verbosity, node_host_state,
    plan,
};

fn inputs() -> NodeInputs {
    NodeInputs {
        node_ip: Ipv4Addr::new(203, 0, 113, 7),
        node_name: "winworker-1".into(),
        api_server_url: "https://api-int.example.com:6443".into(),
        platform: Platform::Aws,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    }
}

/// The probe output of a host where everything in `desired` already holds (services running, dirs present).
fn converged_output(desired: &HostState) -> String {
    let request = ProbeRequest::for_state(desired);
    let services: Vec<String> = request
        .services
        .iter()
        .map(|name| match desired.services.iter().find(|spec| spec.name == *name) {
            None => r#"{"key":false}"#.to_owned(),
            Some(spec) => {
                let depends: Vec<String> = spec.dependencies.iter().map(|d| format!("\"{d}\"")).collect();
                let blob: Vec<String> = [300u32, 0, 0, 4, 20, 1, 10_000, 1, 30_000, 1, 60_000, 1, 120_000]
                    .iter()
                    .flat_map(|word| word.to_le_bytes())
                    .map(|byte| byte.to_string())
                    .collect();
                serde_json::json!({
                    "key": true, "state": "Running", "pid": 1234,
                    "image": spec.command.image_path(), "display": spec.display_name, "description": spec.description,
                    "start": 2, "delayed": null, "depends": serde_json::from_str::<serde_json::Value>(&format!("[{}]", depends.join(","))).unwrap_or_default(),
                    "failure": serde_json::from_str::<serde_json::Value>(&format!("[{}]", blob.join(","))).unwrap_or_default(),
                    "failureFlag": 1, "deleteFlag": null
                })
                .to_string()
            }
        })
        .collect();
    let dirs = vec!["true"; request.directories.len()].join(",");
    let acls = vec![r#""O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)""#; request.directory_acls.len()].join(",");
    let firewall =
        vec![r#"{"exists":true,"direction":1,"enabled":1,"action":2}"#; request.firewall_rules.len()].join(",");
    format!(
        r#"{{"services":[{}],"files":[],"dirs":[{dirs}],"acls":[{acls}],"env":[],"firewall":[{firewall}],"registry":[]}}"#,
        services.join(",")
    )
}

fn benches(c: &mut Criterion) {
    let inputs = inputs();
    let desired = node_host_state(&inputs, ServiceStage::Node).unwrap_or_default();
    let request = ProbeRequest::for_state(&desired);
    let output = converged_output(&desired);
    let converged = request.parse_output(&output).unwrap_or_default();
    assert!(plan(&desired, &converged).is_ok_and(|steps| steps.is_empty()), "the fixture must be converged");

    c.bench_function("node_host_state", |b| b.iter(|| node_host_state(black_box(&inputs), ServiceStage::Node)));
    c.bench_function("probe_script_render", |b| b.iter(|| black_box(&request).script().render()));
    c.bench_function("probe_parse_converged", |b| b.iter(|| request.parse_output(black_box(&output))));
    c.bench_function("plan_fresh_host", |b| b.iter(|| plan(black_box(&desired), &ObservedHost::default())));
    c.bench_function("plan_converged_host", |b| b.iter(|| plan(black_box(&desired), black_box(&converged))));
    let steps = plan(&desired, &ObservedHost::default()).unwrap_or_default();
    c.bench_function("render_fresh_host_commands", |b| {
        b.iter(|| {
            black_box(&steps)
                .iter()
                .map(|step| step.commands().map(|commands| commands.len()))
                .sum::<Result<usize, _>>()
        })
    });
}

criterion_group!(render_and_plan, benches);
criterion_main!(render_and_plan);
