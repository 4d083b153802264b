//! Runs independent per-file jobs on up to `available_parallelism` threads: how the crate hashes payload files and
//! inspects payload binaries. Plain scoped threads pulling from a shared counter; no thread pool dependency.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work` on every job, several jobs at once, and returns the results in job order.
///
/// Callers order the jobs so the long ones start early (largest file first). A panic in `work` is re-raised here.
pub(crate) fn map_in_parallel<Job, Output>(jobs: &[Job], work: impl Fn(&Job) -> Output + Sync) -> Vec<Output>
where
    Job: Sync,
    Output: Send,
{
    let workers = std::thread::available_parallelism().map_or(1, |count| count.get()).min(jobs.len()).max(1);
    let next_job = AtomicUsize::new(0);
    let mut results: Vec<(usize, Output)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut outputs = Vec::new();
                    loop {
                        let index = next_job.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(index) else { break };
                        outputs.push((index, work(job)));
                    }
                    outputs
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, output)| output).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order() {
        let jobs: Vec<u64> = (0..100).collect();
        assert_eq!(map_in_parallel(&jobs, |job| job * 2), (0..100).map(|job| job * 2).collect::<Vec<_>>());
        assert!(map_in_parallel(&[] as &[u64], |job| *job).is_empty());
    }
}
