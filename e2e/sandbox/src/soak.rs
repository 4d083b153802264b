//! The soak (issue 21): a fleet of simulated hosts under churn for a bounded time, loopback only. Every host starts
//! in the ConfigMap and turns Ready (the warm-up); then, every churn interval, one host chosen by a seeded random
//! generator leaves the ConfigMap or comes back; kube-apiserver restarts once at a third of the time and the
//! operator once (SIGKILL, then started again) at two thirds. Every minute a [`SoakSample`] records the operator's
//! resident set (`VmRSS`), the Events in the operator namespace (each Event counted with its series count) and the
//! reconciles the operator counted (`wmco_reconcile_total`, summed over controllers and results; a restart's reset
//! is carried over). At the end the churn stops and every host must converge: Ready when its entry is there, no
//! record when it is not.
//!
//! ```no_run
//! # async fn demo(sandbox: &wmco_sandbox::Sandbox) -> anyhow::Result<()> {
//! use std::time::Duration;
//! use wmco_sandbox::soak::{SoakOptions, run};
//! let options = SoakOptions { duration: Duration::from_secs(1800), ..SoakOptions::default() };
//! let report = run(sandbox, &options).await?;
//! println!("{}", report.table());
//! assert!(report.not_converged.is_empty());
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use wmco_cluster_client::types::InstancePhase;

use crate::{HOST_USER, OPERATOR_NAMESPACE, Sandbox};

/// How long the fleet may take to turn Ready at the start and to converge at the end.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(1200);

/// What a soak does.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// How long the churn lasts (after the warm-up).
    pub duration: Duration,
    /// How often one host leaves or comes back.
    pub churn_interval: Duration,
    /// How often a sample is taken.
    pub sample_interval: Duration,
    /// The seed of the churn.
    pub seed: u64,
}

impl Default for SoakOptions {
    /// 30 minutes, one change every 20 s, a sample a minute, seed 1.
    fn default() -> SoakOptions {
        SoakOptions {
            duration: Duration::from_secs(1800),
            churn_interval: Duration::from_secs(20),
            sample_interval: Duration::from_secs(60),
            seed: 1,
        }
    }
}

/// One sample.
#[derive(Clone, Debug)]
pub struct SoakSample {
    /// Since the churn began.
    pub at: Duration,
    /// The operator's resident set, bytes.
    pub rss_bytes: u64,
    /// Events in the operator namespace so far (series counts included).
    pub events: u64,
    /// Reconciles the operators counted so far.
    pub reconciles: f64,
    /// Records Ready.
    pub ready: usize,
    /// Entries in the ConfigMap.
    pub wanted: usize,
}

/// What a soak found.
#[derive(Clone, Debug, Default)]
pub struct SoakReport {
    /// The seed.
    pub seed: u64,
    /// The warm-up: how long the whole fleet took to turn Ready.
    pub warm_up: Duration,
    /// Every sample, in order.
    pub samples: Vec<SoakSample>,
    /// Entries added and removed.
    pub changes: usize,
    /// What happened when (the restarts).
    pub incidents: Vec<(Duration, String)>,
    /// How long the fleet took to converge after the churn stopped.
    pub final_convergence: Duration,
    /// Hosts not converged at the end (must be none).
    pub not_converged: Vec<String>,
}

impl SoakReport {
    /// The table of samples with per-minute rates.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "soak, seed {}: warm-up {:.1} s, {} changes",
            self.seed,
            self.warm_up.as_secs_f64(),
            self.changes
        );
        for (at, incident) in &self.incidents {
            let _ = writeln!(out, "at {:>6.1} min: {incident}", at.as_secs_f64() / 60.0);
        }
        let _ = writeln!(out, "| minute | RSS MiB | Events/min | reconciles/min | Ready / wanted |");
        let _ = writeln!(out, "|-------:|--------:|-----------:|---------------:|---------------:|");
        let mut previous: Option<&SoakSample> = None;
        for sample in &self.samples {
            let (events_rate, reconcile_rate) = match previous {
                Some(before) => {
                    let minutes = (sample.at - before.at).as_secs_f64() / 60.0;
                    (
                        sample.events.saturating_sub(before.events) as f64 / minutes,
                        (sample.reconciles - before.reconciles) / minutes,
                    )
                }
                None => (0.0, 0.0),
            };
            let _ = writeln!(
                out,
                "| {:>6.1} | {:>7.1} | {:>10.1} | {:>14.1} | {:>6} / {:<6} |",
                sample.at.as_secs_f64() / 60.0,
                sample.rss_bytes as f64 / 1_048_576.0,
                events_rate,
                reconcile_rate,
                sample.ready,
                sample.wanted
            );
            previous = Some(sample);
        }
        let _ = writeln!(
            out,
            "converged {:.1} s after the churn stopped; not converged: {}",
            self.final_convergence.as_secs_f64(),
            if self.not_converged.is_empty() { "none".to_owned() } else { self.not_converged.join(", ") }
        );
        out
    }
}

/// The operator's `VmRSS` in bytes.
fn resident_set(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).context("no VmRSS line")?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse()?;
    Ok(kib * 1024)
}

