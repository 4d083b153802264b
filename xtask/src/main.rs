//! `cargo xtask`: the project's developer and CI tasks.
//!
//! `cargo xtask test` runs every check CI runs (format, lints, docs, all tests), each as a timed stage (`--repeat N`
//! runs the tests N times and lists every test that was not green every time);
//! `cargo xtask sandbox` runs the product on the embedded default: a local control plane with simulated Windows hosts.
//! `cargo xtask bench-ssh` benchmarks the SSH transport against a local sshd; `cargo xtask bench-fleet` the operator on
//! simulated hosts; `cargo xtask fault-campaign` breaks every step of the flows in turn and prints how each converged;
//! `cargo xtask soak` churns a fleet for a bounded time and prints the operator's memory, Events and reconciles.
//! `cargo xtask controlplane build|up` builds or runs the e2e control plane (see `docs/testing.md`);
//! `cargo xtask payload build|smoke|synthetic` builds, smoke-tests or fakes the Windows payload (`payload/README.md`);
//! `cargo xtask image` builds the operator image (an OCI layout and an oci-archive, no container engine);
//! `cargo xtask bundle` generates, validates and packs the OLM bundle;
//! `cargo xtask man` writes the man pages of `wmco`.

mod background;
mod bench_csr;
mod bench_fleet;
mod bench_ssh;
mod bundle;
mod controlplane;
mod cpu;
mod deny;
mod deps;
mod fault_campaign;
mod image;
mod man;
mod payload;
mod repeat;
mod sandbox;
mod soak;
mod stages;
mod test;
mod test_binaries;
mod test_pool;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Developer and CI tasks of wmco-rs.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about)]
struct Xtask {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Run everything CI checks: cargo fmt --check, clippy with warnings denied, rustdoc with warnings denied, cargo
    /// deny (licenses, bans, sources) and all tests. Prints each stage's wall time.
    Test(test::TestArgs),
    /// Run the product on the embedded default: a local control plane, simulated Windows hosts and the operator
    /// (with the small synthetic payload, or `--payload real` for the cross-compiled Windows binaries).
    Sandbox(sandbox::SandboxArgs),
    /// Fleet figures of the operator on simulated hosts: time to all Ready at concurrency 8 and 1, per-host p50/p95,
    /// SSH round trips and bytes per host (first configure, no-op reconcile), operator peak RSS; then upgrades of the
    /// first run's fleet (max-unavailable 1 and 4, then one changed payload file): times, budget use, bytes per host.
    /// `--payload real` uses the real payload, `--release` a release build of the operator.
    BenchFleet(bench_fleet::BenchFleetArgs),
    /// The CSR controller under a flood: simulated Windows hosts join without and after thousands of pending Linux
    /// kubelet CSRs; time to approve them, API requests per decision, operator peak RSS.
    BenchCsr(bench_csr::BenchCsrArgs),
    /// Benchmark ssh-transport against a local sshd: upload throughput versus OpenSSH sftp, commands/s, connect time.
    BenchSsh,
    /// The fault campaign: every step of a configure and a deconfigure broken by each fault (drop, fail, hang or
    /// stall, reboot, disk full) beside a healthy neighbour, then operator SIGKILLs and API-server restarts at
    /// seeded random moments; prints outcomes and times to converge.
    FaultCampaign(fault_campaign::FaultCampaignArgs),
    /// The soak: `--hosts` simulated hosts churned for `--minutes`, one API-server and one operator restart; prints
    /// the operator's resident set, Events and reconciles per minute, and fails if a host did not converge.
    Soak(soak::SoakArgs),
    /// Build (`build`) or run (`up`) the e2e control plane: etcd, kube-apiserver and kube-controller-manager.
    Controlplane(controlplane::ControlPlaneArgs),
    /// The Windows node payload: `build` the real one from pinned Go modules, `smoke` it under Wine, or write a
    /// `synthetic` one for tests.
    Payload(payload::PayloadArgs),
    /// The operator image, without a container engine: the release `wmco`, the real payload at /payload, user 1001;
    /// an OCI layout and an oci-archive tarball, the same digest for the same inputs.
    Image(image::ImageArgs),
    /// The OLM bundle: generate bundle/ from the manifests (or `--check` it), validate it with the operatorframework
    /// suite, and build the bundle image.
    Bundle(bundle::BundleArgs),
    /// The man pages of `wmco` (`wmco.1` and one page per subcommand), generated from its clap definition, into
    /// `man` in the cargo target directory (or `--output DIR`).
    Man(man::ManArgs),
}

fn main() -> ExitCode {
    let xtask = Xtask::parse();
    let result = match xtask.task {
        Task::Test(args) => test::run(&args),
        Task::Sandbox(args) => sandbox::run(&args),
        Task::BenchFleet(args) => bench_fleet::run(&args),
        Task::BenchCsr(args) => bench_csr::run(&args),
        Task::BenchSsh => bench_ssh::run(),
        Task::FaultCampaign(args) => fault_campaign::run(&args),
        Task::Soak(args) => soak::run(&args),
        Task::Controlplane(args) => controlplane::run(&args),
        Task::Payload(args) => payload::run(&args),
        Task::Image(args) => image::run(&args),
        Task::Bundle(args) => bundle::run(&args),
        Task::Man(args) => man::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}
