//! `wmco run`: the operator process. Parses the flags, verifies the payload, and hands both to
//! `wmco_operator::process::run`, which serves `/healthz` and `/readyz` (plain HTTP, for the probes) and `/metrics`
//! (HTTPS, to authorized clients), connects to the cluster, takes part in leader election through a Lease and runs
//! the controllers while it leads. Losing the lease stops every
//! controller at once and exits non-zero (another replica may already lead). SIGTERM or Ctrl-C stops taking work,
//! lets the host reconciles in flight finish for at most [`SHUTDOWN_GRACE`], releases the lease and exits 0. The
//! admin's input errors (a flag, a payload, the cluster's facts) exit 2.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use jiff::civil::{Time, Weekday};
use jiff::tz::TimeZone;
use wmco_cluster_client::ProxySettings;
use wmco_operator::process::{
    BuildInfo, CONTROLLER_NAME, MetricsEndpointOptions, OperatorFlags, PlainKubernetesFlags, RunOptions,
    parse_log_duration, parse_log_file_size,
};
use wmco_operator::shutdown::termination_requested;
use wmco_payload_manifest::{Manifest, Payload, PayloadError, check_payload_binaries};
use wmco_reboot_policy::{
    MaintenanceWindow, RebootPolicy, RebootSettings, parse_time_of_day, parse_time_zone, parse_weekday,
};
use wmco_ssh_transport::transcript::prepare_directory;
use wmco_vocabulary::IpCidr;
use wmco_windows_services::{LogRotation, Verbosity};

use crate::cli_support::{Outcome, OutputFormat, UnusableInput};

