//! `polylock serve-metrics` and `--metrics-listen`: the core's counters in Prometheus' text
//! format on `GET /metrics`, from a small HTTP/1.1 responder (one request per connection).
//!
//! `serve-metrics` serves this process's counts; with `--probe NAME` it also takes and
//! gives back the lock NAME every `--every`, so the scrape shows the backend's grant latency
//! and errors as a client sees them. `--metrics-listen ADDR` (a global flag) serves the same
//! page while any other command runs, such as a long `polylock run` or `polylock elect`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use polylock::duration::parse_duration;
use polylock::{AcquireOptions, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::exit;

/// Where `serve-metrics` listens unless told: loopback, on Prometheus' port for polylock.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

#[derive(Args)]
pub struct ServeMetricsArgs {
    /// Address to listen on (port 0: any free port, printed on stderr)
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Take and give back the lock NAME every --every, so the counters show the backend's health
    #[arg(long, value_name = "NAME")]
    probe: Option<String>,
    /// How often to probe
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = every_arg, requires = "probe")]
    every: Duration,
}

fn every_arg(text: &str) -> Result<Duration, String> {
    parse_duration("--every", text).map_err(|e| e.to_string())
}

/// `polylock serve-metrics`: serve until interrupted (SIGINT/SIGTERM end it with status 0).
pub async fn serve_metrics(url: &str, args: ServeMetricsArgs) -> u8 {
    let listener = match bind(args.listen).await {
        Ok(listener) => listener,
        Err(code) => return code,
    };
    let client = match &args.probe {
        Some(_) => match Client::connect(url).await {
            Ok(client) => Some(client),
            Err(err) => return exit::fail(&err),
        },
        None => None,
    };
    let probing = async {
        let (Some(client), Some(name)) = (&client, &args.probe) else { return std::future::pending().await };
        probe(client, name, args.every).await
    };
    let code = tokio::select! {
        code = probing => code,
        _ = serve(listener) => exit::SOFTWARE,
        _ = interrupted() => 0,
    };
    if let Some(client) = client {
        client.close().await;
    }
    code
}

/// Bind `addr` and say where on stderr (the port matters when 0 was asked).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, u8> {
    match TcpListener::bind(addr).await {
        Ok(listener) => {
            let shown = listener.local_addr().map_or_else(|_| addr.to_string(), |a| a.to_string());
            eprintln!("polylock: serving metrics on http://{shown}/metrics");
            Ok(listener)
        }
        Err(err) => {
            eprintln!("polylock: cannot listen on {addr}: {err}");
            Err(exit::UNAVAILABLE)
        }
    }
}

/// The most connections answered at once; one past it is closed at once, unanswered, so
/// clients that connect and send nothing cannot pile up tasks and descriptors.
pub const MAX_CONNECTIONS: usize = 64;

/// Answer requests until the listener fails; each connection in a task of its own, at most
/// [`MAX_CONNECTIONS`] at once.
pub async fn serve(listener: TcpListener) {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    drop(stream);
                    continue;
                };
                tokio::spawn(async move {
                    answer(stream).await;
                    drop(slot);
                });
            }
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The longest request head read, and how long a client may take to send it.
const MAX_HEAD: usize = 8 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

async fn answer(mut stream: TcpStream) {
    let Ok(Some(head)) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await else { return };
    let response = respond(&head);
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The request line and headers, up to the blank line; `None` if the peer left first.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        if head.len() > MAX_HEAD {
            break;
        }
        let n = stream.read(&mut buffer).await.ok()?;
        if n == 0 {
            if head.is_empty() {
                return None;
            }
            break;
        }
        head.extend_from_slice(&buffer[..n]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The whole HTTP response to a request head.
fn respond(head: &str) -> String {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", polylock::metrics::prometheus_text())
        }
        ("GET" | "HEAD", "/") => ("200 OK", "text/plain; charset=utf-8", "polylock metrics: GET /metrics\n".into()),
        ("GET" | "HEAD", _) => ("404 Not Found", "text/plain; charset=utf-8", "not found; try /metrics\n".into()),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET\n".into()),
    };
    let shown = if method == "HEAD" { "" } else { body.as_str() };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{shown}",
        body.len()
    )
}

/// Take and give back `name` every `every`; a failed probe is counted by the core and logged,
/// and probing goes on. Never returns.
async fn probe(client: &Client, name: &str, every: Duration) -> u8 {
    let lock = match client.lock(name) {
        Ok(lock) => lock,
        Err(err) => return exit::fail(&err),
    };
    let options =
        AcquireOptions::default().wait(every.min(Duration::from_secs(5))).lease(every.max(Duration::from_secs(1)));
    loop {
        if let Ok(guard) = lock.acquire_with(options).await {
            let _ = guard.release().await;
        }
        tokio::time::sleep(every).await;
    }
}

async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::respond;

    #[test]
    fn routes() {
        assert!(respond("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(respond("GET /metrics?x=1 HTTP/1.1\r\n\r\n").contains("version=0.0.4"));
        assert!(respond("GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(respond("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(respond("").starts_with("HTTP/1.1 405"));
    }
}
