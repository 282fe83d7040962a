//! The Hub process's CPU and memory during a load run, sampled from `/proc`
//! (Linux): CPU time from `/proc/PID/stat`, the resident set from
//! `/proc/PID/status`. The process is given by `--hub-pid`, or found from the
//! Hub's port: the listening socket's inode in `/proc/net/tcp{,6}`, then the
//! process holding that socket among `/proc/*/fd`. Over several replicas each
//! one's process is found from its own port; one that cannot be found (a
//! host that is not loopback, another user's process) is reported with the
//! reason instead of figures.
//!
//! CPU% is CPU time over wall time between two samples: 100% is one core
//! busy, so a Hub using both cores of a 2-core machine reads 200%. The
//! report splits it two ways: the part spent in the kernel (system time),
//! and each kind of thread's part, by thread name (`/proc/PID/task/*/comm`:
//! the runtime's workers, the audit writer, the traced Hub's line writer),
//! which shows under load what a background thread costs beside the
//! request threads.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::Url;

use serde::{Deserialize, Serialize};

/// Clock ticks per second of `/proc/PID/stat` times (`USER_HZ`, 100 on
/// every Linux architecture's user ABI).
const TICKS_PER_SECOND: f64 = 100.0;

/// What the sampler saw over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HubProcessReport {
    /// The sampled process.
    pub pid: u32,
    /// How it was found: `hub-pid` (the flag) or `port`.
    pub found_by: String,
    /// Samples taken.
    pub samples: u32,
    /// Mean CPU% over the run (100 = one core).
    pub cpu_percent_avg: f64,
    /// Highest CPU% between two samples.
    pub cpu_percent_max: f64,
    /// Resident set at the first sample, MiB.
    pub rss_mib_start: f64,
    /// Largest resident set seen, MiB.
    pub rss_mib_max: f64,
    /// Resident set at the last sample, MiB.
    pub rss_mib_end: f64,
    /// True when the process was gone before the run ended (a replica
    /// killed during the run): the figures cover its life until then.
    #[serde(default)]
    pub exited_during_run: bool,
    /// The part of [`cpu_percent_avg`](Self::cpu_percent_avg) spent in the
    /// kernel (system time), on the same scale.
    #[serde(default)]
    pub system_percent_avg: f64,
    /// The process's threads by name, the busiest first (empty in reports
    /// written before threads were sampled).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadCpu>,
}

/// The CPU of a process's threads of one name over the run, on the
/// process's scale (100 = one core). A thread that ended before the last
/// sample drops out of its name's figure (its time stays in the process's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCpu {
    /// The threads' name as the kernel keeps it (at most 15 bytes).
    pub name: String,
    /// Threads of this name at the last sample.
    pub threads: u32,
    /// Their mean CPU% over the run.
    pub cpu_percent_avg: f64,
    /// The part of it spent in the kernel.
    pub system_percent_avg: f64,
}

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    /// User plus system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    /// System CPU time alone, in clock ticks.
    pub system_ticks: u64,
    /// Resident set, KiB.
    pub rss_kib: u64,
}

/// The user and system times (fields 14 and 15) of a `/proc/PID/stat` (or
/// `/proc/PID/task/TID/stat`) line, in clock ticks. The command name
/// (field 2) may hold spaces and parentheses, so fields are counted after
/// its last `)`.
pub fn parse_stat_times(stat: &str) -> Option<(u64, u64)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Field 3 (state) is fields[0]; utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime, stime))
}

/// CPU time of a process's threads by thread id: each one's name, then its
/// user and system clock ticks.
pub type ThreadTicks = BTreeMap<u32, (String, u64, u64)>;

/// `pid`'s threads now; threads that end while they are read are skipped.
pub fn sample_threads(pid: u32) -> ThreadTicks {
    let mut threads = ThreadTicks::new();
    let Ok(tasks) = std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("task")) else {
        return threads;
    };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let path = task.path();
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("stat")),
        ) else {
            continue;
        };
        if let Some((user, system)) = parse_stat_times(&stat) {
            threads.insert(tid, (comm.trim_end().to_owned(), user, system));
        }
    }
    threads
}

