//! `wmco-bench-csr`: the CSR controller under a flood, for `cargo xtask bench-csr`. Two runs on the e2e control
//! plane, each a fresh sandbox with `--hosts` simulated Windows hosts: first without a flood, then with `--flood`
//! pending Linux kubelet CSRs (half client renewals, half serving requests, `CN=system:node:linux-N`, created
//! before the hosts are written). Each run prints: how long the flood took to be decided (every flood CSR left
//! pending by rule A5) and the CSR LISTs the API server served meanwhile; from the ConfigMap write, the time until
//! the operator approved every Windows host's two CSRs and until every host was Ready; the API server's requests on
//! CertificateSigningRequests (LIST and all verbs but WATCH) per operator decision over the join; and the
//! operator's peak RSS (`VmHWM`). The summary compares the flood run with the quiet one.
//! Figures, not assertions: it fails only if the hosts never join.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use kube::api::{Api, ObjectMeta, PostParams};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};
use wmco_sandbox::operator::metric_value as metric;
use wmco_sandbox::{Sandbox, SandboxOptions};

const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// How often the operator's metrics and the records are read while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How many flood CSRs are created at once.
const CREATE_CONCURRENCY: usize = 16;

/// The CSR controller under a flood of Linux kubelet CSRs.
#[derive(Debug, Parser)]
#[command(name = "wmco-bench-csr", version)]
struct Cli {
    /// How many simulated Windows hosts join in each run.
    #[arg(long, default_value_t = 10)]
    hosts: u8,
    /// How many pending Linux CSRs the flood run creates first.
    #[arg(long, default_value_t = 5_000)]
    flood: usize,
    /// How long one run may take, in seconds.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
}

/// One run's figures.
#[derive(Debug)]
struct Figures {
    flood: usize,
    flood_decided: Option<Duration>,
    flood_lists: f64,
    approved: Duration,
    ready: Duration,
    decisions: f64,
    csr_lists: f64,
    csr_requests: f64,
    peak_rss_kib: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        println!("== run: {} hosts, no flood", cli.hosts);
        let quiet = run_once(&cli, 0).await?;
        print_figures(&quiet);
        println!("== run: {} hosts, {} pending Linux CSRs", cli.hosts, cli.flood);
        let flooded = run_once(&cli, cli.flood).await?;
        print_figures(&flooded);
        println!("== summary");
        print_figures(&quiet);
        print_figures(&flooded);
        let ratio = |flooded: f64, quiet: f64| flooded / quiet.max(f64::EPSILON);
        println!(
            "flood/quiet: Windows CSRs approved in {:.2}x the time, all Ready in {:.2}x, operator peak RSS {}",
            ratio(flooded.approved.as_secs_f64(), quiet.approved.as_secs_f64()),
            ratio(flooded.ready.as_secs_f64(), quiet.ready.as_secs_f64()),
            match (flooded.peak_rss_kib, quiet.peak_rss_kib) {
                (Some(flooded), Some(quiet)) => format!("{:.2}x", ratio(flooded as f64, quiet as f64)),
                _ => "unknown".to_owned(),
            }
        );
        anyhow::Ok(())
    })
}

async fn run_once(cli: &Cli, flood: usize) -> anyhow::Result<Figures> {
    let timeout = Duration::from_secs(cli.timeout);
    let options = SandboxOptions { hosts: cli.hosts, localhost_host: false, ..SandboxOptions::default() };
    let sandbox = Sandbox::start(options).await.context("the sandbox did not start")?;
    let client = sandbox.admin_client();
    let (mut flood_decided, mut flood_lists) = (None, 0.0);
    if flood > 0 {
        let lists_before = csr_requests(&client).await?.0;
        let started = Instant::now();
        create_flood(&client, flood).await?;
        wait_for(&sandbox, timeout, |metrics| verdicts(metrics, "Ignored", "A5") >= flood as f64).await?;
        flood_decided = Some(started.elapsed());
        flood_lists = csr_requests(&client).await?.0 - lists_before;
    }
    let (lists_before, requests_before) = csr_requests(&client).await?;
    let decisions_before = all_verdicts(&sandbox.operator_metrics().await?);
    let started = Instant::now();
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let windows_csrs = 2.0 * f64::from(cli.hosts);
    wait_for(&sandbox, timeout, |metrics| verdicts(metrics, "Approved", "all") >= windows_csrs).await?;
    let approved = started.elapsed();
    sandbox.wait_until_ready(usize::from(cli.hosts), timeout).await?;
    let ready = started.elapsed();
    let (lists_after, requests_after) = csr_requests(&client).await?;
    let decisions = all_verdicts(&sandbox.operator_metrics().await?) - decisions_before;
    let peak_rss_kib = sandbox.operator_pid().and_then(peak_rss_kib);
    Ok(Figures {
        flood,
        flood_decided,
        flood_lists,
        approved,
        ready,
        decisions,
        csr_lists: lists_after - lists_before,
        csr_requests: requests_after - requests_before,
        peak_rss_kib,
    })
}