/// How long a graceful shutdown lets the host reconciles in flight finish before aborting them (well inside the
/// 30 s a pod gets between SIGTERM and SIGKILL by default, with the lease release after it).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// Arguments of `wmco run`. Every flag can also be set through the environment variable named in its help.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The operator namespace: where the Lease, the `windows-instances` ConfigMap and the `WindowsInstance` records
    /// live.
    #[arg(long, env = "POD_NAMESPACE", default_value = "openshift-windows-machine-config-operator")]
    pub namespace: String,
    /// The Windows node payload directory; verified at startup (a broken payload exits 2 listing every problem).
    #[arg(long, env = "WMCO_PAYLOAD_DIR", value_name = "DIR")]
    pub payload_dir: PathBuf,
    /// Accept a synthetic payload (one carrying the `SYNTHETIC` marker of the test payload generator), whose
    /// binaries are pseudo-random bytes: for tests, the sandbox and benchmarks only. Without it a synthetic payload
    /// exits 2.
    #[arg(long, env = "WMCO_ALLOW_SYNTHETIC_PAYLOAD")]
    pub allow_synthetic_payload: bool,
    /// The address of the plain HTTP listener of the kubelet's probes: `/healthz` and `/readyz`.
    #[arg(long, env = "WMCO_LISTEN", default_value = "0.0.0.0:8080", value_name = "ADDRESS:PORT")]
    pub listen: SocketAddr,
    /// The address of the HTTPS listener serving `/metrics` to clients whose bearer token may `get` the
    /// non-resource URL `/metrics` (TokenReview and SubjectAccessReview).
    #[arg(long, env = "WMCO_METRICS_LISTEN", default_value = "0.0.0.0:8443", value_name = "ADDRESS:PORT")]
    pub metrics_listen: SocketAddr,
    /// The metrics endpoint's serving certificate chain (PEM), re-read when it changes; with the key missing
    /// or either file absent, a self-signed certificate is served instead.
    #[arg(long, env = "WMCO_METRICS_TLS_CERT", value_name = "FILE")]
    pub metrics_tls_cert: Option<PathBuf>,
    /// The private key of `--metrics-tls-cert` (PEM).
    #[arg(long, env = "WMCO_METRICS_TLS_KEY", value_name = "FILE")]
    pub metrics_tls_key: Option<PathBuf>,
    /// The SSH port of Windows hosts.
    #[arg(long, env = "WMCO_SSH_PORT", default_value_t = 22)]
    pub ssh_port: u16,
    /// How long one command on a host may run before it counts as hung (the host's record then shows the step
    /// that timed out, and the reconcile is retried with backoff).
    #[arg(long, env = "WMCO_SSH_COMMAND_TIMEOUT_SECONDS", default_value_t = 120, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub ssh_command_timeout_seconds: u64,
    /// How long one blocking SSH step may take: the handshake, one SFTP write to a stalled host.
    #[arg(long, env = "WMCO_SSH_IO_TIMEOUT_SECONDS", default_value_t = 60, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub ssh_io_timeout_seconds: u64,
    /// How many hosts are configured at once.
    #[arg(long, env = "WMCO_MAX_CONCURRENT_CONFIGURATIONS", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_configurations: u16,
    /// How many Windows nodes may be unavailable at once during upgrades.
    #[arg(long, env = "WMCO_MAX_UNAVAILABLE", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unavailable: u32,
    /// How long a Machine's host may refuse the operator's SSH key before the Machine is replaced (deleted so its
    /// MachineSet recreates it), within the `--max-unavailable` budget.
    #[arg(long, env = "WMCO_AUTHENTICATION_GRACE_SECONDS", default_value_t = 300, value_name = "SECONDS")]
    pub authentication_grace_seconds: u64,
    /// The version recorded on configured nodes instead of this binary's version without build metadata (tests and
    /// development only).
    #[arg(long, env = "WMCO_VERSION_OVERRIDE")]
    pub version_override: Option<String>,
    /// Whether to take part in leader election (only the leader runs controllers). Turn off only when exactly one
    /// operator process runs.
    #[arg(long, env = "WMCO_LEADER_ELECTION", default_value_t = true, action = clap::ArgAction::Set,
          value_name = "true|false")]
    pub leader_election: bool,
    /// The Lease used for leader election, in the operator namespace.
    #[arg(long, env = "WMCO_LEASE_NAME", default_value = CONTROLLER_NAME)]
    pub lease_name: String,
    /// This process's identity: the lease holder name and the SSH client version suffix
    /// (`SSH-2.0-wmco_<version> <identity>`). Default: the pod's host name.
    #[arg(long, env = "WMCO_SSH_IDENTITY")]
    pub ssh_identity: Option<String>,
    /// The Service network, on plain Kubernetes (on OpenShift it is read from the `Network` config).
    #[arg(long, env = "WMCO_SERVICE_CIDR", value_name = "CIDR")]
    pub service_cidr: Option<IpCidr>,
    /// The pod network(s) (repeat the flag for several); kubelet serving CSRs must not claim addresses in them.
    #[arg(long, env = "WMCO_CLUSTER_CIDR", value_name = "CIDR", value_delimiter = ',')]
    pub cluster_cidr: Vec<IpCidr>,
    /// The URL Windows nodes reach the API server at, on plain Kubernetes (on OpenShift it is read from the
    /// `Infrastructure` config).
    #[arg(long, env = "WMCO_API_SERVER_URL", value_name = "URL")]
    pub api_server_url: Option<String>,
    /// The HTTP proxy Windows nodes use, on plain Kubernetes (on OpenShift it is read from Proxy `cluster`).
    #[arg(long, env = "WMCO_NODE_HTTP_PROXY", value_name = "URL")]
    pub node_http_proxy: Option<String>,
    /// The HTTPS proxy Windows nodes use, on plain Kubernetes.
    #[arg(long, env = "WMCO_NODE_HTTPS_PROXY", value_name = "URL")]
    pub node_https_proxy: Option<String>,
    /// The destinations Windows nodes reach without the proxy, comma-separated, on plain Kubernetes.
    #[arg(long, env = "WMCO_NODE_NO_PROXY", value_name = "LIST")]
    pub node_no_proxy: Option<String>,
    /// Debug verbosity for the node services (kubelet `--v=4`, containerd and windows_exporter `debug`,
    /// hybrid-overlay `--loglevel 5`).
    #[arg(long, env = "WMCO_DEBUG_NODE_SERVICES", default_value_t = false, action = clap::ArgAction::Set,
          value_name = "true|false")]
    pub debug_node_services: bool,
    /// Rotate the kubelet's and kube-proxy's logs when a file reaches this size: a Kubernetes quantity (`100Mi`,
    /// `500M`); unset, kube-log-runner's default.
    #[arg(long, env = "SERVICES_LOG_FILE_SIZE", value_name = "QUANTITY", value_parser = parse_log_file_size)]
    pub services_log_file_size: Option<u64>,
    /// Delete the kubelet's and kube-proxy's rotated logs older than this Go duration (`168h`).
    #[arg(long, env = "SERVICES_LOG_FILE_AGE", value_name = "DURATION", value_parser = parse_log_duration)]
    pub services_log_file_age: Option<Duration>,
    /// How often the kubelet and kube-proxy flush their logs, a Go duration (`5s`).
    #[arg(long, env = "SERVICES_LOG_FLUSH_INTERVAL", value_name = "DURATION", value_parser = parse_log_duration)]
    pub services_log_flush_interval: Option<Duration>,
    /// Record every command sent to each host and its output (secrets redacted; uploads as path, size and SHA-256)
    /// in `DIR/<user>_<address>_<port>.jsonl`, one JSON line per operation, for troubleshooting and for replaying
    /// against the host simulator. DIR is created (mode 0700) if missing.
    #[arg(long, env = "WMCO_RECORD_TRANSCRIPTS", value_name = "DIR")]
    pub record_transcripts: Option<PathBuf>,
    /// Whether a host is rebooted when Windows itself has a reboot pending (Windows Update's `RebootRequired`,
    /// Component-Based Servicing's `RebootPending`, `PendingFileRenameOperations`): `never`, or `when-required`
    /// inside the maintenance window. Either way, a `WindowsInstance` annotated
    /// `windowsmachineconfig.openshift.io/reboot-requested=<token>` and a Node annotated
    /// `windowsmachineconfig.openshift.io/reboot-required` are rebooted once, at any time, within
    /// `--max-unavailable`.
    #[arg(long, env = "WMCO_REBOOT_POLICY", default_value = "never", value_name = "never|when-required")]
    pub reboot_policy: RebootPolicy,
    /// The days the maintenance window opens on, comma-separated, as kured takes them: `su`/`sun`/`sunday` … `sa`,
    /// or 0 (Sunday) to 6.
    #[arg(long, env = "WMCO_REBOOT_DAYS", value_name = "DAYS", value_delimiter = ',',
          default_value = "su,mo,tu,we,th,fr,sa", value_parser = parse_weekday)]
    pub reboot_days: Vec<Weekday>,
    /// When the maintenance window opens, local time of `--time-zone` (`2:00`, `02:00:00`, `2am`).
    #[arg(long, env = "WMCO_REBOOT_START_TIME", value_name = "TIME", default_value = "0:00",
          value_parser = parse_time_of_day)]
    pub start_time: Time,
    /// When the maintenance window closes (its whole second included); earlier than `--start-time`, the window
    /// crosses midnight and closes the next day.
    #[arg(long, env = "WMCO_REBOOT_END_TIME", value_name = "TIME", default_value = "23:59:59",
          value_parser = parse_time_of_day)]
    pub end_time: Time,
    /// The time zone of `--start-time` and `--end-time`: an IANA name (`Europe/Berlin`) or `UTC`.
    #[arg(long, env = "WMCO_REBOOT_TIME_ZONE", value_name = "ZONE", default_value = "UTC",
          value_parser = parse_time_zone)]
    pub time_zone: TimeZone,
}

