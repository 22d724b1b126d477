//! The HTTP listener for operators, ZooKeeper's AdminServer in Paddock (`admin.*`):
//! - `GET /commands/<name>`: ZooKeeper's admin commands as JSON (`commands`); the
//!   prefix is `admin.commandURL`, and `GET /commands` lists them.
//! - `GET /metrics`: Prometheus text (`exporter`); also on `metricsProvider.httpPort`
//!   when ZooKeeper's Prometheus provider is configured.
//! - `GET /health/live`: 200 while the process runs and its runtime answers.
//! - `GET /health/ready`: 200 while this server takes clients — it has replayed its own
//!   log, is in touch with a quorum and, rejoining, has caught up with the leader
//!   (`liveness`) — 503 otherwise; the body says which.

mod commands;
mod exporter;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{AdminServer, HttpListen};
use crate::report;
use crate::server::Server;

use self::exporter::Exporter;

/// The admin listeners, bound before the server starts so that a port in use is
/// reported at once.
pub struct Listeners {
    admin: Option<TcpListener>,
    metrics: Option<TcpListener>,
    command_url: String,
    idle_timeout: Duration,
}

impl Listeners {
    /// Binds what the config asks for. A configured port that cannot be bound is an
    /// error; ZooKeeper's default port 8080 taken (by another server on this host) is
    /// a warning, and the server runs without its admin listener.
    pub async fn bind(config: &AdminServer) -> anyhow::Result<Listeners> {
        Ok(Listeners {
            admin: bind(config.listen, "admin.serverPort").await?,
            metrics: bind(config.metrics_listen, "metricsProvider.httpPort").await?,
            command_url: config.command_url.clone(),
            idle_timeout: config.idle_timeout,
        })
    }

    /// Serves until shutdown: one task per listener.
    pub fn serve(self, server: Arc<Server>) -> Vec<tokio::task::JoinHandle<()>> {
        let exporter = Arc::new(Exporter::new(server.clone()));
        let state = AdminState {
            server: server.clone(),
            exporter,
        };
        let mut tasks = Vec::new();
        if let Some(listener) = self.admin {
            let router = admin_router(&self.command_url, state.clone());
            tasks.push(spawn(listener, router, self.idle_timeout, &server));
        }
        if let Some(listener) = self.metrics {
            let router = Router::new()
                .route("/metrics", get(metrics))
                .with_state(state);
            tasks.push(spawn(listener, router, self.idle_timeout, &server));
        }
        tasks
    }
}

async fn bind(listen: Option<HttpListen>, key: &str) -> anyhow::Result<Option<TcpListener>> {
    let Some(listen) = listen else {
        return Ok(None);
    };
    match TcpListener::bind(listen.addr).await {
        Ok(listener) => {
            tracing::info!("admin HTTP on {} ({key})", listen.addr);
            Ok(Some(listener))
        }
        Err(e) if listen.required => Err(anyhow::anyhow!(
            "cannot listen on {} ({key}): {e}",
            listen.addr
        )),
        Err(e) => {
            tracing::warn!(
                "no admin HTTP listener: cannot listen on {} (the default {key}): {e}; \
                 set admin.serverPort to a free port, or admin.enableServer=false",
                listen.addr
            );
            Ok(None)
        }
    }
}

fn spawn(
    listener: TcpListener,
    router: Router,
    idle_timeout: Duration,
    server: &Arc<Server>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(serve(
        listener,
        router,
        idle_timeout,
        server.shutdown.clone(),
    ))
}

/// Accepts until shutdown; one task per connection. A connection that sends no
/// complete request header for `idle_timeout` (idle between requests, or trickling
/// one in) is closed, as ZooKeeper's Jetty closes idle connections.
async fn serve(
    listener: TcpListener,
    router: Router,
    idle_timeout: Duration,
    shutdown: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Typically EMFILE: back off briefly rather than spin.
                    tracing::warn!("admin HTTP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return,
        };
        let service = TowerToHyperService::new(router.clone());
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(idle_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = shutdown.cancelled() => {
                    // Finish the request in flight, if any, within the idle bound.
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(idle_timeout, connection).await;
                }
            }
        });
    }
}

#[derive(Clone)]
struct AdminState {
    server: Arc<Server>,
    exporter: Arc<Exporter>,
}

fn admin_router(command_url: &str, state: AdminState) -> Router {
    let index_url = if command_url == "/" { "" } else { command_url };
    let mut router = Router::new()
        .route(&format!("{index_url}/{{name}}"), get(command))
        .route("/metrics", get(metrics))
        .route("/health/live", get(live))
        .route("/health/ready", get(ready));
    if !index_url.is_empty() {
        let prefix = index_url.to_owned();
        router = router.route(index_url, get(move || command_index(prefix)));
    }
    router.with_state(state)
}

async fn command(State(state): State<AdminState>, Path(name): Path<String>) -> Response {
    // Directory sizes and the tree's read lock: off the async workers.
    let server = state.server.clone();
    match tokio::task::spawn_blocking(move || commands::run(&name, &server)).await {
        Ok(answer) => Json(answer).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Links to every command, as ZooKeeper's AdminServer lists them.
async fn command_index(prefix: String) -> impl IntoResponse {
    let links: String = commands::primary_names()
        .into_iter()
        .map(|name| format!("<a href=\"{prefix}/{name}\">{name}</a>\n<br/>\n"))
        .collect();
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], links)
}

async fn metrics(State(state): State<AdminState>) -> Response {
    let exporter = state.exporter.clone();
    match tokio::task::spawn_blocking(move || exporter.scrape()).await {
        Ok(text) => ([(header::CONTENT_TYPE, exporter::CONTENT_TYPE)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn live() -> impl IntoResponse {
    Json(json!({ "live": true }))
}

async fn ready(State(state): State<AdminState>) -> impl IntoResponse {
    let server = &state.server;
    let replayed = server.health.replayed();
    let serving = server.health.is_serving();
    let ready = server.health.ready_for_clients();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "ready": ready,
        "replayed_log": replayed,
        "in_quorum": serving,
        "server_state": report::mode(server),
    });
    (status, Json(body))
}
