//! The servers' figures as `paddock-loadgen` samples them from a real Paddock
//! ensemble: mntr's (no CPU or memory there) and /proc's.

use paddock_loadgen::resources::{Sampler, Source};

use crate::support::Ensemble;

#[test]
fn paddock_is_sampled_through_mntr_and_proc() {
    let ensemble = Ensemble::start();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let hosts: Vec<String> = ensemble.hosts().split(',').map(str::to_owned).collect();
    let mut mntr = Sampler::new(Source::Mntr(hosts.clone()));
    let samples = runtime.block_on(mntr.sample(0.0));
    assert_eq!(samples.len(), 3, "{samples:?}");
    for (sample, host) in samples.iter().zip(&hosts) {
        assert_eq!(&sample.server, host);
        assert!(sample.metrics.contains_key("zk_znode_count"), "{sample:?}");
        assert!(
            sample.metrics.contains_key("zk_approximate_data_size"),
            "{sample:?}"
        );
        assert_eq!(sample.cpu_percent, None);
        assert_eq!(sample.rss_bytes, None);
    }

    let mut proc = Sampler::new(Source::Proc(ensemble.pids()));
    runtime.block_on(proc.sample(0.0));
    let samples = runtime.block_on(proc.sample(1.0));
    assert_eq!(samples.len(), 3, "{samples:?}");
    for sample in &samples {
        assert!(sample.cpu_percent.is_some_and(|c| c >= 0.0), "{sample:?}");
        assert!(sample.rss_bytes.is_some_and(|b| b > 0), "{sample:?}");
    }
}