/// Runs the operator until it is told to stop (exit 0) or loses its lease (an error, exit 1).
pub fn run(args: &RunArgs, _output: OutputFormat) -> anyhow::Result<Outcome> {
    let reboot = reboot_settings(args)?;
    let (manifest, payload) = verify_payload(&args.payload_dir, args.allow_synthetic_payload)?;
    tracing::info!(
        payload_dir = %args.payload_dir.display(),
        files = payload.files().count(),
        synthetic = payload.is_synthetic(),
        "payload verified"
    );
    if payload.is_synthetic() {
        tracing::warn!(
            payload_dir = %args.payload_dir.display(),
            "the payload is SYNTHETIC (pseudo-random binaries, accepted by --allow-synthetic-payload): hosts \
             configured by this operator cannot run their Windows services; for tests, the sandbox and benchmarks only"
        );
    }
    prepare_transcripts(args.record_transcripts.as_deref())?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(operate(args, reboot, manifest, payload))
}

/// The reboot policy and the maintenance window from the flags; a window that would never open is unusable input.
fn reboot_settings(args: &RunArgs) -> anyhow::Result<RebootSettings> {
    let window = MaintenanceWindow::new(&args.reboot_days, args.start_time, args.end_time, args.time_zone.clone())
        .map_err(|error| anyhow::Error::new(UnusableInput(error.to_string())))?;
    Ok(RebootSettings { policy: args.reboot_policy, window })
}

