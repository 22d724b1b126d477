//! `paddock-cli`: zkCli's commands, one-shot (`-c`, or words after the options) and as a
//! shell reading stdin, with a non-zero exit status on failure.

use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::support::{server, unique, within};

const CLI: &str = env!("CARGO_BIN_EXE_paddock-cli");
const LIMIT: Duration = Duration::from_secs(30);

async fn cli(args: &[&str]) -> Output {
    let server = server().await;
    within(
        LIMIT,
        Command::new(CLI)
            .arg("-server")
            .arg(&server)
            .args(args)
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("run paddock-cli")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn one_shot_commands() {
    within(LIMIT, async {
        let root = unique("cli");
        let out = cli(&["-c", &format!("create {root} hello")]).await;
        assert!(out.status.success(), "{out:?}");
        assert_eq!(stdout(&out), format!("Created {root}\n"));

        // A failure exits non-zero and says why.
        let out = cli(&["-c", &format!("create {root} again")]).await;
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("Node already exists"));

        let out = cli(&["create", "-s", "-e", &format!("{root}/seq-"), "x"]).await;
        assert!(stdout(&out).starts_with(&format!("Created {root}/seq-00000000")));
        let out = cli(&["-c", &format!("set {root} \"hello world\"")]).await;
        assert!(out.status.success(), "{out:?}");
        let out = cli(&["get", "-s", &root]).await;
        let text = stdout(&out);
        assert!(text.starts_with("hello world\ncZxid = 0x"), "{text}");
        assert!(text.contains("dataVersion = 1\n"), "{text}");

        let out = cli(&["create", &format!("{root}/child"), "c"]).await;
        assert!(out.status.success());
        let out = cli(&["ls", &root]).await;
        assert_eq!(stdout(&out), "[child]\n");
        let out = cli(&["ls", "-R", &root]).await;
        assert_eq!(stdout(&out), format!("{root}\n{root}/child\n"));
        let out = cli(&["getAllChildrenNumber", &root]).await;
        assert_eq!(stdout(&out), "1\n");
        let out = cli(&["getAcl", &root]).await;
        assert_eq!(stdout(&out), "'world,'anyone\n: cdrwa\n");
        let out = cli(&["stat", &format!("{root}/missing")]).await;
        assert_eq!(out.status.code(), Some(1));

        let out = cli(&["-c", &format!("deleteall {root}")]).await;
        assert!(out.status.success(), "{out:?}");
        let out = cli(&["stat", &root]).await;
        assert_eq!(out.status.code(), Some(1));

        // Usage errors are told apart.
        let out = cli(&["-c", "frobnicate /"]).await;
        assert_eq!(out.status.code(), Some(2));
    })
    .await;
}

#[tokio::test]
async fn shell_reads_commands_from_stdin() {
    within(LIMIT, async {
        let root = unique("cli-shell");
        let mut child = Command::new(CLI)
            .arg("--server")
            .arg(server().await)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let script = format!(
            "create {root} x\n\
             get -w {root}\n\
             set {root} y\n\
             sync {root}\n\
             addauth digest alice:pw\n\
             whoami\n\
             create -t 60000 {root}/ttl\n\
             get {root}\n\
             quit\n"
        );
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(script.as_bytes()).await.unwrap();
        drop(stdin);
        let out = within(LIMIT, child.wait_with_output()).await.unwrap();
        let text = stdout(&out);
        assert!(out.status.success(), "{out:?}");
        assert!(text.contains(&format!("Created {root}\n")), "{text}");
        assert!(
            text.contains(&format!(
                "WatchedEvent state:SyncConnected type:NodeDataChanged path:{root}"
            )),
            "{text}"
        );
        assert!(text.contains("Sync is OK"), "{text}");
        assert!(text.contains("digest: alice"), "{text}");
        assert!(text.contains(&format!("Created {root}/ttl\n")), "{text}");
        assert!(text.trim_end().ends_with('y'), "{text}");
    })
    .await;
}

/// Runs a shell session from `script` on stdin; (stdout, stderr, status).
async fn shell(script: &str) -> (String, String, Option<i32>) {
    let mut child = Command::new(CLI)
        .arg("--server")
        .arg(server().await)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("paddock-cli");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(script.as_bytes()).await.expect("script");
    drop(stdin);
    let out = within(LIMIT, child.wait_with_output())
        .await
        .expect("output");
    (
        stdout(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[tokio::test]
async fn failures_name_the_path_and_unknown_commands_answer_as_zkcli() {
    within(LIMIT, async {
        let missing = format!("{}/missing", unique("cli-errors"));
        for command in ["get", "ls", "stat", "delete"] {
            let out = cli(&["-c", &format!("{command} {missing}")]).await;
            assert_eq!(out.status.code(), Some(1));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stderr.trim_end(),
                format!("Node does not exist: {missing}"),
                "{command}"
            );
        }
        // zkCli: the usage, then "Command not found"; nothing from the argument parser.
        let out = cli(&["frobnicate", "/"]).await;
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("ZooKeeper -server host:port"),
            "{stderr}"
        );
        assert!(
            stderr.ends_with("Command not found: Command not found frobnicate\n"),
            "{stderr}"
        );
        assert!(!stderr.contains("error:"), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn the_shell_has_zkclis_session_and_history_commands() {
    within(LIMIT, async {
        let root = unique("cli-history");
        let server = server().await;
        let script = format!(
            "create {root} x\n\
             version\n\
             history\n\
             redo 0\n\
             printwatches off\n\
             get -w {root}\n\
             set {root} y\n\
             close\n\
             ls {root}\n\
             connect {server}\n\
             get {root}\n\
             deleteall {root}\n"
        );
        let (out, err, status) = shell(&script).await;
        assert_eq!(status, Some(0), "{out}\n{err}");
        assert!(out.contains("paddock-cli version "), "{out}");
        assert!(
            out.contains(&format!("0 - create {root} x\n1 - version\n2 - history\n")),
            "{out}"
        );
        // redo 0 runs `create` again, which now fails, naming the node.
        assert!(
            err.contains(&format!("Node already exists: {root}")),
            "{err}"
        );
        // printwatches off: the data watch fired on set without a word.
        assert!(!out.contains("WATCHER::"), "{out}");
        assert!(err.contains("Not connected"), "{err}");
        assert!(out.trim_end().ends_with('y'), "{out}");
    })
    .await;
}

#[tokio::test]
async fn refused_everywhere_fails_at_once_naming_the_addresses() {
    within(LIMIT, async {
        // A port nobody listens on, and a session timeout of ten minutes that the old
        // retry-until-timeout behaviour would have waited out.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port")
            .port();
        let out = within(
            LIMIT,
            Command::new(CLI)
                .args([
                    "-server",
                    &format!("127.0.0.1:{port}"),
                    "--timeout",
                    "600000",
                ])
                .args(["ls", "/"])
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .expect("paddock-cli");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("127.0.0.1:{port} (")), "{stderr}");
        assert!(stderr.contains("refused"), "{stderr}");
    })
    .await;
}

/// setquota, three creates, listquota; a hard limit refused (the servers run with
/// enforceQuota=true). The same expectations hold for ZooKeeper 3.8 (the `it` binary)
/// and Paddock (the `paddock` binary).
#[tokio::test]
async fn quotas_count_and_hard_limits_refuse_as_in_zookeeper() {
    within(LIMIT, async {
        let soft = unique("cli-quota-soft");
        let hard = unique("cli-quota-hard");
        let script = format!(
            "create {soft}\n\
             setquota -n 2 {soft}\n\
             create {soft}/a\n\
             create {soft}/b\n\
             create {soft}/c\n\
             listquota {soft}\n\
             setquota -n 2 {soft}/a\n\
             create {hard}\n\
             setquota -N 2 {hard}\n\
             create {hard}/a\n\
             create {hard}/b\n\
             listquota {hard}\n\
             delquota {soft}\n\
             listquota {soft}\n\
             delquota {hard}\n\
             deleteall {soft}\n\
             deleteall {hard}\n"
        );
        let (out, err, _) = shell(&script).await;
        // Soft limit: only exceeded; the stats count the node and its three children.
        assert!(out.contains(&format!("Created {soft}/c\n")), "{out}\n{err}");
        assert!(
            out.contains(&format!(
                "Output quota for {soft} count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1\n\
                 Output stat for {soft} count=4,bytes=0\n"
            )),
            "{out}\n{err}"
        );
        assert!(
            err.contains(&format!("{soft}/a has a parent {soft} which has a quota")),
            "{err}"
        );
        // Hard limit: the second node under it passes the limit of 2.
        assert!(out.contains(&format!("Created {hard}/a\n")), "{out}");
        assert!(!out.contains(&format!("Created {hard}/b\n")), "{out}");
        assert!(
            err.contains(&format!("Quota has exceeded : {hard}/b")),
            "{err}"
        );
        assert!(
            out.contains(&format!("Output stat for {hard} count=2,bytes=0\n")),
            "{out}\n{err}"
        );
        assert!(
            err.contains(&format!("quota for {soft} does not exist.")),
            "{err}"
        );
    })
    .await;
}

/// `--tls-ca`, `--tls-cert`: the shell over TLS to a secure client port (the same
/// zoo.cfg lines on ZooKeeper and Paddock); an `auth` ACL becomes the certificate's
/// x509 id, printed as zkCli prints it; without a certificate the server refuses it.
#[tokio::test]
async fn tls_flags_connect_to_a_secure_client_port() {
    let certs = crate::certs::TestCerts::new();
    let port = crate::support::free_port();
    let _server = crate::support::ZkServer::start_with(&certs.secure_port_lines(port));
    let addr = format!("127.0.0.1:{port}");
    let ca = certs.path("ca.pem").display().to_string();
    let client = certs.path("client.pem").display().to_string();
    let run = |args: Vec<String>| {
        let addr = addr.clone();
        async move {
            within(
                LIMIT,
                Command::new(CLI)
                    .arg("-server")
                    .arg(addr)
                    .args(args)
                    .stdin(Stdio::null())
                    .output(),
            )
            .await
            .expect("run paddock-cli")
        }
    };
    let tls = |command: &str| {
        ["--tls-ca", &ca, "--tls-cert", &client, "-c", command]
            .map(str::to_owned)
            .to_vec()
    };
    let out = run(tls("create /cli-tls hello auth::cdrwa")).await;
    assert!(out.status.success(), "{out:?}");
    let out = run(tls("getAcl /cli-tls")).await;
    assert_eq!(stdout(&out), "'x509,'CN=client%2CO=Paddock\n: cdrwa\n");
    let anonymous = ["--tls-ca", &ca, "-c", "get /cli-tls"]
        .map(str::to_owned)
        .to_vec();
    let out = run(anonymous).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot connect"),
        "{out:?}"
    );
}
