//! Admin commands for the operator: `polylock status NAME`, `polylock unlock --force NAME`,
//! `polylock list`. They read the backend's own layout (so holders that are Redisson, etcdctl,
//! Curator or ShedLock are seen too) and never take a lock themselves. Exit statuses are
//! those of `run` (exit.rs); `unlock` declined at its prompt exits 1.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use clap::Args;
use polylock::kit::inspect_json::{list_json, status_json};
use polylock::{Client, LockEntry, LockKind, LockStatus};

use crate::exit;

/// The operator answered no at `unlock`'s confirmation prompt.
const DECLINED: u8 = 1;

#[derive(Args)]
pub struct StatusArgs {
    /// Name of the lock
    name: String,
    /// Kind of lock: reentrant (default), fair, token or lease, as the backend offers
    #[arg(long, value_parser = kind_arg)]
    kind: Option<LockKind>,
    /// Print one JSON object (name, held, holder, fencing_token, remaining_lease_ms, waiters, ...)
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct UnlockArgs {
    /// Required: break the hold whoever has it (Redisson's forceUnlock). DANGEROUS: the holder
    /// keeps running until its next renewal tells it that it lost the lock, so two may work at once
    #[arg(long, required = true)]
    force: bool,
    /// Name of the lock
    name: String,
    /// Kind of lock: reentrant (default), fair, token or lease, as the backend offers
    #[arg(long, value_parser = kind_arg)]
    kind: Option<LockKind>,
    /// Do not ask for confirmation (required when stdin is not a terminal)
    #[arg(long)]
    yes: bool,
}

#[derive(Args)]
pub struct ListArgs {
    /// Only locks whose name starts with this
    #[arg(long, value_name = "P", default_value = "")]
    prefix: String,
    /// Print a JSON array of objects (name, kind, held)
    #[arg(long)]
    json: bool,
}

fn kind_arg(text: &str) -> Result<LockKind, String> {
    text.parse().map_err(|e: polylock::Error| e.to_string())
}

async fn connected(url: &str) -> Result<Client, u8> {
    Client::connect(url).await.map_err(|err| exit::fail(&err))
}

pub async fn status(url: &str, args: StatusArgs) -> u8 {
    let client = match connected(url).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let inspector = client.inspect();
    let answer = match inspector.kind_or_default(args.kind) {
        Ok(kind) => inspector.status(&args.name, Some(kind)).await.map(|status| (kind, status)),
        Err(err) => Err(err),
    };
    let code = match answer {
        Ok((kind, status)) if args.json => {
            println!("{}", status_json(&args.name, kind, client.capabilities().backend, &status));
            0
        }
        Ok((kind, status)) => {
            print!("{}", status_text(&args.name, kind, client.url(), &status));
            0
        }
        Err(err) => exit::fail(&err),
    };
    client.close().await;
    code
}

pub async fn unlock(url: &str, args: UnlockArgs) -> u8 {
    debug_assert!(args.force, "clap requires --force");
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "polylock: refusing to force-unlock '{}' without --yes: stdin is not a terminal to confirm on",
                args.name
            );
            return exit::USAGE;
        }
        eprint!(
            "Force-unlock '{}'? Its holder is NOT stopped: it runs on until its next renewal tells it \
             the lock is lost, so two holders may work at once. Type 'yes' to go on: ",
            args.name
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() || answer.trim() != "yes" {
            eprintln!("polylock: not unlocked");
            return DECLINED;
        }
    }
    let client = match connected(url).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let code = match client.inspect().force_unlock(&args.name, args.kind).await {
        Ok(true) => {
            println!("unlocked '{}': its hold was removed and its waiters woken", args.name);
            0
        }
        Ok(false) => {
            println!("'{}' was not held: nothing to unlock", args.name);
            0
        }
        Err(err) => exit::fail(&err),
    };
    client.close().await;
    code
}

pub async fn list(url: &str, args: ListArgs) -> u8 {
    let client = match connected(url).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let code = match client.inspect().list(&args.prefix).await {
        Ok(entries) if args.json => {
            println!("{}", list_json(&entries));
            0
        }
        Ok(entries) => {
            print!("{}", list_text(&entries));
            0
        }
        Err(err) => exit::fail(&err),
    };
    client.close().await;
    code
}

fn status_text(name: &str, kind: LockKind, url: &str, status: &LockStatus) -> String {
    let mut lines = vec![format!("lock '{name}' ({kind}) on {url}")];
    let mut row = |label: &str, value: String| lines.push(format!("  {label:<20}{value}"));
    row("held:", if status.held { "yes".into() } else { "no".into() });
    row("holder:", status.holder.clone().unwrap_or_else(|| "-".into()));
    row("fencing token:", status.fencing_token.map_or_else(|| "-".into(), |t| t.to_string()));
    if let Some(last) = status.token_counter {
        row("token counter:", last.to_string());
    }
    row("remaining lease:", lease_text(status.held, status.remaining_lease));
    row("waiters:", status.waiters.map_or_else(|| "unknown".into(), |w| w.to_string()));
    row("layout:", status.layout.to_string());
    for (label, value) in &status.details {
        row(&format!("{label}:"), value.clone());
    }
    lines.join("\n") + "\n"
}

fn lease_text(held: bool, remaining: Option<Duration>) -> String {
    match remaining {
        Some(Duration::MAX) => "none: kept while the holder's session lives".into(),
        Some(left) => format!("{:.3}s", left.as_secs_f64()),
        None if held => "unknown".into(),
        None => "-".into(),
    }
}

fn list_text(entries: &[LockEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        out.push_str(&format!("{}\t{}\t{}\n", entry.name, entry.kind, if entry.held { "held" } else { "free" }));
    }
    out
}