/// Creates the `--record-transcripts` directory (mode 0700) when one is asked for; one that cannot be created is
/// unusable input naming the flag.
fn prepare_transcripts(directory: Option<&Path>) -> anyhow::Result<()> {
    if let Some(directory) = directory {
        prepare_directory(directory)
            .map_err(|error| anyhow::Error::new(UnusableInput(format!("--record-transcripts: {error}"))))?;
        tracing::info!(directory = %directory.display(), "recording every host's command transcript");
    }
    Ok(())
}

/// Loads the payload; an incomplete or unreadable one is unusable input listing every problem, and so is a
/// synthetic one unless `allow_synthetic` (`--allow-synthetic-payload`).
fn verify_payload(dir: &Path, allow_synthetic: bool) -> anyhow::Result<(Manifest, Payload)> {
    let manifest = Manifest::product().context("the payload manifest built into this binary is invalid")?;
    let payload = Payload::load(dir, &manifest).map_err(|error| {
        let text = match &error {
            PayloadError::Incomplete { problems, .. } => {
                let mut text = format!("payload {} has {} problem(s):", dir.display(), problems.len());
                for problem in problems {
                    text.push_str(&format!("\n  - {problem}"));
                }
                text
            }
            PayloadError::UnreadableDir { .. } => format!("{:#}", anyhow::Error::new(error)),
        };
        anyhow::Error::new(UnusableInput(format!("--payload-dir: {text}")))
    })?;
    if payload.is_synthetic() && !allow_synthetic {
        return Err(anyhow::Error::new(UnusableInput(format!(
            "--payload-dir {}: payload is SYNTHETIC (pseudo-random test binaries, never installable on a real host); \
             build the real payload with `cargo xtask payload build`, or pass --allow-synthetic-payload for tests and \
             the sandbox",
            dir.display()
        ))));
    }
    // A real payload's binaries must be what the manifest says (PE32+ x86-64 console images whose Go build
    // information names the manifest's module and version for Windows): a swapped or foreign file never reaches a host.
    let mismatches = check_payload_binaries(&payload, &manifest).mismatches().to_vec();
    if !mismatches.is_empty() {
        let mut text = format!("--payload-dir {}: {} binary mismatch(es):", dir.display(), mismatches.len());
        for mismatch in &mismatches {
            text.push_str(&format!("\n  - {mismatch}"));
        }
        return Err(anyhow::Error::new(UnusableInput(text)));
    }
    Ok((manifest, payload))
}

/// Runs the operator through [`wmco_operator::process::run`] until SIGTERM or Ctrl-C; the admin's input errors
/// (a flag, the cluster's facts) are unusable input (exit 2).
async fn operate(
    args: &RunArgs,
    reboot: RebootSettings,
    manifest: Manifest,
    payload: Payload,
) -> anyhow::Result<Outcome> {
    let identity = identity(args);
    log_settings(args, &identity, &reboot);
    let options = RunOptions {
        flags: operator_flags(args, identity, reboot),
        plain_kubernetes: PlainKubernetesFlags {
            service_cidr: args.service_cidr,
            api_server_url: args.api_server_url.clone(),
            proxy: ProxySettings {
                http_proxy: args.node_http_proxy.clone().filter(|value| !value.is_empty()),
                https_proxy: args.node_https_proxy.clone().filter(|value| !value.is_empty()),
                no_proxy: args.node_no_proxy.clone().filter(|value| !value.is_empty()),
            },
        },
        listen: args.listen,
        metrics_endpoint: MetricsEndpointOptions {
            listen: args.metrics_listen,
            certificate: args.metrics_tls_cert.clone(),
            key: args.metrics_tls_key.clone(),
        },
        build: BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            revision: env!("WMCO_GIT_COMMIT").to_owned(),
        },
        lease: args.leader_election.then(|| args.lease_name.clone()),
        shutdown_grace: SHUTDOWN_GRACE,
        manifest,
        payload,
    };
    match wmco_operator::process::run(options, termination_requested()).await {
        Ok(()) => Ok(Outcome::Clean),
        Err(error) if error.is_unusable_input() => {
            Err(anyhow::Error::new(UnusableInput(format!("{:#}", anyhow::Error::new(error)))))
        }
        Err(error) => Err(anyhow::Error::new(error)),
    }
}

