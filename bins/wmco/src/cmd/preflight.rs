//! `wmco preflight ADDRESS --user USER --key FILE [--platform P]`: the checks the operator runs on first contact
//! with a host, before it installs anything, run from an admin's machine: the host's name and default-route address
//! give a Node (named by the cluster's platform: on AWS and GCP the name the instance metadata gives), a supported
//! Windows Server build, the `Containers` feature enabled, room on `C:` for the payload. One
//! command on the host (the operator's identity command); nothing is changed. Exit 0 when every check passes, 1
//! when one fails or the host cannot be checked (unreachable, refused key, unreadable answer), 2 for unusable
//! arguments.

use std::sync::Arc;

use serde::Serialize;
use wmco_node_config::{
    CHECKS, ContainersStep, HostCheck, HostSession, PreflightCheck, SUPPORTED_BUILDS, check_host, containers_to_enable,
};
use wmco_ssh_transport::{RemoteHost, SshHost};
use wmco_vocabulary::Platform;

use crate::cli_support::{Outcome, OutputArgs, print_stdout, render};
use crate::cmd::ssh::{ConnectArgs, host_config};

/// The `kind` of the document `wmco preflight -o json|yaml` prints.
pub const KIND: &str = "Preflight";

/// Arguments of `wmco preflight`.
#[derive(Debug, clap::Args)]
pub struct PreflightArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The payload's size in MiB that `C:` must hold besides 2 GiB for logs and images (the real payload is about
    /// 430 MiB).
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    payload_mib: u64,
    /// The cluster's hybrid overlay VXLAN port (`hybridOverlayVXLANPort` of networks.operator.openshift.io
    /// `cluster`), if it sets one: Windows Server 2019 supports only the default, 4789.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    vxlan_port: Option<u16>,
    /// The cluster's platform, which decides the Node name: `aws` (the instance metadata's local-hostname), `gcp`
    /// (the metadata server's hostname), `vsphere` (the FQDN); `azure`, `nutanix` and `none` the short host name.
    #[arg(long, default_value = "none", value_parser = parse_platform)]
    platform: Platform,
    #[command(flatten)]
    output: OutputArgs,
}

fn parse_platform(name: &str) -> Result<Platform, String> {
    name.parse().map_err(|error: wmco_vocabulary::UnknownPlatform| error.to_string())
}

/// What `wmco preflight` found.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreflightReport {
    /// `user@address:port`.
    host: String,
    /// The Node name the host would register as, when its identity gives one.
    node_name: Option<String>,
    /// The host's IPv4 default-route address, when read.
    node_ip: Option<String>,
    /// Every check with its result; empty when the host could not be checked.
    checks: Vec<CheckResult>,
    /// Why the host could not be checked at all.
    error: Option<String>,
}

/// One check's result.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct CheckResult {
    /// `Identity`, `WindowsBuild`, `ContainersFeature`, `DiskSpace`, `ContainerRuntime` or `DefaultShell`.
    name: &'static str,
    passed: bool,
    /// What the host reported, or why the check failed.
    detail: String,
}

/// Runs `wmco preflight`.
pub fn run(args: &PreflightArgs) -> anyhow::Result<Outcome> {
    let config = host_config(&args.connect, "preflight")?;
    let label = config.label();
    let payload_bytes = args.payload_mib.saturating_mul(1 << 20);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(async {
        let host: Arc<dyn RemoteHost> = match SshHost::new(config) {
            Ok(host) => Arc::new(host),
            Err(error) => return PreflightReport::unchecked(label, error.to_string()),
        };
        match check_host(&HostSession::new(host), args.platform, payload_bytes, args.vxlan_port).await {
            Ok(check) => PreflightReport::from_check(label, &check),
            Err(error) => PreflightReport::unchecked(label, error.to_string()),
        }
    });
    print_stdout(&render(args.output.format, KIND, &report, || report.render_human())?)?;
    Ok(if report.passed() { Outcome::Clean } else { Outcome::Findings })
}

impl PreflightReport {
    fn unchecked(host: String, error: String) -> PreflightReport {
        PreflightReport { host, node_name: None, node_ip: None, checks: Vec::new(), error: Some(error) }
    }

    fn from_check(host: String, check: &HostCheck) -> PreflightReport {
        let checks = CHECKS
            .iter()
            .map(|&name| match check.failures.iter().find(|failure| failure.check == name) {
                Some(failure) => CheckResult { name: name.name(), passed: false, detail: failure.message.clone() },
                None => CheckResult { name: name.name(), passed: true, detail: passed_detail(name, check) },
            })
            .collect();
        PreflightReport {
            host,
            node_name: check.identity.as_ref().map(|identity| identity.expected_node_name.clone()),
            node_ip: check.identity.as_ref().map(|identity| identity.node_ip.to_string()),
            checks,
            error: None,
        }
    }

    fn passed(&self) -> bool {
        self.error.is_none() && self.checks.iter().all(|check| check.passed)
    }

    fn render_human(&self) -> String {
        let mut text = String::new();
        if let Some(error) = &self.error {
            text.push_str(&format!("{}: cannot be checked: {error}\n", self.host));
            return text;
        }
        let failed = self.checks.iter().filter(|check| !check.passed).count();
        let verdict = if failed == 0 { "passes".to_owned() } else { format!("fails {failed} check(s)") };
        text.push_str(&format!("{}: {verdict}\n", self.host));
        for check in &self.checks {
            let mark = if check.passed { "ok  " } else { "FAIL" };
            text.push_str(&format!("  {mark} {:<17} {}\n", check.name, check.detail));
        }
        text
    }
}

