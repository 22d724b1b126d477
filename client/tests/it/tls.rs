//! `ConnectOptions::tls`: the client over TLS to a secure client port, presenting a
//! certificate whose subject an `x509` ACL names; refused without one
//! (`ssl.clientAuth=need`).

use std::path::PathBuf;
use std::time::Duration;

use paddock_client::{
    perms, Acl, Client, ConnectOptions, CreateMode, CreateOptions, Id, TlsOptions,
};

use crate::certs::TestCerts;
use crate::support::{free_port, options, ZkServer};

async fn connect(addr: &str, tls: TlsOptions) -> Result<Client, paddock_client::Error> {
    let options = ConnectOptions {
        tls: Some(tls),
        connect_timeout: Some(Duration::from_secs(5)),
        ..options(10_000)
    };
    Client::connect(addr, options).await
}

#[tokio::test]
async fn connects_over_tls_and_its_certificate_is_an_x509_identity() {
    let certs = TestCerts::new();
    let port = free_port();
    let _server = ZkServer::start_with(&certs.secure_port_lines(port));
    let addr = format!("127.0.0.1:{port}");
    let identity = |name: &str| Some((certs.path(name), certs.path(name)));
    let ca = certs.path("ca.pem");
    let client = connect(
        &addr,
        TlsOptions::from_pem(&ca, identity("client.pem")).unwrap(),
    )
    .await
    .expect("a client with a trusted certificate connects");
    let subject = Id::new("x509", "CN=client,O=Paddock");
    let acl = vec![Acl {
        perms: perms::ALL,
        id: subject.clone(),
    }];
    let path = format!("/tls-{port}");
    client
        .create(
            &path,
            b"secret",
            CreateOptions::new(CreateMode::Persistent).acl(acl),
        )
        .await
        .expect("create");
    assert_eq!(
        client.get_data(&path).await.expect("get").0.as_ref(),
        b"secret"
    );
    let (stored, _) = client.get_acl(&path).await.expect("getACL");
    assert_eq!(stored[0].id, subject);

    let other = connect(
        &addr,
        TlsOptions::from_pem(&ca, identity("other.pem")).unwrap(),
    )
    .await
    .expect("another trusted certificate connects");
    assert!(matches!(
        other.get_data(&path).await,
        Err(paddock_client::Error::Keeper(
            paddock_client::ErrorCode::NoAuth
        ))
    ));
    let anonymous = TlsOptions::from_pem(&ca, None::<(PathBuf, PathBuf)>).unwrap();
    assert!(
        connect(&addr, anonymous).await.is_err(),
        "a client without a certificate was served"
    );
}