/// The operator's own settings from the flags.
fn operator_flags(args: &RunArgs, identity: String, reboot: RebootSettings) -> OperatorFlags {
    OperatorFlags {
        namespace: args.namespace.clone(),
        identity,
        ssh_port: args.ssh_port,
        ssh_command_timeout: Duration::from_secs(args.ssh_command_timeout_seconds),
        ssh_io_timeout: Duration::from_secs(args.ssh_io_timeout_seconds),
        concurrency: args.max_concurrent_configurations,
        max_unavailable: args.max_unavailable,
        authentication_grace: Duration::from_secs(args.authentication_grace_seconds),
        version_override: args.version_override.clone(),
        verbosity: if args.debug_node_services { Verbosity::Debug } else { Verbosity::Normal },
        cluster_networks: args.cluster_cidr.clone(),
        log_rotation: LogRotation {
            max_size_bytes: args.services_log_file_size,
            max_age: args.services_log_file_age,
            flush_interval: args.services_log_flush_interval,
        },
        record_transcripts: args.record_transcripts.clone(),
        reboot,
    }
}

/// The identity: `--ssh-identity`, else the host name (the pod name in a cluster).
fn identity(args: &RunArgs) -> String {
    args.ssh_identity
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("{CONTROLLER_NAME}-{}", std::process::id()))
}