/// The sum of every `wmco_reconcile_total` sample.
fn reconcile_total(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("wmco_reconcile_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Events in the operator namespace, each with its series count.
async fn event_count(sandbox: &Sandbox) -> anyhow::Result<u64> {
    let events: Api<Event> = Api::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let listed = events.list(&ListParams::default()).await?.items;
    Ok(listed
        .iter()
        .map(|event| event.series.as_ref().map_or(1, |series| u64::try_from(series.count).unwrap_or(1).max(1)))
        .sum())
}

/// One sample (reconciles as the running operator counted them).
async fn take_sample(sandbox: &Sandbox, at: Duration, wanted: usize) -> anyhow::Result<SoakSample> {
    let metrics = sandbox.operator_metrics().await?;
    let pid = sandbox.operator_pid().context("the operator is not running")?;
    let ready = sandbox
        .windows_instances()
        .await?
        .iter()
        .filter(|record| record.status.as_ref().is_some_and(|status| status.phase == Some(InstancePhase::Ready)))
        .count();
    Ok(SoakSample {
        at,
        rss_bytes: resident_set(pid)?,
        events: event_count(sandbox).await?,
        reconciles: reconcile_total(&metrics),
        ready,
        wanted,
    })
}

/// Runs the soak on `sandbox`, whose hosts are not in the ConfigMap yet.
///
/// # Errors
/// When the fleet never turns Ready at the start, a restart fails, or the cluster cannot be read.
pub async fn run(sandbox: &Sandbox, options: &SoakOptions) -> anyhow::Result<SoakReport> {
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut report = SoakReport { seed: options.seed, ..SoakReport::default() };
    let all = sandbox.entries_for_all_hosts();
    let keys: Vec<String> = all.keys().cloned().collect();
    let started = Instant::now();
    sandbox.write_instances(&all).await?;
    sandbox.wait_until_ready(keys.len(), CONVERGE_TIMEOUT).await?;
    report.warm_up = started.elapsed();
    eprintln!("soak: {} hosts Ready after {:.1} s", keys.len(), report.warm_up.as_secs_f64());

    let mut present: BTreeSet<String> = keys.iter().cloned().collect();
    let churn_began = Instant::now();
    let mut next_change = options.churn_interval;
    let mut next_sample = Duration::ZERO;
    let (mut api_restarted, mut operator_restarted) = (false, false);
    let (mut reconciles_before_restart, mut last_reconciles) = (0.0, 0.0);
    loop {
        let now = churn_began.elapsed();
        if now >= next_sample {
            // The API server may be restarting: a failed read is retried at the next tick, not a failed soak.
            match take_sample(sandbox, now, present.len()).await {
                Ok(mut sample) => {
                    if sample.reconciles < last_reconciles {
                        reconciles_before_restart += last_reconciles;
                    }
                    last_reconciles = sample.reconciles;
                    sample.reconciles += reconciles_before_restart;
                    eprintln!(
                        "soak: {:.1} min: RSS {:.1} MiB, {} Events, {:.0} reconciles, {}/{} Ready",
                        now.as_secs_f64() / 60.0,
                        sample.rss_bytes as f64 / 1_048_576.0,
                        sample.events,
                        sample.reconciles,
                        sample.ready,
                        sample.wanted
                    );
                    report.samples.push(sample);
                    next_sample += options.sample_interval;
                }
                Err(error) => {
                    eprintln!("soak: sample at {:.1} min failed, retrying: {error:#}", now.as_secs_f64() / 60.0)
                }
            }
        }
        if now >= options.duration {
            break;
        }
        if !api_restarted && now >= options.duration / 3 {
            sandbox.control_plane().restart_api_server().await?;
            report.incidents.push((now, "kube-apiserver restarted".to_owned()));
            api_restarted = true;
        }
        if !operator_restarted && now >= options.duration * 2 / 3 {
            sandbox.kill_operator();
            sandbox.start_operator().await?;
            report.incidents.push((now, "operator SIGKILLed and started again".to_owned()));
            operator_restarted = true;
        }
        if now >= next_change {
            let key = &keys[rng.random_range(0..keys.len())];
            let changed = if present.contains(key) {
                sandbox.remove_instance_entry(key).await
            } else {
                sandbox.set_instance_entry(key, &format!("username={HOST_USER}")).await
            };
            match changed {
                Ok(()) => {
                    if !present.remove(key) {
                        present.insert(key.clone());
                    }
                    report.changes += 1;
                    next_change += options.churn_interval;
                }
                Err(error) => eprintln!("soak: changing entry {key} failed, retrying: {error:#}"),
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let stopped = Instant::now();
    let mut next_report = Duration::from_secs(30);
    loop {
        let records: BTreeMap<String, Option<InstancePhase>> = sandbox
            .windows_instances()
            .await
            .context("reading the records after the churn")?
            .into_iter()
            .map(|record| (record.spec.address.clone(), record.status.and_then(|status| status.phase)))
            .collect();
        let pending: Vec<String> = keys
            .iter()
            .filter_map(|key| {
                let phase = records.get(key);
                let converged =
                    if present.contains(key) { phase == Some(&Some(InstancePhase::Ready)) } else { phase.is_none() };
                (!converged)
                    .then(|| format!("{key} ({})", phase.map_or("no record".to_owned(), |phase| format!("{phase:?}"))))
            })
            .collect();
        if stopped.elapsed() >= next_report {
            eprintln!(
                "soak: {:.0} s after the churn stopped, not converged: {}",
                stopped.elapsed().as_secs_f64(),
                pending.join(", ")
            );
            next_report += Duration::from_secs(30);
        }
        if pending.is_empty() || stopped.elapsed() > CONVERGE_TIMEOUT {
            report.final_convergence = stopped.elapsed();
            report.not_converged = pending;
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