/// Each thread name's CPU between two readings of the threads, `wall`
/// apart, the busiest first: every thread's own time since the first
/// reading (all of it for a thread started since), summed by name. A
/// thread gone by the last reading is left out.
pub fn thread_cpu(first: &ThreadTicks, last: &ThreadTicks, wall: Duration) -> Vec<ThreadCpu> {
    let mut by_name: BTreeMap<&str, (u32, u64, u64)> = BTreeMap::new();
    for (tid, (name, user, system)) in last {
        let (user0, system0) = match first.get(tid) {
            // A thread id the kernel gave again to a new thread of another name.
            Some((name0, user0, system0)) if name0 == name => (*user0, *system0),
            _ => (0, 0),
        };
        let entry = by_name.entry(name).or_default();
        entry.0 += 1;
        entry.1 += user.saturating_sub(user0);
        entry.2 += system.saturating_sub(system0);
    }
    let mut threads: Vec<ThreadCpu> = by_name
        .into_iter()
        .map(|(name, (count, user, system))| ThreadCpu {
            name: name.to_owned(),
            threads: count,
            cpu_percent_avg: round1(cpu_percent(user + system, wall)),
            system_percent_avg: round1(cpu_percent(system, wall)),
        })
        .collect();
    threads.sort_by(|a, b| {
        b.cpu_percent_avg
            .total_cmp(&a.cpu_percent_avg)
            .then_with(|| a.name.cmp(&b.name))
    });
    threads
}

/// `VmRSS` of a `/proc/PID/status` file, in KiB.
pub fn parse_status_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Reads `pid` now; `None` once the process is gone.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(proc_dir.join("status")).ok()?;
    let (user, system) = parse_stat_times(&stat)?;
    Some(ProcSample {
        cpu_ticks: user + system,
        system_ticks: system,
        rss_kib: parse_status_rss_kib(&status)?,
    })
}

/// The inodes of sockets listening on `port` in a `/proc/net/tcp` or
/// `tcp6` table (state `0A`).
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    let port_hex = format!("{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            if local_port.eq_ignore_ascii_case(&port_hex) && *fields.get(3)? == "0A" {
                fields.get(9)?.parse().ok()
            } else {
                None
            }
        })
        .collect()
}

/// The process listening on `port` on this machine, or why none can be
/// named: no socket listens there, or its process is not visible (another
/// user's processes are not).
pub fn find_pid_by_port(port: u16) -> Result<u32, String> {
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(t).ok())
        .flat_map(|t| listening_inodes(&t, port))
        .collect();
    if inodes.is_empty() {
        return Err(format!("nothing listens on port {port} on this machine"));
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let not_visible =
        || format!("the process listening on port {port} is not visible (another user's?)");
    for entry in std::fs::read_dir("/proc")
        .map_err(|_| not_visible())?
        .flatten()
    {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                    return Ok(pid);
                }
            }
        }
    }
    Err(not_visible())
}

/// Whether `url`'s host is this machine's loopback (`localhost`,
/// 127.0.0.0/8, `::1`): only then is its process looked for here.
pub fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// The process serving `url` on this machine, found from its port, or why
/// it cannot be found.
pub fn find_pid_for_url(url: &Url) -> Result<u32, String> {
    if !is_loopback(url) {
        return Err(format!(
            "{} is not a loopback address: only a Hub on this machine is sampled",
            url.host_str().unwrap_or("the host")
        ));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("{url} has no port"))?;
    find_pid_by_port(port)
}

/// Samples collected so far, folded into the report's figures.
#[derive(Debug, Clone)]
pub struct Samples {
    pid: u32,
    found_by: String,
    first: Option<(Instant, ProcSample)>,
    last: Option<(Instant, ProcSample)>,
    first_threads: ThreadTicks,
    last_threads: ThreadTicks,
    count: u32,
    cpu_percent_max: f64,
    rss_kib_max: u64,
    exited: bool,
}

impl Samples {
    /// No sample yet of `pid`.
    pub fn new(pid: u32, found_by: &str) -> Samples {
        Samples {
            pid,
            found_by: found_by.to_owned(),
            first: None,
            last: None,
            first_threads: ThreadTicks::new(),
            last_threads: ThreadTicks::new(),
            count: 0,
            cpu_percent_max: 0.0,
            rss_kib_max: 0,
            exited: false,
        }
    }

    /// Notes that the process was gone at a sample.
    pub fn mark_exited(&mut self) {
        self.exited = true;
    }

    /// Adds a reading of the process's threads, taken with the reading
    /// [`add`](Self::add) is given next.
    pub fn add_threads(&mut self, threads: ThreadTicks) {
        if self.first.is_none() {
            self.first_threads = threads.clone();
        }
        self.last_threads = threads;
    }

    /// Adds a reading taken at `at`.
    pub fn add(&mut self, at: Instant, reading: ProcSample) {
        if let Some((then, previous)) = self.last {
            let percent = cpu_percent(
                reading.cpu_ticks.saturating_sub(previous.cpu_ticks),
                at.duration_since(then),
            );
            self.cpu_percent_max = self.cpu_percent_max.max(percent);
        }
        if self.first.is_none() {
            self.first = Some((at, reading));
        }
        self.last = Some((at, reading));
        self.rss_kib_max = self.rss_kib_max.max(reading.rss_kib);
        self.count += 1;
    }