/// Creates `count` pending Linux kubelet CSRs: even ones client renewals, odd ones serving requests, each for its
/// own `linux-N` node (one key for all: the operator never reaches the key of a request out of scope).
async fn create_flood(client: &kube::Client, count: usize) -> anyhow::Result<()> {
    let key = KeyPair::generate()?;
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    futures::stream::iter(0..count)
        .map(|index| {
            let api = api.clone();
            let csr = linux_csr(&key, index);
            async move { api.create(&PostParams::default(), &csr?).await.context("creating a flood CSR") }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
}

fn linux_csr(key: &KeyPair, index: usize) -> anyhow::Result<CertificateSigningRequest> {
    let node = format!("linux-{index}");
    let serving = index % 2 == 1;
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{node}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    if serving {
        params.subject_alt_names = vec![SanType::DnsName(node.clone().try_into()?)];
    }
    let pem = params.serialize_request(key)?.pem()?;
    let (signer, usage) = if serving { (SERVING_SIGNER, "server auth") } else { (CLIENT_SIGNER, "client auth") };
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta { name: Some(format!("flood-{index}")), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: signer.to_owned(),
            usages: Some(vec!["digital signature".to_owned(), usage.to_owned()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

/// Polls the operator's metrics until `done` holds.
async fn wait_for(sandbox: &Sandbox, timeout: Duration, done: impl Fn(&str) -> bool) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        sandbox.check_operator()?;
        if let Ok(metrics) = sandbox.operator_metrics().await
            && done(&metrics)
        {
            return Ok(());
        }
        if started.elapsed() > timeout {
            sandbox.keep_directory();
            bail!("timed out after {timeout:?}; operator log {}", sandbox.operator_log_path().display());
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `wmco_csr_verdicts_total` for one verdict and rule.
fn verdicts(metrics: &str, verdict: &str, rule: &str) -> f64 {
    metric(metrics, &format!("wmco_csr_verdicts_total{{verdict=\"{verdict}\",rule=\"{rule}\"}}")).unwrap_or(0.0)
}

/// Every decision the operator counted.
fn all_verdicts(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("wmco_csr_verdicts_total{"))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The API server's requests on CertificateSigningRequests so far (`apiserver_request_total`): LISTs, and every
/// verb but WATCH (whoever made them: the operator, the simulated kubelets, kube-controller-manager).
async fn csr_requests(client: &kube::Client) -> anyhow::Result<(f64, f64)> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await.context("reading the API server's metrics")?;
    let mut lists = 0.0;
    let mut all = 0.0;
    for line in text.lines().filter(|line| line.starts_with("apiserver_request_total{")) {
        if !line.contains("resource=\"certificatesigningrequests\"") || line.contains("verb=\"WATCH\"") {
            continue;
        }
        let Some(value) = line.rsplit_once(' ').and_then(|(_, value)| value.parse::<f64>().ok()) else {
            continue;
        };
        all += value;
        if line.contains("verb=\"LIST\"") {
            lists += value;
        }
    }
    Ok((lists, all))
}

/// `VmHWM` (peak resident set) of a process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?.trim().parse().ok())
}

fn print_figures(figures: &Figures) {
    let flood = match figures.flood_decided {
        Some(took) => format!(
            "flood of {} decided in {:.1} s with {:.0} CSR LISTs; ",
            figures.flood,
            took.as_secs_f64(),
            figures.flood_lists
        ),
        None => "no flood; ".to_owned(),
    };
    let per_decision = |count: f64| count / figures.decisions.max(1.0);
    println!(
        "{flood}Windows CSRs approved {:.1} s and all Ready {:.1} s after the ConfigMap; over the join {:.0} \
         decisions, CSR LISTs {:.0} ({:.2} per decision), CSR requests but WATCH {:.0} ({:.2} per decision); \
         operator peak RSS {}",
        figures.approved.as_secs_f64(),
        figures.ready.as_secs_f64(),
        figures.decisions,
        figures.csr_lists,
        per_decision(figures.csr_lists),
        figures.csr_requests,
        per_decision(figures.csr_requests),
        figures.peak_rss_kib.map_or_else(|| "unknown".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0)),
    );
}
