//! The `wmco` binary as scripts and admins use it: every subcommand that prints data run with `-o json` and
//! `-o yaml` (each document parsed back, its `apiVersion` and `kind` checked, every key checked for camelCase),
//! the exit codes (0 ok, 1 findings, 2 unusable input), `wmco run` refusing `-o`, shell completions and man pages,
//! and `wmco preflight --help` naming exactly the checks the operator runs.
//! The subcommands that need a cluster (`status`, `diagnose`) are run against the e2e control plane in
//! `e2e/sandbox/tests/cli.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const API_VERSION: &str = "cli.wmco-rs.io/v1alpha1";

/// Keys whose object holds data (label and annotation names), not field names.
const DATA_MAPS: [&str; 4] = ["labels", "annotations", "matchLabels", "nodeSelector"];

fn wmco(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wmco")).args(args).env("RUST_LOG", "error").output().expect("wmco runs")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

/// Every key of `value` (recursively) that is not camelCase, with its path. Keys of label and annotation maps are
/// data; `x-kubernetes-*` keys are the OpenAPI extensions Kubernetes itself names so (CRD schemas only).
fn non_camel_case_keys(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                if !is_camel_case(key) && !key.starts_with("x-kubernetes-") {
                    found.push(child_path.clone());
                }
                if !DATA_MAPS.contains(&key.as_str()) {
                    non_camel_case_keys(child, &child_path, found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                non_camel_case_keys(item, &format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

fn is_camel_case(key: &str) -> bool {
    let mut characters = key.chars();
    characters.next().is_some_and(|first| first.is_ascii_lowercase())
        && characters.all(|character| character.is_ascii_alphanumeric())
}

/// Runs `args` with `-o json` and with `-o yaml`, expects `exit_code` from both, parses both documents, checks they
/// are equal, carry `apiVersion` and `kind` and only camelCase keys, and returns the document.
fn document(args: &[&str], api_version: &str, kind: &str, exit_code: i32) -> Value {
    let mut parsed = Vec::new();
    for format in ["json", "yaml"] {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["-o", format]);
        let output = wmco(&full);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(exit_code),
            "wmco {full:?}: stdout {stdout}\nstderr {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let value: Value = match format {
            "json" => serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("wmco {full:?}: {error}: {stdout}")),
            _ => serde_saphyr::from_str(&stdout).unwrap_or_else(|error| panic!("wmco {full:?}: {error}: {stdout}")),
        };
        assert_eq!(value["apiVersion"], api_version, "wmco {full:?}: {stdout}");
        assert_eq!(value["kind"], kind, "wmco {full:?}: {stdout}");
        let mut bad = Vec::new();
        non_camel_case_keys(&value, "", &mut bad);
        assert!(bad.is_empty(), "wmco {full:?}: keys not in camelCase: {bad:?}");
        parsed.push(value);
    }
    assert_eq!(parsed[0], parsed[1], "wmco {args:?}: -o json and -o yaml differ");
    parsed.remove(0)
}

fn exit_code(args: &[&str]) -> (Option<i32>, String, String) {
    let output = wmco(args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_casing_check_finds_snake_case_and_skips_label_keys() {
    let value = serde_json::json!({
        "apiVersion": "v1", "total_bytes": 1,
        "metadata": {"labels": {"machine.openshift.io/os-id": "Windows"}},
        "items": [{"Kind": 1, "okKey": {"x-kubernetes-preserve-unknown-fields": true, "bad-key": 2}}]
    });
    let mut found = Vec::new();
    non_camel_case_keys(&value, "", &mut found);
    assert_eq!(found, [".items[0].Kind", ".items[0].okKey.bad-key", ".total_bytes"]);
}

#[test]
fn version() {
    let document = document(&["version"], API_VERSION, "Version", 0);
    assert!(document["version"].is_string() && document["commit"].is_string(), "{document}");
}

#[test]
fn crd_prints_the_crd_itself() {
    let crd = document(&["crd"], "apiextensions.k8s.io/v1", "CustomResourceDefinition", 0);
    assert_eq!(crd["metadata"]["name"], "windowsinstances.windowsmachineconfig.openshift.io");
    let (code, human, _) = exit_code(&["crd"]);
    assert_eq!(code, Some(0));
    let yaml: Value = serde_saphyr::from_str(&human).expect("human output is the YAML");
    assert_eq!(yaml, crd);
}

#[test]
fn plan() {
    let docs = std::fs::read_to_string(workspace().join("docs/upgrades.md")).expect("docs/upgrades.md");
    let after_marker = docs.split_once("<!-- example-input -->").expect("marker").1;
    let input = after_marker.split_once("```yaml\n").expect("block").1.split_once("```").expect("closed").0;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("input.yaml");
    std::fs::write(&file, input).expect("written");
    let plan = document(&["plan", "--input", path_arg(&file)], API_VERSION, "Plan", 0);
    assert_eq!(plan["decisions"].as_array().map(Vec::len), Some(9), "{plan}");
    assert!(plan["summary"].is_object(), "{plan}");

    std::fs::write(&file, "fleet: [\n").expect("written");
    let (code, _, stderr) = exit_code(&["plan", "--input", path_arg(&file)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
}

#[test]
fn csr_check() {
    let fixtures = workspace().join("crates/csr-approver/tests/fixtures");
    let (csr, world) = (fixtures.join("csr-example.yaml"), fixtures.join("world-example.yaml"));
    let args = ["csr", "check", "--csr", path_arg(&csr), "--world", path_arg(&world)];
    let report = document(&args, API_VERSION, "CsrCheck", 0);
    assert_eq!(report["name"], "csr-7xk2q");
    assert!(["approve", "deny", "ignore"].contains(&report["verdict"].as_str().unwrap_or_default()), "{report}");
    let missing = fixtures.join("no-such-csr.yaml");
    assert_eq!(exit_code(&["csr", "check", "--csr", path_arg(&missing), "--world", path_arg(&world)]).0, Some(2));
}

#[test]
fn payload_verify() {
    let manifest = wmco_payload_manifest::Manifest::product().expect("product manifest");
    let dir = tempfile::tempdir().expect("temp dir");
    let payload = dir.path().join("payload");
    wmco_payload_manifest::write_synthetic_payload(
        &manifest,
        &workspace().join("payload"),
        &payload,
        wmco_payload_manifest::SyntheticScale::Small,
    )
    .expect("synthetic payload");
    let report = document(&["payload", "verify", path_arg(&payload)], API_VERSION, "PayloadVerification", 0);
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(report["payloadKind"], "synthetic", "{report}");

    std::fs::remove_file(payload.join("kube-node/kube-proxy.exe")).expect("removed");
    let report = document(&["payload", "verify", path_arg(&payload)], API_VERSION, "PayloadVerification", 1);
    assert_eq!(report["problems"][0]["kind"], "missing_required", "{report}");
    assert_eq!(exit_code(&["payload", "verify", "/nonexistent/wmco-payload"]).0, Some(2));
}

#[test]
fn instances_validate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: windows-instances}\ndata:\n  10.1.2.3: username=Administrator\n",
    )
    .expect("written");
    let report = document(&["instances", "validate", path_arg(&good)], API_VERSION, "InstancesValidation", 0);
    assert_eq!(report["instances"][0]["instanceName"], "byoh-10-1-2-3");
    let (code, human, _) = exit_code(&["instances", "validate", path_arg(&good)]);
    assert_eq!(code, Some(0));
    assert!(human.starts_with("OK 10.1.2.3 username=Administrator → ipv4 10.1.2.3"), "{human}");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: windows-instances}\n\
         data:\n  10.1.2.3: username=a\n  10.1.2.4: username=a,password=x\n  fd00::1: username=a\n",
    )
    .expect("written");
    let report = document(&["instances", "validate", path_arg(&bad)], API_VERSION, "InstancesValidation", 1);
    assert_eq!(report["valid"], false, "{report}");
    assert_eq!(exit_code(&["instances", "validate", "/nonexistent/windows-instances.yaml"]).0, Some(2));
}

#[test]
fn machineset_generate_prints_the_machineset_itself() {
    let args = [
        "machineset",
        "generate",
        "--platform",
        "aws",
        "--name",
        "windows-worker-us-east-1a",
        "--infrastructure-id",
        "ci-4xk2p",
        "--region",
        "us-east-1",
        "--zone",
        "us-east-1a",
        "--ami",
        "ami-0a1b2c3d4e5f67890",
    ];
    let machineset = document(&args, "machine.openshift.io/v1beta1", "MachineSet", 0);
    assert_eq!(machineset["metadata"]["name"], "ci-4xk2p-windows-worker-us-east-1a");
    let too_long = ["machineset", "generate", "--platform", "vsphere", "--name", "winworker1", "-o", "json"];
    assert_eq!(exit_code(&too_long).0, Some(1));
    let no_cluster = [
        "machineset",
        "generate",
        "--platform",
        "aws",
        "--name",
        "w",
        "--zone",
        "z",
        "--ami",
        "a",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--context",
        "admin",
    ];
    let (code, _, stderr) = exit_code(&no_cluster);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read --kubeconfig /nonexistent/kubeconfig"), "{stderr}");
}

#[test]
fn user_data() {
    let fixtures = workspace().join("crates/user-data/tests/fixtures");
    let good = fixtures.join("ed25519-openssh.pem.pub");
    let report =
        document(&["user-data", "--public-key", path_arg(&good), "--platform", "aws"], API_VERSION, "UserData", 0);
    assert_eq!(report["keyType"], "ssh-ed25519");
    assert!(report["userData"].as_str().unwrap_or_default().starts_with("<powershell>"), "{report}");
    let weak = fixtures.join("rsa-1024-pkcs1.pem");
    let refusal = document(&["user-data", "--public-key", path_arg(&weak)], API_VERSION, "UserData", 1);
    assert!(refusal["weakKey"].as_str().unwrap_or_default().contains("1024 bits"), "{refusal}");
    assert_eq!(exit_code(&["user-data", "--public-key", "/nonexistent/key"]).0, Some(2));
}

#[test]
fn ssh_check_of_a_closed_port_is_a_finding() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port().to_string()
    };
    let key = workspace().join("crates/user-data/tests/fixtures/ed25519-openssh.pem");
    let args = ["ssh", "check", "127.0.0.1", "--user", "Administrator", "--key", path_arg(&key), "--port", &port];
    let report = document(&[&args[..], &["--timeout", "3"]].concat(), API_VERSION, "SshCheck", 1);
    assert_eq!(report["failure"]["class"], "unreachable", "{report}");
    assert_eq!(report["hostKeyPinned"], false, "{report}");
    let unreadable_key = ["ssh", "check", "127.0.0.1", "--user", "a", "--key", "/nonexistent/key", "-o", "json"];
    assert_eq!(exit_code(&unreadable_key).0, Some(2));
}

