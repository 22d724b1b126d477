//! A process never touches another's nodes: a --client-id in use is refused (and the
//! other's nodes left alone), and a --start-at that has passed is an error, not a
//! misaligned run.

use std::process::Command;
use std::time::Duration;

use paddock_client::{Client, ConnectOptions, CreateMode};

use crate::support::{wait_bounded, Ensemble, LOADGEN};

const ROOT: &str = "/loadgen-ids";

fn loadgen(ensemble: &Ensemble, extra: &[&str]) -> std::process::Output {
    let child = Command::new(LOADGEN)
        .args(["--servers", &ensemble.hosts(), "--root", ROOT])
        .args(["--conns", "2", "--duration", "1", "--no-server-stats"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("paddock-loadgen");
    wait_bounded(child, Duration::from_secs(120), "paddock-loadgen")
}

#[test]
fn a_client_id_in_use_is_refused_and_its_nodes_kept() {
    let ensemble = Ensemble::start();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let client = runtime.block_on(async {
        let client = Client::connect(&ensemble.hosts(), ConnectOptions::default())
            .await
            .expect("connect");
        client
            .create(ROOT, b"", CreateMode::Persistent)
            .await
            .expect("root");
        // Another process's node, and something it keeps under it.
        for path in [format!("{ROOT}/busy"), format!("{ROOT}/busy/keep")] {
            client
                .create(&path, b"", CreateMode::Persistent)
                .await
                .expect("create");
        }
        client
    });

    let output = loadgen(&ensemble, &["--client-id", "busy"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{ROOT}/busy exists")), "{stderr}");
    let kept = runtime.block_on(client.exists(&format!("{ROOT}/busy/keep")));
    assert!(matches!(kept, Ok(Some(_))), "the other's node was touched");

    // Another id runs beside it, and leaves the root to its other user.
    let output = loadgen(&ensemble, &["--client-id", "free", "--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let left = runtime
        .block_on(client.get_children(ROOT))
        .expect("children");
    assert_eq!(left, ["busy"]);

    let past = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        - 60)
        .to_string();
    let output = loadgen(&ensemble, &["--client-id", "late", "--start-at", &past]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--start-at"), "{stderr}");
    let left = runtime
        .block_on(client.get_children(ROOT))
        .expect("children");
    assert_eq!(left, ["busy"], "a refused run cleans up after itself");
    let _ = runtime.block_on(client.close());
}
