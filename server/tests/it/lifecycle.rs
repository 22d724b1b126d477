//! The process: config errors exit 2 naming the key; SIGTERM shuts down cleanly.

use std::process::Command;
use std::time::Duration;

use crate::support::{paddock, run_bounded, wait_until};

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
    wait_until(Duration::from_secs(10), "paddock ignored SIGTERM", || {
        !server.is_running()
    });
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

/// Runs paddock on a config naming `data_dir`, expecting it to refuse to start.
fn refused_start(data_dir: &std::path::Path) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("zoo.cfg");
    let port = crate::support::free_port();
    std::fs::write(
        &config,
        format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n",
            data_dir.display()
        ),
    )
    .expect("config");
    let output = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_paddock")).arg(&config),
        Duration::from_secs(30),
    );
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_second_server_on_the_same_data_dir_names_the_first() {
    let server = paddock("");
    let (code, stderr) = refused_start(&server.data_dir());
    assert_eq!(code, Some(1), "{stderr}");
    let expected = format!(
        "another paddock process (pid {}) is using dataDir {}",
        server.pid(),
        server.data_dir().display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}

#[test]
fn a_data_dir_that_is_a_file_is_named_with_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data");
    std::fs::write(&file, "").expect("file");
    let (code, stderr) = refused_start(&file);
    assert_eq!(code, Some(1), "{stderr}");
    let expected = format!("dataDir {} is a file, not a directory", file.display());
    assert!(stderr.contains(&expected), "{stderr}");
}
