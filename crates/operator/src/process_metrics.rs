//! The standard `process_*` metrics of the operator's own process, read from `/proc` on every scrape (the names the
//! Prometheus client libraries of other languages export, so the usual dashboards and alerts work):
//! `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_open_fds`, `process_max_fds` and `process_start_time_seconds`. A value that cannot be read (not Linux,
//! `/proc` not mounted) is left out rather than reported as 0.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

/// The collector registered in [`Metrics`](crate::metrics::Metrics).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessCollector;

/// The process's figures at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessFigures {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, in bytes.
    pub resident_bytes: Option<i64>,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: Option<i64>,
    /// Open file descriptors.
    pub open_fds: Option<i64>,
    /// The soft limit on open file descriptors.
    pub max_fds: Option<i64>,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

impl ProcessFigures {
    /// The figures of this process, from `/proc/self`.
    pub fn read() -> ProcessFigures {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let boot_time = std::fs::read_to_string("/proc/stat").ok().and_then(|text| boot_time(&text));
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let open_fds = std::fs::read_dir("/proc/self/fd").ok().map(|entries| entries.count() as i64);
        let ticks = rustix::param::clock_ticks_per_second() as f64;
        let page_size = rustix::param::page_size() as i64;
        let mut figures = stat.as_deref().map(|text| parse_stat(text, ticks, page_size)).unwrap_or_default();
        figures.start_time_seconds =
            figures.start_time_seconds.zip(boot_time).map(|(since_boot, boot)| boot + since_boot);
        figures.open_fds = open_fds;
        figures.max_fds = limits.as_deref().and_then(max_open_files);
        figures
    }
}

/// The fields of `/proc/<pid>/stat` this collector reads; `start_time_seconds` is relative to boot here.
fn parse_stat(text: &str, ticks_per_second: f64, page_size: i64) -> ProcessFigures {
    // The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ')'.
    let Some(rest) = text.rsplit_once(')').map(|(_, rest)| rest) else { return ProcessFigures::default() };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field N is at index N - 3.
    let field = |number: usize| fields.get(number - 3).and_then(|value| value.parse::<f64>().ok());
    ProcessFigures {
        cpu_seconds: field(14).zip(field(15)).map(|(user, system)| (user + system) / ticks_per_second),
        start_time_seconds: field(22).map(|ticks| ticks / ticks_per_second),
        virtual_bytes: field(23).map(|bytes| bytes as i64),
        resident_bytes: field(24).map(|pages| pages as i64 * page_size),
        open_fds: None,
        max_fds: None,
    }
}

/// `btime` of `/proc/stat`: when the machine booted, in seconds since the epoch.
fn boot_time(text: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix("btime ")).and_then(|value| value.trim().parse().ok())
}

/// The soft limit of `Max open files` in `/proc/<pid>/limits`.
fn max_open_files(text: &str) -> Option<i64> {
    let line = text.lines().find(|line| line.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let figures = ProcessFigures::read();
        if let Some(seconds) = figures.cpu_seconds {
            let metric = ConstCounter::new(seconds);
            let unit = Unit::Seconds;
            let descriptor = encoder.encode_descriptor(
                "process_cpu",
                "Total user and system CPU time spent in seconds",
                Some(&unit),
                MetricType::Counter,
            )?;
            metric.encode(descriptor)?;
        }
        let gauges = [
            ("process_resident_memory", "Resident memory size in bytes", Some(Unit::Bytes), figures.resident_bytes),
            ("process_virtual_memory", "Virtual memory size in bytes", Some(Unit::Bytes), figures.virtual_bytes),
            ("process_open_fds", "Number of open file descriptors", None, figures.open_fds),
            ("process_max_fds", "Maximum number of open file descriptors", None, figures.max_fds),
        ];
        for (name, help, unit, value) in gauges {
            if let Some(value) = value {
                let descriptor = encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
                ConstGauge::new(value).encode(descriptor)?;
            }
        }
        if let Some(start) = figures.start_time_seconds {
            let unit = Unit::Seconds;
            let descriptor = encoder.encode_descriptor(
                "process_start_time",
                "Start time of the process since the Unix epoch in seconds",
                Some(&unit),
                MetricType::Gauge,
            )?;
            ConstGauge::new(start).encode(descriptor)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name_even_with_spaces_and_parentheses() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        // priority nice threads itrealvalue starttime vsize rss ...
        let stat = "42 (wm co) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1000 104857600 2560 18446744073709551615";
        let figures = parse_stat(stat, 100.0, 4096);
        assert_eq!(figures.cpu_seconds, Some(3.0));
        assert_eq!(figures.start_time_seconds, Some(10.0));
        assert_eq!(figures.virtual_bytes, Some(104_857_600));
        assert_eq!(figures.resident_bytes, Some(2560 * 4096));
    }

    #[test]
    fn boot_time_and_the_open_files_limit_are_found() {
        assert_eq!(boot_time("cpu  1 2 3\nbtime 1764150000\nprocesses 9\n"), Some(1_764_150_000.0));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        assert_eq!(max_open_files(limits), Some(1_048_576));
        assert_eq!(max_open_files("nothing"), None);
    }

    #[test]
    fn this_process_reports_every_figure_with_the_standard_names() {
        let figures = ProcessFigures::read();
        assert!(figures.resident_bytes.is_some_and(|bytes| bytes > 0), "{figures:?}");
        assert!(figures.open_fds.is_some_and(|fds| fds > 0), "{figures:?}");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(figures.start_time_seconds.is_some_and(|start| start > now - 86_400.0 * 365.0 && start <= now + 1.0));
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_open_fds ",
            "process_max_fds ",
            "process_start_time_seconds ",
        ] {
            assert!(text.lines().any(|line| line.starts_with(name)), "{name} missing in {text}");
        }
    }
}
