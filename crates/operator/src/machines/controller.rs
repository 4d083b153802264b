//! The kube-runtime wiring of the Machine controller:
//!
//! - a `Controller` over the Machines labelled `machine.openshift.io/os-id=Windows` in `openshift-machine-api`,
//!   calling [`reconcile_machine`] with bounded concurrency, also triggered by changes of their records (so a
//!   deleted record of a live Machine is re-created), with the runtime's error policy (exponential backoff);
//! - a sweep loop over the same Machine watch: after the initial listing and after every Machine deletion it runs
//!   [`sweep_records`], so a Machine that disappeared takes its record (and the host's configuration) with it.
//!
//! Exercised against a real apiserver by the e2e suite.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};
use wmco_cluster_client::types::{InstanceOrigin, Machine, WindowsInstance};
use wmco_machines::names::{MACHINE_API_NAMESPACE, OS_ID_LABEL, WINDOWS_OS_ID};

use super::context::{FIRST_RETRY, MAX_RETRY};
use super::{MachineOutcome, MachinesContext, MachinesError, reconcile_machine, sweep_records};
use crate::runtime::{Controlled, ReconcilerError, RetryBackoff, error_policy, report, timed, tracked};

/// How many Machines are reconciled at once.
pub const DEFAULT_CONCURRENCY: u16 = 4;

/// The controller name of the sweep loop in the reconcile metrics.
const SWEEP: &str = "machine_sweep";

/// Runs the Machine controller and the sweep loop until the watches end (the process shuts down).
///
/// ```no_run
/// # async fn run(client: kube::Client, context: std::sync::Arc<wmco_operator::machines::MachinesContext>) {
/// wmco_operator::machines::controller(client, context).await;
/// # }
/// ```
pub async fn controller(client: Client, ctx: Arc<MachinesContext>) {
    let machines: Api<Machine> = Api::namespaced(client.clone(), MACHINE_API_NAMESPACE);
    let records: Api<WindowsInstance> = Api::namespaced(client, &ctx.settings.namespace);
    let windows_machines = watcher::Config::default().labels(&format!("{OS_ID_LABEL}={WINDOWS_OS_ID}"));
    let reconciles = Controller::new(machines.clone(), windows_machines.clone())
        .watches(records, watcher::Config::default(), |record| machine_of_record(&record))
        .with_config(controller::Config::default().concurrency(DEFAULT_CONCURRENCY))
        .run(reconcile, error_policy, Arc::clone(&ctx))
        .for_each(|result| report(MachinesContext::NAME, result));
    let sweeps = sweep_loop(machines, windows_machines, ctx);
    futures::join!(reconciles, sweeps);
}

/// The Machine a record was made for.
fn machine_of_record(record: &WindowsInstance) -> Option<ObjectRef<Machine>> {
    if record.spec.origin != InstanceOrigin::Machine {
        return None;
    }
    let name = record.spec.machine_name.as_deref()?;
    Some(ObjectRef::new(name).within(MACHINE_API_NAMESPACE))
}

async fn reconcile(machine: Arc<Machine>, ctx: Arc<MachinesContext>) -> Result<Action, MachinesError> {
    let outcome = tracked(ctx.as_ref(), machine.as_ref(), reconcile_machine(&machine, &ctx)).await?;
    if !matches!(outcome, MachineOutcome::Unchanged { .. } | MachineOutcome::Skipped(_) | MachineOutcome::NothingToDo) {
        tracing::debug!(machine = %MachinesContext::key(&machine), outcome = ?outcome, "Machine reconciled");
    }
    Ok(Action::await_change())
}

/// Sweeps the records after the Machine watch's initial listing and after every Machine deletion.
async fn sweep_loop(machines: Api<Machine>, config: watcher::Config, ctx: Arc<MachinesContext>) {
    let mut events = watcher(machines, config).default_backoff().boxed();
    loop {
        match events.try_next().await {
            Ok(Some(watcher::Event::InitDone | watcher::Event::Delete(_))) => sweep_until_done(&ctx).await,
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(error) => tracing::warn!(error = %error, "watching Windows Machines"),
        }
    }
}

async fn sweep_until_done(ctx: &MachinesContext) {
    let retries = RetryBackoff::new(FIRST_RETRY, MAX_RETRY);
    loop {
        match timed(&ctx.metrics, SWEEP, sweep_records(ctx)).await {
            Ok(outcomes) => {
                tracing::debug!(records = outcomes.len(), "Machine records swept");
                return;
            }
            Err(error) => {
                tracing::warn!(kind = error.metric_label(), error = %error, "Machine record sweep failed");
                ctx.metrics.record_error("machine-sweep", error.metric_label());
                tokio::time::sleep(retries.on_failure(SWEEP)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use wmco_cluster_client::types::WindowsInstanceSpec;

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        let retries = RetryBackoff::new(FIRST_RETRY, MAX_RETRY);
        let all: Vec<_> = (0..50).map(|_| retries.on_failure(SWEEP)).collect();
        let waits: Vec<_> = [1, 2, 3, 9, 50].map(|attempt| all[attempt - 1]).into();
        assert_eq!(waits, [1, 2, 4, 256, 300].map(Duration::from_secs));
    }

    #[test]
    fn a_failed_reconcile_is_counted_and_backs_off_longer_each_time() {
        let settings =
            super::super::MachinesSettings { namespace: "wmco".into(), platform: wmco_cluster_client::Platform::Aws };
        let ctx = Arc::new(MachinesContext::new(&wmco_cluster_client::fake::FakeCluster::default().seams(), settings));
        let machine = wmco_cluster_client::fake::objects::machine("win-a").build();
        let error = || MachinesError::ReadMachine {
            machine: "openshift-machine-api/win-a".into(),
            source: Box::new(wmco_cluster_client::Error::MissingField {
                verb: wmco_cluster_client::Verb::Get,
                kind: "Machine",
                name: "win-a".into(),
                field: "metadata",
            }),
        };
        let first = error_policy(Arc::new(machine.clone()), &error(), Arc::clone(&ctx));
        let second = error_policy(Arc::new(machine), &error(), Arc::clone(&ctx));
        assert_eq!((first, second), (Action::requeue(FIRST_RETRY), Action::requeue(FIRST_RETRY * 2)));
        let metrics = ctx.metrics.encode().unwrap();
        assert!(
            metrics.contains("wmco_reconcile_errors_total{controller=\"machines\",kind=\"machine_read\"} 2\n"),
            "{metrics}"
        );
    }

    #[test]
    fn a_machine_record_maps_to_its_machine_and_a_byoh_record_to_none() {
        let spec = |origin, machine_name: Option<&str>| WindowsInstanceSpec {
            address: "10.0.0.5".into(),
            username: "Administrator".into(),
            origin,
            machine_name: machine_name.map(str::to_owned),
            expected_node_name: None,
        };
        let machine = WindowsInstance::new("machine-win-a", spec(InstanceOrigin::Machine, Some("win-a")));
        assert_eq!(
            machine_of_record(&machine),
            Some(ObjectRef::<Machine>::new("win-a").within("openshift-machine-api"))
        );
        let byoh = WindowsInstance::new("byoh-10-0-0-5", spec(InstanceOrigin::Byoh, None));
        assert_eq!(machine_of_record(&byoh), None);
    }
}
