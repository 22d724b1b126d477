//! Leader election: one leader at a time, the next takes over once the leader's session
//! ends (closed or expired), and fencing tokens grow with every new leader.

use std::time::Duration;

use paddock_client::recipes::Election;
use paddock_client::{Error, ErrorCode, SessionState};
use tokio::sync::mpsc;

use crate::support::{connect, connect_with, options, unique, wait_for_state, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_the_next_takes_over() {
    within(Duration::from_secs(60), async {
        let path = unique("election");
        let observer = Election::new(&connect().await, &path, "observer");
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(connect_with(options(2_000)).await);
        }
        let (elected, mut leaders) = mpsc::unbounded_channel();
        let (lost_tx, mut lost) = mpsc::unbounded_channel();
        for (id, client) in clients.iter().enumerate() {
            let election = Election::new(client, &path, &format!("candidate-{id}"));
            let (elected, lost_tx) = (elected.clone(), lost_tx.clone());
            tokio::spawn(async move {
                let leadership = election.campaign().await.unwrap();
                elected.send((id, leadership.fencing_token())).unwrap();
                let reason = leadership.lost().await;
                lost_tx.send((id, reason)).unwrap();
            });
        }

        let mut last_token = i64::MIN;
        for round in 0..3 {
            let (leader, token) = within(Duration::from_secs(20), leaders.recv())
                .await
                .unwrap();
            assert!(token > last_token, "fencing token went back");
            last_token = token;
            assert_eq!(
                observer.leader().await.unwrap().as_deref(),
                Some(format!("candidate-{leader}").as_str())
            );
            // The other candidates may still be creating their nodes when the first
            // leads: wait (bounded) for all of them to be queued.
            let mut contenders = observer.contenders().await.unwrap().len();
            for _ in 0..100 {
                if contenders == 3 - round {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                contenders = observer.contenders().await.unwrap().len();
            }
            assert_eq!(contenders, 3 - round);
            // Nobody else is elected while the leader's session lives.
            let second = tokio::time::timeout(Duration::from_millis(500), leaders.recv()).await;
            assert!(second.is_err(), "two leaders at once");

            let client = &clients[leader];
            if round == 0 {
                // A leader that closes its session hands over at once. Closing deletes
                // the leader's node before the session ends, so either may be reported.
                client.close().await.unwrap();
                let (who, reason) = within(Duration::from_secs(10), lost.recv()).await.unwrap();
                assert_eq!(who, leader);
                assert!(
                    matches!(reason, Error::Closed | Error::Keeper(ErrorCode::NoNode)),
                    "{reason}"
                );
            } else {
                // A leader cut off from the ensemble is replaced once its session expires;
                // it learns that it lost leadership.
                client.debug_drop_connection(Duration::from_secs(3600));
                let (who, reason) = within(Duration::from_secs(20), lost.recv()).await.unwrap();
                assert_eq!(who, leader);
                assert!(matches!(reason, Error::SessionExpired), "{reason}");
                wait_for_state(client, SessionState::Expired, Duration::from_secs(10)).await;
            }
        }
        // The server deletes the last leader's node when it expires the session, which
        // may be a tick after the leader itself gave up: safe, if not simultaneous.
        let mut leader = observer.leader().await.unwrap();
        for _ in 0..100 {
            if leader.is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            leader = observer.leader().await.unwrap();
        }
        assert_eq!(leader, None);
    })
    .await;
}
