//! The process: config errors exit 2 naming the key; SIGTERM shuts down cleanly.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{paddock, run_bounded};

#[test]
fn an_invalid_value_names_the_key_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("zoo.cfg");
    std::fs::write(
        &config,
        format!(
            "tickTime=abc\ndataDir={}\nclientPort=2181\n",
            dir.path().display()
        ),
    )
    .expect("config");
    let output = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_paddock"))
            .arg("--config")
            .arg(&config),
        Duration::from_secs(20),
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tickTime"), "{stderr}");
}

#[test]
fn unknown_keys_are_warned_about_not_fatal() {
    let server = paddock("someUnknownKey=1");
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    assert!(log.contains("someUnknownKey"), "{log}");
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut server = paddock("");
    let status = run_bounded(
        Command::new("kill")
            .arg("-TERM")
            .arg(server.pid().to_string()),
        Duration::from_secs(5),
    );
    assert!(status.status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.is_running() {
        assert!(Instant::now() < deadline, "paddock ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    assert!(log.contains("shutting down"), "{log}");
}

#[test]
fn a_log_written_to_a_file_has_no_colour_codes() {
    let server = paddock("");
    let log = server.log_text();
    assert!(log.contains("serving clients"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "escape codes in a log file: {log:?}"
    );
}

#[test]
fn the_config_file_may_be_given_as_zkserver_sh_users_type_it() {
    // `paddock zoo.cfg`, positional: refused for its content (no tickTime), so the file
    // was read; and --help says where the keys are documented and names RUST_LOG.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("zoo.cfg");
    std::fs::write(&config, "dataDir=data\nclientPort=2181\n").expect("config");
    let output = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_paddock")).arg(&config),
        Duration::from_secs(20),
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tickTime is not set"), "{stderr}");

    let help = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_paddock")).arg("--help"),
        Duration::from_secs(20),
    );
    let help = String::from_utf8_lossy(&help.stdout);
    for needle in ["ZOO_CFG", "--config", "RUST_LOG", "README.md", "conf/"] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}