fn log_settings(args: &RunArgs, identity: &str, reboot: &RebootSettings) {
    tracing::info!(
        namespace = %args.namespace,
        listen = %args.listen,
        metrics_listen = %args.metrics_listen,
        ssh_port = args.ssh_port,
        max_concurrent_configurations = args.max_concurrent_configurations,
        max_unavailable = args.max_unavailable,
        version_override = args.version_override.as_deref(),
        leader_election = args.leader_election,
        lease_name = %args.lease_name,
        identity,
        reboot_policy = %reboot.policy,
        maintenance_window = %reboot.window,
        "starting the operator"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use clap::error::ErrorKind;
    use wmco_payload_manifest::{
        CHECKSUM_FILE_NAME, SYNTHETIC_MARKER_FILE_NAME, SyntheticScale, write_synthetic_payload,
    };

    use crate::cli_support::exit_code_of_error;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(extra: &[&str]) -> Result<RunArgs, clap::Error> {
        let mut argv = vec!["wmco", "--payload-dir", "/payload"];
        argv.extend_from_slice(extra);
        TestCli::try_parse_from(argv).map(|cli| cli.run)
    }

    #[test]
    fn defaults_match_the_deployment_contract() {
        let args = parse(&[]).expect("parsed");
        assert_eq!(args.payload_dir, PathBuf::from("/payload"));
        assert_eq!(args.listen, "0.0.0.0:8080".parse::<SocketAddr>().expect("address"));
        assert_eq!(args.metrics_listen, "0.0.0.0:8443".parse::<SocketAddr>().expect("address"));
        assert_eq!((args.metrics_tls_cert, args.metrics_tls_key), (None, None));
        assert_eq!(args.ssh_port, 22);
        assert_eq!((args.ssh_command_timeout_seconds, args.ssh_io_timeout_seconds), (120, 60));
        assert_eq!(args.max_concurrent_configurations, 8);
        assert_eq!(args.max_unavailable, 1);
        assert_eq!(args.authentication_grace_seconds, 300);
        assert!(!args.allow_synthetic_payload);
        assert!(args.leader_election);
        assert_eq!(args.lease_name, "windows-machine-config-operator");
        assert_eq!(args.service_cidr, None);
        assert!(args.cluster_cidr.is_empty());
    }

    #[test]
    fn plain_kubernetes_flags_parse() {
        let args = parse(&[
            "--service-cidr=10.96.0.0/12",
            "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
            "--api-server-url=https://10.0.0.1:6443",
            "--node-http-proxy=http://proxy.lan:3128",
            "--node-no-proxy=.svc,10.96.0.0/12",
            "--leader-election=false",
            "--namespace=wmco",
        ])
        .expect("parsed");
        assert_eq!(args.service_cidr.map(|cidr| cidr.to_string()), Some("10.96.0.0/12".to_owned()));
        let cluster: Vec<String> = args.cluster_cidr.iter().map(ToString::to_string).collect();
        assert_eq!(cluster, vec!["10.244.0.0/16", "fd00:10:244::/56"]);
        assert!(!args.leader_election);
        assert_eq!(args.namespace, "wmco");
        assert_eq!(args.node_http_proxy.as_deref(), Some("http://proxy.lan:3128"));
        assert_eq!(
            (args.node_https_proxy.as_deref(), args.node_no_proxy.as_deref()),
            (None, Some(".svc,10.96.0.0/12"))
        );
    }

    #[test]
    fn the_operator_flags_come_from_the_command_line() {
        let args = parse(&[
            "--ssh-port=2222",
            "--max-concurrent-configurations=3",
            "--debug-node-services=true",
            "--max-unavailable=4",
            "--authentication-grace-seconds=20",
            "--version-override=10.18.0-e2e",
            "--cluster-cidr=10.128.0.0/14",
            "--ssh-command-timeout-seconds=15",
            "--ssh-io-timeout-seconds=5",
        ])
        .expect("parsed");
        let flags = operator_flags(&args, "wmco-0".into(), RebootSettings::default());
        assert_eq!(
            (flags.ssh_command_timeout, flags.ssh_io_timeout),
            (Duration::from_secs(15), Duration::from_secs(5))
        );
        assert_eq!(
            (flags.ssh_port, flags.concurrency, flags.identity.as_str(), flags.verbosity, flags.max_unavailable),
            (2222, 3, "wmco-0", Verbosity::Debug, 4)
        );
        assert_eq!(flags.namespace, "openshift-windows-machine-config-operator");
        assert_eq!(flags.authentication_grace, Duration::from_secs(20));
        assert_eq!(flags.version_override.as_deref(), Some("10.18.0-e2e"));
        assert_eq!(flags.cluster_networks.iter().map(ToString::to_string).collect::<Vec<_>>(), ["10.128.0.0/14"]);
        assert_eq!(
            operator_flags(&parse(&[]).expect("parsed"), "wmco-0".into(), RebootSettings::default()).verbosity,
            Verbosity::Normal
        );
    }

    #[test]
    fn log_rotation_takes_the_go_operator_values_and_refuses_unusable_ones_naming_the_flag() {
        let args = parse(&[
            "--services-log-file-size=100Mi",
            "--services-log-file-age=168h",
            "--services-log-flush-interval=5s",
        ])
        .expect("parsed");
        let rotation = operator_flags(&args, "wmco-0".into(), RebootSettings::default()).log_rotation;
        assert_eq!(rotation.max_size_bytes, Some(100 * 1024 * 1024));
        assert_eq!(rotation.max_age, Some(Duration::from_secs(168 * 3600)));
        assert_eq!(rotation.flush_interval, Some(Duration::from_secs(5)));
        assert_eq!(
            operator_flags(&parse(&[]).expect("parsed"), "wmco-0".into(), RebootSettings::default()).log_rotation,
            LogRotation::default()
        );
        for (flag, bad, expected) in [
            ("--services-log-file-size", "-1M", "Kubernetes quantity"),
            ("--services-log-file-age", "a week", "Go duration"),
            ("--services-log-flush-interval", "-5s", "Go duration"),
        ] {
            let error = parse(&[&format!("{flag}={bad}")]).expect_err("refused");
            assert_eq!(error.exit_code(), 2);
            let text = error.to_string();
            assert!(text.contains(flag) && text.contains(expected), "{text}");
        }
    }

    #[test]
    fn reboots_default_to_explicit_requests_only_at_any_time() {
        let settings = reboot_settings(&parse(&[]).expect("parsed")).expect("usable");
        assert_eq!(settings, RebootSettings::default());
        assert_eq!((settings.policy, settings.window.to_string()), (RebootPolicy::Never, "always".to_owned()));
    }

    #[test]
    fn the_reboot_flags_take_kureds_forms() {
        let args = parse(&[
            "--reboot-policy=when-required",
            "--reboot-days=sa,sunday",
            "--start-time=10pm",
            "--end-time=04:00",
            "--time-zone=Europe/Berlin",
        ])
        .expect("parsed");
        let settings = reboot_settings(&args).expect("usable");
        assert_eq!(settings.policy, RebootPolicy::WhenRequired);
        assert_eq!(settings.window.to_string(), "sun,sat 22:00:00-04:00:00 Europe/Berlin");
        assert_eq!(operator_flags(&args, "wmco-0".into(), settings.clone()).reboot, settings);
        let repeated = parse(&["--reboot-days=mo", "--reboot-days=2"]).expect("parsed");
        assert_eq!(repeated.reboot_days, [Weekday::Monday, Weekday::Tuesday]);
    }

    #[test]
    fn a_bad_reboot_flag_is_a_usage_error_naming_the_flag_and_the_value() {
        for (flag, bad, expected) in [
            ("--reboot-policy", "sometimes", "unknown reboot policy \"sometimes\""),
            ("--reboot-days", "mo,funday", "unknown day \"funday\""),
            ("--start-time", "25:00", "invalid time of day \"25:00\": hour 25 is out of range 0-23"),
            ("--end-time", "4:60", "invalid time of day \"4:60\": minute 60 is out of range 0-59"),
            ("--time-zone", "Mars/Olympus_Mons", "unknown time zone \"Mars/Olympus_Mons\""),
        ] {
            let error = parse(&[&format!("{flag}={bad}")]).expect_err("refused");
            assert_eq!((error.kind(), error.exit_code()), (ErrorKind::ValueValidation, 2), "{error}");
            let text = error.to_string();
            assert!(text.contains(flag) && text.contains(expected), "{text}");
        }
    }

    #[test]
    fn an_empty_maintenance_window_is_unusable_input_before_the_payload_is_read() {
        let args = parse(&["--start-time=2:00", "--end-time=02:00"]).expect("parsed");
        let error = run(&args, OutputFormat::Human).expect_err("empty window");
        assert_eq!(exit_code_of_error(&error), 2);
        assert!(error.to_string().starts_with("--start-time and --end-time are both 02:00:00"), "{error}");
    }

    #[test]
    fn transcripts_are_recorded_only_when_asked_for() {
        assert_eq!(
            operator_flags(&parse(&[]).expect("parsed"), "wmco-0".into(), RebootSettings::default()).record_transcripts,
            None
        );
        let args = parse(&["--record-transcripts", "/var/log/wmco-transcripts"]).expect("parsed");
        let flags = operator_flags(&args, "wmco-0".into(), RebootSettings::default());
        assert_eq!(flags.record_transcripts, Some(PathBuf::from("/var/log/wmco-transcripts")));
        prepare_transcripts(None).expect("nothing to prepare");
    }

    #[test]
    fn the_transcript_directory_is_created_or_is_unusable_input_naming_the_flag() {
        let dir = tempfile::tempdir().expect("temp dir");
        let transcripts = dir.path().join("transcripts");
        prepare_transcripts(Some(&transcripts)).expect("created");
        assert!(transcripts.is_dir());
        let file = dir.path().join("file");
        std::fs::write(&file, b"").expect("file written");
        let error = prepare_transcripts(Some(&file)).expect_err("a file is no directory");
        assert_eq!(exit_code_of_error(&error), 2);
        assert!(error.to_string().starts_with("--record-transcripts: transcript directory "), "{error}");
    }

    #[test]
    fn a_zero_ssh_time_limit_is_a_usage_error_naming_the_flag() {
        let error = parse(&["--ssh-command-timeout-seconds=0"]).expect_err("rejected");
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("--ssh-command-timeout-seconds"), "{error}");
    }

    #[test]
    fn bad_cidr_is_a_usage_error_naming_the_flag() {
        let error = parse(&["--service-cidr=10.96.0.0/40"]).expect_err("rejected");
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("'--service-cidr <CIDR>'"), "{error}");
    }

    #[test]
    fn bad_listen_address_is_a_usage_error_naming_the_flag() {
        let error = parse(&["--listen=8080"]).expect_err("rejected");
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("'--listen <ADDRESS:PORT>'"), "{error}");
    }

    #[test]
    fn zero_concurrency_is_rejected() {
        let error = parse(&["--max-concurrent-configurations=0"]).expect_err("rejected");
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("--max-concurrent-configurations"), "{error}");
    }

    #[test]
    fn missing_payload_is_unusable_input_naming_the_flag() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = verify_payload(&dir.path().join("absent"), false).expect_err("no payload");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert!(error.to_string().starts_with("--payload-dir: "), "{error}");
    }

    #[test]
    fn incomplete_payload_lists_every_problem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = verify_payload(dir.path(), false).expect_err("empty payload");
        let text = error.to_string();
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        let listed = text.lines().filter(|line| line.starts_with("  - ")).count();
        assert!(listed > 1, "{text}");
        assert!(text.starts_with(&format!("--payload-dir: payload {} has {listed} problem(s):", dir.path().display())));
    }

    /// The small synthetic payload of the product manifest, written into a fresh temporary directory.
    fn synthetic_payload() -> tempfile::TempDir {
        let manifest = Manifest::product().expect("the product manifest is valid");
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace_payload = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../payload");
        write_synthetic_payload(&manifest, &workspace_payload, dir.path(), SyntheticScale::Small).expect("written");
        dir
    }

    #[test]
    fn the_synthetic_payload_flag_is_a_switch() {
        let args = parse(&["--allow-synthetic-payload"]).expect("parsed");
        assert!(args.allow_synthetic_payload);
    }

    #[test]
    fn a_synthetic_payload_without_the_flag_is_unusable_input_naming_the_dir_and_the_flag() {
        let dir = synthetic_payload();
        let error = verify_payload(dir.path(), false).expect_err("synthetic payload refused");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert_eq!(exit_code_of_error(&error), 2);
        let text = error.to_string();
        assert!(text.starts_with(&format!("--payload-dir {}: payload is SYNTHETIC", dir.path().display())), "{text}");
        assert!(text.contains("pseudo-random"), "{text}");
        assert!(text.contains("cargo xtask payload build"), "{text}");
        assert!(text.contains("--allow-synthetic-payload"), "{text}");
    }

    #[test]
    fn a_synthetic_payload_with_the_flag_is_accepted() {
        let dir = synthetic_payload();
        let (_, payload) = verify_payload(dir.path(), true).expect("synthetic payload allowed");
        assert!(payload.is_synthetic());
        assert!(payload.files().count() > 1);
    }

    #[test]
    fn a_synthetic_payload_stripped_of_its_marker_is_refused_by_the_binary_check() {
        let dir = synthetic_payload();
        std::fs::remove_file(dir.path().join(SYNTHETIC_MARKER_FILE_NAME)).expect("marker removed");
        let checksums_path = dir.path().join(CHECKSUM_FILE_NAME);
        let checksums = std::fs::read_to_string(&checksums_path).expect("checksums read");
        let kept: String = checksums
            .lines()
            .filter(|line| line.split_whitespace().nth(1) != Some(SYNTHETIC_MARKER_FILE_NAME))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_ne!(kept, checksums);
        std::fs::write(&checksums_path, kept).expect("checksums written");
        // Its hashes verify, it no longer says it is synthetic, yet its pseudo-random binaries are no PE images.
        let error = verify_payload(dir.path(), true).expect_err("the binaries are not what the manifest says");
        assert_eq!(exit_code_of_error(&error), 2);
        let text = format!("{error:#}");
        assert!(text.contains("binary mismatch(es)"), "{text}");
        assert!(text.contains("kube-node/kubelet.exe"), "{text}");
        assert!(text.contains("not a PE image") || text.contains("PE"), "{text}");
    }
}
