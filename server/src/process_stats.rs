//! What the operating system says of this process: CPU time, resident memory, open
//! file descriptors and their limit (ZooKeeper's `open_file_descriptor_count`, and
//! the Prometheus client libraries' standard `process_*` metrics). Linux's `/proc`;
//! elsewhere the values read as absent.

use std::time::Duration;

/// CPU time used by every thread of the process, user and system.
pub fn cpu_time() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

/// Resident memory in bytes: the second field of `/proc/self/statm`, in pages.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// Open file descriptors: the entries of `/proc/self/fd` (less the one reading it).
pub fn open_fds() -> Option<u64> {
    let count = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    Some(count.saturating_sub(1))
}

/// The soft limit on open file descriptors (`ulimit -n`).
pub fn max_fds() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        assert!(resident_bytes().is_some_and(|rss| rss > 1 << 20));
        // Other tests open and close files meanwhile: 200 more open files must show,
        // whatever they do.
        let before = open_fds().unwrap();
        let files: Vec<_> = (0..200)
            .map(|_| std::fs::File::open("/proc/self/statm").unwrap())
            .collect();
        let during = open_fds().unwrap();
        assert!(during >= before + 100, "{before} then {during}");
        drop(files);
        assert!(max_fds().is_some_and(|max| max >= during));
        let before = cpu_time().unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(cpu_time().unwrap() > before);
    }
}