    /// The report; `None` with fewer than two samples.
    pub fn report(&self) -> Option<HubProcessReport> {
        let ((t0, first), (t1, last)) = (self.first?, self.last?);
        if self.count < 2 {
            return None;
        }
        let mib = |kib: u64| round1(kib as f64 / 1024.0);
        let wall = t1.duration_since(t0);
        Some(HubProcessReport {
            pid: self.pid,
            found_by: self.found_by.clone(),
            samples: self.count,
            cpu_percent_avg: round1(cpu_percent(
                last.cpu_ticks.saturating_sub(first.cpu_ticks),
                wall,
            )),
            cpu_percent_max: round1(self.cpu_percent_max),
            rss_mib_start: mib(first.rss_kib),
            rss_mib_max: mib(self.rss_kib_max),
            rss_mib_end: mib(last.rss_kib),
            exited_during_run: self.exited,
            system_percent_avg: round1(cpu_percent(
                last.system_ticks.saturating_sub(first.system_ticks),
                wall,
            )),
            threads: thread_cpu(&self.first_threads, &self.last_threads, wall),
        })
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// CPU% of `ticks` over `wall` (100 = one core).
pub fn cpu_percent(ticks: u64, wall: Duration) -> f64 {
    let seconds = wall.as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    ticks as f64 / TICKS_PER_SECOND / seconds * 100.0
}

/// Reads `pid` and its threads now into `samples`; false (and the process
/// marked as exited) once it is gone.
fn sample_into(samples: &mut Samples, pid: u32) -> bool {
    let threads = sample_threads(pid);
    match sample(pid) {
        Some(reading) => {
            samples.add_threads(threads);
            samples.add(Instant::now(), reading);
            true
        }
        None => {
            samples.mark_exited();
            false
        }
    }
}

/// A sampler running in the background; [`Sampler::finish`] stops it.
#[derive(Debug)]
pub struct Sampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<HubProcessReport, String>>,
}

impl Sampler {
    /// Samples `pid` every `every` until [`Sampler::finish`] or until the
    /// process is gone.
    pub fn spawn(pid: u32, found_by: &'static str, every: Duration) -> Sampler {
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut samples = Samples::new(pid, found_by);
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tick.tick() => if !sample_into(&mut samples, pid) {
                        break;
                    },
                }
            }
            sample_into(&mut samples, pid);
            samples
                .report()
                .ok_or_else(|| format!("process {pid} exited before it was sampled twice"))
        });
        Sampler { stop, task }
    }

    /// Stops sampling: the figures, or why there are none.
    pub async fn finish(self) -> Result<HubProcessReport, String> {
        let _ = self.stop.send(());
        self.task
            .await
            .map_err(|e| format!("the sampler failed: {e}"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_times_are_read_after_a_command_name_with_spaces() {
        let stat = "4242 (hub (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 123456789 4096";
        assert_eq!(parse_stat_times(stat), Some((250, 75)));
        assert_eq!(parse_stat_times("garbage"), None);
    }

    #[test]
    fn rss_is_read_from_status() {
        let status = "Name:\thub-example\nVmPeak:\t  99999 kB\nVmRSS:\t   65536 kB\nThreads:\t9\n";
        assert_eq!(parse_status_rss_kib(status), Some(65536));
        assert_eq!(parse_status_rss_kib("Name:\tx\n"), None);
    }

    #[test]
    fn only_listening_sockets_on_the_port_are_taken() {
        let table = concat!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n",
            "   0: 0100007F:4D72 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n",
            "   1: 0100007F:4D72 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 20 4 30 10 -1\n",
            "   2: 0100007F:4D73 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0\n",
        );
        assert_eq!(listening_inodes(table, 0x4D72), vec![111]);
        assert_eq!(listening_inodes(table, 0x4D74), Vec::<u64>::new());
    }

    #[test]
    fn cpu_percent_is_per_core() {
        assert_eq!(cpu_percent(200, Duration::from_secs(1)), 200.0);
        assert_eq!(cpu_percent(50, Duration::from_secs(2)), 25.0);
        assert_eq!(cpu_percent(10, Duration::ZERO), 0.0);
    }

    #[test]
    fn samples_fold_into_average_peak_and_memory() {
        let t0 = Instant::now();
        let mut samples = Samples::new(7, "port");
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let reading = |cpu_ticks, rss_mib: u64| ProcSample {
            cpu_ticks,
            system_ticks: cpu_ticks / 4,
            rss_kib: rss_mib * 1024,
        };
        samples.add(at(0), reading(0, 10));
        assert_eq!(samples.report(), None, "one sample is not a rate");
        samples.add(at(1000), reading(50, 64));
        samples.add(at(2000), reading(200, 60));
        let report = samples.report().unwrap();
        assert_eq!(
            (
                report.cpu_percent_avg,
                report.system_percent_avg,
                report.cpu_percent_max,
                report.samples
            ),
            (100.0, 25.0, 150.0, 3)
        );
        assert_eq!(
            (report.rss_mib_start, report.rss_mib_max, report.rss_mib_end),
            (10.0, 64.0, 60.0)
        );
    }

    #[test]
    fn threads_are_summed_by_name_over_the_run_busiest_first() {
        let ticks = |rows: &[(u32, &str, u64, u64)]| -> ThreadTicks {
            rows.iter()
                .map(|&(tid, name, user, system)| (tid, (name.to_owned(), user, system)))
                .collect()
        };
        let t0 = Instant::now();
        let mut samples = Samples::new(7, "port");
        let reading = |cpu_ticks| ProcSample {
            cpu_ticks,
            system_ticks: 0,
            rss_kib: 1,
        };
        samples.add_threads(ticks(&[
            (10, "tokio-rt-worker", 60, 40),
            (11, "tokio-rt-worker", 40, 60),
            (12, "gone", 5, 5),
            (13, "blocking", 900, 100),
        ]));
        samples.add(t0, reading(1210));
        // A thread started since counts from nothing; one that ended drops
        // out, taking nothing from the others of its name; a thread id
        // given again to a thread of another name counts as a new thread.
        samples.add_threads(ticks(&[
            (10, "tokio-rt-worker", 160, 140),
            (11, "tokio-rt-worker", 90, 90),
            (14, "tokio-rt-worker", 20, 20),
            (15, "perf-trace-line", 1, 3),
            (13, "r2d2-worker-0", 0, 0),
        ]));
        samples.add(t0 + Duration::from_secs(2), reading(1700));
        let report = samples.report().unwrap();
        let row = |name: &str, threads, cpu, system| ThreadCpu {
            name: name.to_owned(),
            threads,
            cpu_percent_avg: cpu,
            system_percent_avg: system,
        };
        assert_eq!(
            report.threads,
            vec![
                row("tokio-rt-worker", 3, 160.0, 75.0),
                row("perf-trace-line", 1, 2.0, 1.5),
                row("r2d2-worker-0", 1, 0.0, 0.0),
            ]
        );
    }

    #[test]
    fn this_process_is_found_from_its_listening_port_and_sampled() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(find_pid_by_port(port), Ok(std::process::id()));
        let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        assert_eq!(find_pid_for_url(&url), Ok(std::process::id()));
        let reading = sample(std::process::id()).unwrap();
        assert!(reading.rss_kib > 0);
        assert!(reading.system_ticks <= reading.cpu_ticks);
        assert_eq!(sample(u32::MAX), None);
        let threads = sample_threads(std::process::id());
        // The main thread's id is the process's.
        assert!(threads.contains_key(&std::process::id()), "{threads:?}");
        assert!(
            threads.values().all(|(name, _, _)| !name.is_empty()),
            "{threads:?}"
        );
        assert!(sample_threads(u32::MAX).is_empty());
    }

    #[test]
    fn only_a_loopback_hub_is_looked_for_and_a_missing_one_says_why() {
        let url = |s: &str| Url::parse(s).unwrap();
        for local in ["http://localhost:1", "http://127.0.0.2:1", "http://[::1]:1"] {
            assert!(is_loopback(&url(local)), "{local}");
        }
        let remote = find_pid_for_url(&url("http://192.0.2.7:19811")).unwrap_err();
        assert!(
            remote.contains("192.0.2.7 is not a loopback address"),
            "{remote}"
        );
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let nothing = find_pid_for_url(&url(&format!("http://127.0.0.1:{closed}"))).unwrap_err();
        assert!(
            nothing.contains(&format!("nothing listens on port {closed}")),
            "{nothing}"
        );
    }

    #[tokio::test]
    async fn a_process_that_is_gone_is_reported_as_exited() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let sampler = Sampler::spawn(child.id(), "hub-pid", Duration::from_millis(20));
        tokio::time::sleep(Duration::from_millis(100)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
        let report = sampler.finish().await.unwrap();
        assert!(
            report.exited_during_run && report.samples >= 2,
            "{report:?}"
        );
    }
}
