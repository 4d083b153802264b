//! Golden tests: the Windows MachineSet generated for each platform, byte for byte, against
//! `tests/golden/<platform>.yaml` (`UPDATE_GOLDEN=1 cargo test -p wmco-machines --test machinesets` rewrites them
//! after a deliberate change), and each golden document parsed back for the fields the product relies on.

use std::path::PathBuf;

use wmco_machines::{Field, MachineSetOptions, MachineSetPlatform, generate};

fn options(platform: MachineSetPlatform) -> MachineSetOptions {
    let base = |name: &str| MachineSetOptions::new(name, 1).with(Field::InfrastructureId, "ci-4xk2p");
    match platform {
        MachineSetPlatform::Aws => base("windows-worker-us-east-1a")
            .with(Field::Region, "us-east-1")
            .with(Field::Zone, "us-east-1a")
            .with(Field::Ami, "ami-0a1b2c3d4e5f67890"),
        MachineSetPlatform::Azure => base("winworker").with(Field::Location, "centralus").with(Field::Zone, "1"),
        MachineSetPlatform::Gcp => base("windows-worker-a")
            .with(Field::ProjectId, "openshift-dev")
            .with(Field::Region, "us-central1")
            .with(Field::Zone, "us-central1-a")
            .with(Field::Image, "projects/windows-cloud/global/images/family/windows-2022-core"),
        MachineSetPlatform::VSphere => base("winworker")
            .with(Field::Server, "vcenter.example.com")
            .with(Field::Datacenter, "dc1")
            .with(Field::Datastore, "/dc1/datastore/ds1")
            .with(Field::ResourcePool, "/dc1/host/cluster1/Resources")
            .with(Field::Network, "VM Network")
            .with(Field::Template, "windows-golden-images/windows-server-2022-template"),
        MachineSetPlatform::Nutanix => base("windows-worker")
            .with(Field::Cluster, "0005b0f1-8f43-a0f2-02b7-3cecef193712")
            .with(Field::Image, "nutanix-windows-server-2022")
            .with(Field::Subnet, "ci-subnet"),
    }
}

const PLATFORMS: [(MachineSetPlatform, &str); 5] = [
    (MachineSetPlatform::Aws, "aws"),
    (MachineSetPlatform::Azure, "azure"),
    (MachineSetPlatform::Gcp, "gcp"),
    (MachineSetPlatform::VSphere, "vsphere"),
    (MachineSetPlatform::Nutanix, "nutanix"),
];

fn golden_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{file}.yaml"))
}

#[test]
fn each_platform_matches_its_golden_machineset() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut stale = Vec::new();
    for (platform, file) in PLATFORMS {
        let yaml = generate(platform, &options(platform)).unwrap().to_yaml().unwrap();
        let path = golden_path(file);
        if update {
            std::fs::write(&path, &yaml).unwrap();
        } else if std::fs::read_to_string(&path).unwrap() != yaml {
            stale.push(format!("{}:\n{yaml}", path.display()));
        }
    }
    assert!(stale.is_empty(), "golden MachineSets differ (UPDATE_GOLDEN=1 rewrites them):\n{}", stale.join("\n"));
}

#[test]
fn every_golden_machineset_carries_what_the_product_relies_on() {
    for (platform, file) in PLATFORMS {
        let text = std::fs::read_to_string(golden_path(file)).unwrap();
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let name = parsed["metadata"]["name"].as_str().unwrap();
        assert_eq!(parsed["kind"], "MachineSet", "{file}");
        assert_eq!(parsed["metadata"]["namespace"], "openshift-machine-api", "{file}");
        assert_eq!(parsed["metadata"]["labels"]["machine.openshift.io/cluster-api-cluster"], "ci-4xk2p");
        let selector = &parsed["spec"]["selector"]["matchLabels"];
        assert_eq!(selector["machine.openshift.io/cluster-api-machineset"], name, "{file}");
        let labels = &parsed["spec"]["template"]["metadata"]["labels"];
        for (key, value) in selector.as_object().unwrap() {
            assert_eq!(&labels[key], value, "{file}: the template must match the selector");
        }
        assert_eq!(labels["machine.openshift.io/os-id"], "Windows", "{file}");
        assert_eq!(labels["machine.openshift.io/cluster-api-machine-role"], "worker", "{file}");
        assert_eq!(labels["machine.openshift.io/cluster-api-machine-type"], "worker", "{file}");
        assert_eq!(parsed["spec"]["template"]["spec"]["metadata"]["labels"]["node-role.kubernetes.io/worker"], "");
        let provider = &parsed["spec"]["template"]["spec"]["providerSpec"]["value"];
        assert_eq!(provider["userDataSecret"]["name"], "windows-user-data", "{file}");
        assert_eq!(parsed["spec"]["replicas"], 1, "{file}");
        let expected_name = if matches!(platform, MachineSetPlatform::VSphere | MachineSetPlatform::Azure) {
            "winworker".to_owned()
        } else {
            format!("ci-4xk2p-{}", options(platform).name)
        };
        assert_eq!(name, expected_name, "{file}");
    }
}