#[test]
fn run_takes_no_output_flag() {
    let (code, _, stderr) = exit_code(&["run", "--payload-dir", "/nonexistent", "-o", "json"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument '-o'"), "{stderr}");
    let (_, help, _) = exit_code(&["run", "--help"]);
    assert!(!help.contains("--output"), "{help}");
}

/// The check names `wmco preflight --help` lists: the first word of each line indented by two spaces above `Usage:`.
fn checks_in_help(help: &str) -> Vec<String> {
    help.lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .filter_map(|line| line.strip_prefix("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| word.chars().next().is_some_and(char::is_uppercase))
        .map(str::to_owned)
        .collect()
}

#[test]
fn preflight_help_names_every_check_the_operator_runs() {
    let output = wmco(&["preflight", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    let performed: Vec<String> = wmco_node_config::CHECKS.iter().map(|check| check.name().to_owned()).collect();
    assert_eq!(checks_in_help(&help), performed, "{help}");
    assert!(help.contains("2019 with a custom VXLAN port refused"), "{help}");
    assert!(help.contains("20348.681 or later"), "{help}");
}

#[test]
fn completion_scripts_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let (code, script, stderr) = exit_code(&["completion", shell]);
        assert_eq!(code, Some(0), "{shell}: {stderr}");
        assert!(script.contains("diagnose") && script.contains("machineset"), "{shell}: {script}");
    }
    assert_eq!(exit_code(&["completion", "tcsh"]).0, Some(2));
}

#[test]
fn man_pages_for_every_subcommand() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, listed, stderr) = exit_code(&["generate-man-pages", path_arg(dir.path())]);
    assert_eq!(code, Some(0), "{stderr}");
    for page in ["wmco.1", "wmco-version.1", "wmco-ssh-check.1", "wmco-status.1", "wmco-diagnose.1", "wmco-run.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|error| panic!("{page}: {error}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page} is not a man page: {text}");
        assert!(listed.contains(page), "{page} not listed: {listed}");
    }
    assert!(!listed.contains("generate-man-pages"), "{listed}");
}

#[test]
fn status_and_diagnose_refuse_an_unusable_kubeconfig_with_exit_2() {
    for args in [
        &["status", "--kubeconfig", "/nonexistent/kubeconfig", "-o", "json"][..],
        &["diagnose", "byoh-10-0-0-21", "-n", "wmco", "--kubeconfig", "/nonexistent/kubeconfig", "--context", "admin"],
    ] {
        let (code, stdout, stderr) = exit_code(args);
        assert_eq!(code, Some(2), "wmco {args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.starts_with("error: cannot read --kubeconfig /nonexistent/kubeconfig: "), "{stderr}");
    }
    let (code, _, stderr) = exit_code(&["diagnose", "byoh-10-0-0-21", "--ssh-port", "2222"]);
    assert_eq!(code, Some(2), "--ssh-port needs --ssh-key: {stderr}");
    let (code, _, stderr) = exit_code(&["diagnose", "byoh-10-0-0-21", "--operator-log", "/nonexistent/operator.log"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read --operator-log /nonexistent/operator.log"), "{stderr}");
}