/// What a passed check saw.
fn passed_detail(check: PreflightCheck, found: &HostCheck) -> String {
    match check {
        PreflightCheck::Identity => match &found.identity {
            Some(identity) => format!("Node {} at {}", identity.expected_node_name, identity.node_ip),
            None => String::new(),
        },
        PreflightCheck::WindowsBuild => {
            let build = found.facts.build.unwrap_or_default();
            let name = SUPPORTED_BUILDS.iter().find(|(supported, _)| *supported == build).map_or("", |(_, name)| name);
            match found.facts.ubr {
                Some(ubr) => format!("build {build}.{ubr} ({name})"),
                None => format!("build {build} ({name})"),
            }
        }
        PreflightCheck::ContainersFeature => match containers_to_enable(&found.facts) {
            Some(ContainersStep::Install) => {
                "Containers is not installed: the operator installs it and restarts the host once, within \
                 --max-unavailable"
                    .to_owned()
            }
            Some(ContainersStep::Reboot) => {
                "Containers is installed and waits for a restart: the operator restarts the host once, within \
                 --max-unavailable"
                    .to_owned()
            }
            None => "Containers is enabled".to_owned(),
        },
        PreflightCheck::DiskSpace => {
            format!("{} GiB free on C:", found.facts.free_bytes.unwrap_or_default() >> 30)
        }
        PreflightCheck::ContainerRuntime => {
            let runtime = match &found.facts.containerd_service {
                Some(path) => format!("no Docker; containerd service present ({path}): the operator takes it over"),
                None => "no Docker, no containerd service".to_owned(),
            };
            let defender = match found.facts.defender_running {
                Some(true) => "; Defender runs: containerd will be excluded from its scanning",
                Some(false) => "; Defender does not run",
                None => "",
            };
            format!("{runtime}{defender}")
        }
        PreflightCheck::DefaultShell => match &found.facts.default_shell {
            Some(shell) => format!("OpenSSH runs commands in {shell}; the operator hands them to cmd.exe from there"),
            None => "OpenSSH runs commands in cmd.exe".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use wmco_node_config::{FeatureState, HostFacts, HostIdentity, PreflightFailure};

    use super::*;

    fn check(failures: Vec<PreflightFailure>) -> HostCheck {
        HostCheck {
            identity: Some(HostIdentity::parse(r#"{"hostname":"WIN-7","fqdn":"win-7","ip":"10.0.0.7"}"#).unwrap()),
            facts: HostFacts {
                build: Some(20348),
                free_bytes: Some(40 << 30),
                containers: Some(FeatureState::Enabled),
                ..HostFacts::default()
            },
            failures,
        }
    }

    #[test]
    fn a_passing_host_lists_every_check_with_what_it_saw() {
        let report = PreflightReport::from_check("Administrator@10.0.0.7:22".into(), &check(Vec::new()));
        assert!(report.passed());
        assert_eq!(
            report.render_human(),
            "Administrator@10.0.0.7:22: passes\n  ok   Identity          Node win-7 at 10.0.0.7\n  \
             ok   WindowsBuild      build 20348 (Windows Server 2022)\n  ok   ContainersFeature Containers is enabled\n  \
             ok   DiskSpace         40 GiB free on C:\n  ok   ContainerRuntime  no Docker, no containerd service\n  \
             ok   DefaultShell      OpenSSH runs commands in cmd.exe\n"
        );
    }

    #[test]
    fn a_failing_check_is_named_with_its_reason_and_the_json_keeps_every_check() {
        let failure = PreflightFailure { check: PreflightCheck::WindowsBuild, message: "Windows build 14393".into() };
        let report = PreflightReport::from_check("a@h:22".into(), &check(vec![failure]));
        assert!(!report.passed());
        assert!(
            report.render_human().contains("  FAIL WindowsBuild      Windows build 14393\n"),
            "{}",
            report.render_human()
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["checks"].as_array().unwrap().len(), 6);
        assert_eq!(
            json["checks"][1],
            serde_json::json!({"name": "WindowsBuild", "passed": false, "detail": "Windows build 14393"})
        );
        assert_eq!(json["nodeName"], "win-7");
    }

    #[test]
    fn the_runtime_check_says_whether_defender_runs() {
        let mut found = check(Vec::new());
        found.facts.defender_running = Some(true);
        found.facts.containerd_service = Some(r"C:\k\containerd\containerd.exe --run-service".into());
        assert_eq!(
            passed_detail(PreflightCheck::ContainerRuntime, &found),
            "no Docker; containerd service present (C:\\k\\containerd\\containerd.exe --run-service): the operator \
             takes it over; Defender runs: containerd will be excluded from its scanning"
        );
        found.facts.defender_running = Some(false);
        assert!(passed_detail(PreflightCheck::ContainerRuntime, &found).ends_with("; Defender does not run"));
    }

    #[test]
    fn a_host_that_cannot_be_checked_fails_with_the_reason() {
        let report = PreflightReport::unchecked("a@h:22".into(), "connection refused".into());
        assert!(!report.passed());
        assert_eq!(report.render_human(), "a@h:22: cannot be checked: connection refused\n");
    }
}
