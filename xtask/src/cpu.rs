//! How busy the machine's cores were while a stage ran: the share of all cores' time not idle (from `/proc/stat`)
//! and the highest one-minute load average seen (`/proc/loadavg`, read every two seconds), so a stage that runs
//! work side by side can show it stayed within the machine.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the load average is read.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);

/// A running watch; [`CpuWatch::stop`] gives the figures.
#[derive(Debug)]
pub struct CpuWatch {
    start: Option<CpuTimes>,
    stop: Arc<AtomicBool>,
    sampler: JoinHandle<f64>,
}

/// The figures of a watch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuUse {
    /// The share of all cores' time that was not idle, 0 to 1 (`None` without `/proc/stat`).
    pub busy: Option<f64>,
    /// The number of cores.
    pub cores: usize,
    /// The highest one-minute load average seen.
    pub peak_load: f64,
}

impl fmt::Display for CpuUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.busy {
            Some(busy) => write!(f, "{:.0}% busy of {} cores", busy * 100.0, self.cores)?,
            None => write!(f, "busy share unknown ({} cores)", self.cores)?,
        }
        write!(f, ", highest 1-minute load average {:.2}", self.peak_load)
    }
}

impl CpuWatch {
    /// Starts watching.
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let sampler = std::thread::spawn(move || {
            let mut peak = 0.0_f64;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(load_average().unwrap_or(0.0));
                std::thread::sleep(SAMPLE_EVERY);
            }
            peak.max(load_average().unwrap_or(0.0))
        });
        Self { start: CpuTimes::read(), stop, sampler }
    }

    /// Stops watching and returns the figures.
    pub fn stop(self) -> CpuUse {
        self.stop.store(true, Ordering::Relaxed);
        let peak_load = self.sampler.join().unwrap_or(0.0);
        let busy = match (self.start, CpuTimes::read()) {
            (Some(start), Some(end)) => end.busy_share_since(&start),
            _ => None,
        };
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        CpuUse { busy, cores, peak_load }
    }
}

/// The first line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CpuTimes {
    total: u64,
    idle: u64,
}

impl CpuTimes {
    fn read() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// `cpu  user nice system idle iowait irq softirq steal …`: idle counts idle and iowait.
    fn parse(stat: &str) -> Option<Self> {
        let fields: Vec<u64> =
            stat.lines().next()?.strip_prefix("cpu ")?.split_whitespace().map_while(|f| f.parse().ok()).collect();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        Some(Self { total: fields.iter().take(8).sum(), idle })
    }

    fn busy_share_since(&self, start: &Self) -> Option<f64> {
        let total = self.total.checked_sub(start.total)?;
        let idle = self.idle.checked_sub(start.idle)?;
        (total > 0).then(|| (total - idle) as f64 / total as f64)
    }
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_share_counts_iowait_as_idle() {
        let start = CpuTimes::parse("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n").unwrap();
        let end = CpuTimes::parse("cpu  400 0 200 900 100 0 0 0 0 0\n").unwrap();
        assert_eq!(end.busy_share_since(&start), Some(400.0 / 600.0));
        assert_eq!(CpuTimes::parse("intr 1 2"), None);
    }

    #[test]
    fn the_figures_read_as_a_sentence() {
        let usage = CpuUse { busy: Some(0.734), cores: 2, peak_load: 3.5 };
        assert_eq!(usage.to_string(), "73% busy of 2 cores, highest 1-minute load average 3.50");
    }
}
