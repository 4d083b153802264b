//! Criterion benchmark: planning a mixed fleet of 5,000 instances (BYOH and Machines at several versions, some
//! new, removed, rotated, not Ready, backing off or asking for a restart or reboot).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use jiff::{SignedDuration, Timestamp};
use semver::Version;
use wmco_upgrade_planner::{
    DisruptionKind, Failure, Fleet, Instance, InstanceOrigin, InstancePhase, NodeState, Policy, RequestState,
    RequestedDisruption, plan,
};

const FLEET_SIZE: usize = 5_000;
const CURRENT_KEY: &str = "current-key";

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A deterministic mixed fleet: the index decides each instance's situation.
fn mixed_fleet(size: usize) -> Fleet {
    let versions = [Version::new(0, 8, 0), Version::new(0, 9, 0), Version::new(1, 0, 0)];
    let instances = (0..size)
        .map(|index| {
            let kind = if index % 3 == 0 { InstanceOrigin::Byoh } else { InstanceOrigin::Machine };
            let node = (index % 10 != 0).then(|| NodeState {
                ready: index % 17 != 0,
                cordoned_by: None,
                configured_version: Some(versions[index % versions.len()].clone()),
                upgrading: false,
                pub_key_hash: Some(if index % 23 == 0 { "old-key" } else { CURRENT_KEY }.to_owned()),
            });
            let last_failure = (index % 29 == 0).then(|| Failure {
                message: "ssh: connection refused".into(),
                retry_after: now() + SignedDuration::from_secs(300),
            });
            Instance {
                // Scatter names so their order differs from the input order.
                name: format!("host-{:05}", (index * 7_919) % size),
                kind,
                desired: index % 31 != 0,
                phase: if node.is_some() { InstancePhase::Ready } else { InstancePhase::Pending },
                node,
                last_failure,
                disruption: (index % 13 == 0).then_some(RequestedDisruption {
                    kind: if index % 2 == 0 { DisruptionKind::Restart } else { DisruptionKind::Reboot },
                    state: if index % 39 == 0 { RequestState::Granted } else { RequestState::Requested },
                }),
            }
        })
        .collect();
    Fleet { now: now(), current_pub_key_hash: CURRENT_KEY.into(), instances, machines_away: 3 }
}

fn planning(criterion: &mut Criterion) {
    let fleet = mixed_fleet(FLEET_SIZE);
    let mut policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 2), Version::new(1, 33, 1));
    policy.max_unavailable = 50;
    criterion.bench_function("plan 5000 instances", |bencher| {
        bencher.iter(|| plan(black_box(&fleet), black_box(&policy)));
    });
}

criterion_group!(benches, planning);
criterion_main!(benches);
