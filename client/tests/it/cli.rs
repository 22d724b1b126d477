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
